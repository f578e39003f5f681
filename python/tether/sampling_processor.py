"""llama.cpp's sampler chain as a transformers logits processor (see tether.sampling).

Kept apart from :mod:`tether.sampling` because it subclasses transformers'
``LogitsProcessor``, which imports torch: ``import tether`` does not need either.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._native_call import native
from .sampling import _call, _NativeSampler

try:  # transformers is optional: without it the processor still works as a callable
    from transformers import LogitsProcessor as _LogitsProcessorBase
except Exception:  # pragma: no cover - ImportError, or transformers without torch
    _LogitsProcessorBase = object  # type: ignore[assignment,misc]


class SamplingLogitsProcessor(_NativeSampler, _LogitsProcessorBase):
    """llama.cpp's sampler chain as the last processor of ``model.generate``.

    Each row's chain picks a token; the returned scores are ``-inf`` everywhere but at
    that token, so ``generate`` takes it with greedy search or sampling alike (its own
    warpers keep a single finite score). The prompt counts for penalties and DRY, as in
    llama.cpp. Rows are followed by content, so batches, ``num_return_sequences``
    (rows after the first use seed + row) and reordered beams work; a new ``generate``
    call starts over.

    Parameters are those of :class:`SamplerChain` (llama.cpp's names and defaults).
    With ``grammar=`` a tether grammar processor, sampling is grammar-aware (sample,
    check, resample only on refusal); then the grammar processor need not be in the
    list at all.

    Example (runs with a model and tokenizer at hand)::

        proc = tether.SamplingLogitsProcessor("penalties;dry;top_k;top_p;min_p;temperature",
                                              seed=1, temp=0.7, dry_multiplier=0.8, tokenizer=tok)
        out = model.generate(**inputs, logits_processor=[proc], do_sample=False)
    """

    def reset(self) -> None:
        """Forget all rows; the next call starts a new generation."""
        _call(native.bindings_SamplerReset, self._handle)

    def _step(self, input_ids: Any, scores: Any, want_scores: bool) -> tuple[np.ndarray, Any]:
        import torch

        batch, seq_len = input_ids.shape
        ids = input_ids.detach().to(device="cpu", dtype=torch.int64).contiguous()
        sc = scores.detach().to(device="cpu", dtype=torch.float32).contiguous()
        out = np.empty(batch, dtype=np.int64)
        # Go writes the result row too: torch work right after a Go call can stall on
        # Go's spinning threads (measured ~10 ms for a 128k fill on 2 cores).
        res = torch.empty_like(sc) if want_scores else None
        with self._lock:
            _call(
                native.bindings_SamplerStepSample, self._handle, ids.data_ptr(), batch, seq_len,
                sc.data_ptr(), sc.shape[-1], out.ctypes.data, res.data_ptr() if res is not None else 0,
            )
        return out, res

    def pick(self, input_ids: Any, scores: Any) -> np.ndarray:
        """The token each row's chain picks (int64 array of length batch); the chains'
        state advances as in __call__."""
        return self._step(input_ids, scores, False)[0]

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        _, res = self._step(input_ids, scores, True)
        if res.device != scores.device or res.dtype != scores.dtype:
            res = res.to(device=scores.device, dtype=scores.dtype)
        return res



__all__ = ["SamplingLogitsProcessor"]
