"""Token bitmasks for your own decoding loop (xgrammar's layout), one or many grammars.

A bitmask is an int32 array ``[batch, ceil(vocab_size / 32)]``: bit ``i % 32`` (least
significant bit first) of word ``i // 32`` of a row is set when token ``i`` is allowed.
This is the layout xgrammar and llguidance use, so their apply kernels (and vLLM's)
work on tether's masks unchanged. The array is a torch tensor or a numpy array, on the
CPU and C-contiguous (copy it to the GPU yourself, or let :func:`apply_token_bitmask`
do it).

>>> import numpy as np
>>> mask = allocate_token_bitmask(2, 70, torch=False)
>>> mask.shape, mask.dtype
((2, 3), dtype('int32'))
>>> unpack_token_bitmask(np.array([[5, 0, 0]], dtype=np.int32), 70)[0, :4].tolist()
[True, False, True, False]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ._errors import TetherError
from ._native_call import call, native

if TYPE_CHECKING:  # pragma: no cover
    from .grammar import Matcher


def bitmask_words(vocab_size: int) -> int:
    """The number of int32 words a row needs for vocab_size tokens: ceil(vocab_size/32)."""
    return (int(vocab_size) + 31) // 32


def allocate_token_bitmask(batch: int, vocab_size: int, *, torch: bool | None = None) -> Any:
    """A zeroed int32 bitmask ``[batch, ceil(vocab_size/32)]``: a torch tensor when torch
    is importable (or ``torch=True``), else a numpy array (``torch=False`` forces numpy)."""
    if batch <= 0 or vocab_size <= 0:
        raise ValueError(f"allocate_token_bitmask: batch and vocab_size must be >= 1, not {batch}, {vocab_size}")
    shape = (int(batch), bitmask_words(vocab_size))
    if torch is not False:
        try:
            import torch as _torch
        except ImportError:
            if torch:
                raise
        else:
            return _torch.zeros(shape, dtype=_torch.int32)
    return np.zeros(shape, dtype=np.int32)


def _buffer(bitmask: Any) -> tuple[int, int, int]:
    """(address, rows, words) of a CPU, C-contiguous int32/uint32 bitmask (2-D, or 1-D as
    one row); TypeError or ValueError saying what is wrong otherwise."""
    if isinstance(bitmask, np.ndarray):
        if bitmask.dtype not in (np.int32, np.uint32):
            raise TypeError(f"bitmask must be int32 (or uint32), not {bitmask.dtype}")
        if not bitmask.flags.c_contiguous:
            raise ValueError("bitmask must be C-contiguous (np.ascontiguousarray)")
        if not bitmask.flags.writeable:
            raise ValueError("bitmask is read-only")
        addr, shape = bitmask.ctypes.data, bitmask.shape
    elif type(bitmask).__module__.startswith("torch") and hasattr(bitmask, "data_ptr"):
        import torch

        if bitmask.dtype not in (torch.int32, getattr(torch, "uint32", torch.int32)):
            raise TypeError(f"bitmask must be torch.int32, not {bitmask.dtype}")
        if bitmask.device.type != "cpu":
            raise ValueError(
                f"bitmask is on {bitmask.device}: fill a CPU bitmask (pinned, for a fast copy) and "
                "move it to the device afterwards"
            )
        if not bitmask.is_contiguous():
            raise ValueError("bitmask must be contiguous (.contiguous())")
        addr, shape = bitmask.data_ptr(), tuple(bitmask.shape)
    else:
        raise TypeError(f"bitmask must be a torch tensor or numpy array of int32, not {type(bitmask).__name__}")
    if len(shape) == 1:
        shape = (1, shape[0])
    if len(shape) != 2 or shape[0] == 0 or shape[1] == 0:
        raise ValueError(f"bitmask must have shape [batch, ceil(vocab_size/32)], not {tuple(shape)}")
    return addr, int(shape[0]), int(shape[1])


class _Bound(tuple):
    """A checked bitmask buffer, kept by a Matcher so that repeated fills into the same
    array skip the checks: (array, address, rows, words, shape, is_torch)."""

    __slots__ = ()


def _bind(bitmask: Any) -> _Bound:
    """Check a bitmask (see :func:`_buffer`) and remember what :func:`_still_bound` needs."""
    addr, rows, words = _buffer(bitmask)
    is_torch = not isinstance(bitmask, np.ndarray)
    return _Bound((bitmask, addr, rows, words, bitmask.shape, is_torch))


def _still_bound(b: _Bound | None, bitmask: Any) -> bool:
    """Whether bitmask is the array b was made from, at the same address and shape.

    The matcher holds a reference to the array, so numpy cannot resize it in place
    (``resize`` checks references); a changed shape or dtype (``a.shape = ...``,
    ``a.dtype = ...``) changes its shape, and a torch tensor given new storage
    (``set_``, ``resize_``) changes its data pointer or shape: each of those rechecks it."""
    return (
        b is not None and b[0] is bitmask and bitmask.shape == b[4]
        and (not b[5] or bitmask.data_ptr() == b[1])
    )


def fill_next_token_bitmasks(
    matchers: Sequence[Matcher], bitmask: Any, indices: Sequence[int] | None = None
) -> None:
    """Fill one bitmask row per matcher in one call into the Go core: row ``indices[i]``
    (default ``i``) from ``matchers[i]``. The matchers may follow different grammars;
    rows are computed in parallel on Go threads with the GIL released.

    Every row is written; a row whose matcher hit a limit is cleared and
    :class:`tether.GrammarLimitError` names it (never a mask that is not exact).

    >>> fill_next_token_bitmasks([g1.matcher(), g2.matcher()], mask)  # doctest: +SKIP
    """
    from .grammar import Matcher, _token_id

    ms = list(matchers)
    if not ms:
        raise ValueError("fill_next_token_bitmasks: no matchers")
    for i, m in enumerate(ms):
        if not isinstance(m, Matcher):
            raise TypeError(f"matchers[{i}] is {type(m).__name__}, not a tether.Matcher")
    addr, rows, words = _buffer(bitmask)
    if indices is None:
        idx = np.arange(len(ms), dtype=np.int64)
    else:
        idx = np.array([_token_id(r, f"indices[{i}]") for i, r in enumerate(indices)], dtype=np.int64)
        if idx.size != len(ms):
            raise ValueError(f"{len(ms)} matchers but {idx.size} indices")
    if int(idx.max()) >= rows:
        raise ValueError(f"row index {int(idx.max())} outside a bitmask of {rows} rows")
    handles = np.array([m._handle for m in ms], dtype=np.int64)
    call(
        native.bindings_MatchersFillBitmasks, handles.ctypes.data, idx.ctypes.data, len(ms),
        addr, rows, words, error=TetherError,
    )


def unpack_token_bitmask(bitmask: Any, vocab_size: int) -> Any:
    """The bitmask as booleans ``[batch, vocab_size]`` (True: allowed), numpy in, numpy
    out; torch in, torch out (on the bitmask's device)."""
    if isinstance(bitmask, np.ndarray):
        b = np.atleast_2d(bitmask).astype("<u4", copy=False)
        bits = np.unpackbits(b.view(np.uint8), axis=-1, bitorder="little")
        return bits[:, :vocab_size].astype(bool)
    import torch

    words = bitmask if bitmask.dim() == 2 else bitmask.unsqueeze(0)
    shifts = torch.arange(32, dtype=torch.int32, device=words.device)
    bits = (words.unsqueeze(-1) >> shifts) & 1
    return bits.reshape(words.shape[0], -1)[:, :vocab_size].bool()


def apply_token_bitmask(logits: Any, bitmask: Any) -> Any:
    """Set ``logits[r, i] = -inf`` in place wherever bit i of row r is clear (torch).
    The bitmask is moved to the logits' device; columns past it stay as they are only if
    the bitmask covers them (a narrower bitmask masks the rest). Returns logits.

    >>> import torch
    >>> logits = torch.zeros(1, 4); apply_token_bitmask(logits, torch.tensor([[0b0101]], dtype=torch.int32)).tolist()
    [[0.0, -inf, 0.0, -inf]]
    """
    import torch

    mask = bitmask if isinstance(bitmask, torch.Tensor) else torch.from_numpy(np.asarray(bitmask))
    words = mask.to(logits.device, non_blocking=True)
    if words.dim() == 1:
        words = words.unsqueeze(0)
    logits.masked_fill_(_refused(words, logits.shape[-1]).view(logits.shape), float("-inf"))
    return logits


_BIT_VALUES: dict[Any, Any] = {}  # device -> int32 [32]: 1 << i (bit 31 is the sign bit)


def _refused(words: Any, width: int) -> Any:
    """``[rows, width]`` bools from bitmask words ``[rows, n]`` on any device: True where
    the token's bit is clear (the grammar refuses it), and past the last word. Two kernels
    (and, compare) when the words cover the width: a decoding step on a GPU pays per
    kernel launched."""
    import torch

    bits = _BIT_VALUES.get(words.device)
    if bits is None:
        bits = torch.bitwise_left_shift(torch.ones(32, dtype=torch.int32), torch.arange(32, dtype=torch.int32))
        bits = _BIT_VALUES.setdefault(words.device, bits.to(words.device))
    refused = ((words.unsqueeze(-1) & bits) == 0).reshape(words.shape[0], -1)
    if refused.shape[1] >= width:
        return refused[:, :width]
    rest = torch.ones((refused.shape[0], width - refused.shape[1]), dtype=torch.bool, device=words.device)
    return torch.cat([refused, rest], dim=1)


__all__ = [
    "allocate_token_bitmask",
    "apply_token_bitmask",
    "bitmask_words",
    "fill_next_token_bitmasks",
    "unpack_token_bitmask",
]
