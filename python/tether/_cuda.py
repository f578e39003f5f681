"""One-launch application of a grammar bitmask to scores on a CUDA device.

The processor's device path fills the bitmask in pinned host memory (Go) and then needs
the refused scores set to -inf on the device. Without this module that is a copy of
the bitmask to the device and three or four torch kernels (unpack the bits, compare,
masked_fill). With it, it is one kernel (``cuda/apply_bitmask.cu``, compiled to the
committed ``cuda/apply_bitmask.fatbin``) that reads the pinned bitmask directly through
its device mapping, launched on torch's current stream.

The CUDA driver (``libcuda.so.1``) is loaded only when scores are on a CUDA device, so
``import tether`` and CPU use never need it. The processor binds the kernel to each
stream's pinned buffer once (:func:`bind`: the buffer's device address, the kernel in
the device's context, the argument block) and launches it each step
(:meth:`Launch.run`); :func:`apply` does both, for one-off callers. Anything that keeps
the kernel from running (no driver symbol, a module that does not load, memory that is
not mapped) makes :func:`bind` return None and :func:`apply` False, and the caller takes
the torch path; ``reason()`` says why.

Example (the kernel runs where a CUDA GPU is; on the CPU ``apply`` does nothing and
returns False, and the caller masks another way):

>>> import torch
>>> from tether import _cuda
>>> dev = "cuda" if torch.cuda.is_available() else "cpu"
>>> scores = torch.zeros(1, 64, device=dev)
>>> mask = torch.zeros(1, 2, dtype=torch.int32)
>>> mask[0, 0] = 0b101  # allow tokens 0 and 2
>>> if dev == "cuda":
...     mask = mask.pin_memory()
>>> ran = _cuda.apply(scores, mask, 64)
>>> ran == (dev == "cuda" and _cuda.reason() is None)
True
>>> if ran:
...     torch.cuda.synchronize()
...     assert torch.isinf(scores).sum().item() == 62
"""

from __future__ import annotations

import ctypes
import threading
from pathlib import Path
from typing import Any

_FATBIN = Path(__file__).with_name("cuda") / "apply_bitmask.fatbin"
_THREADS = 256
# cuda.h's values (tests_py/test_cuda_kernel.py checks them against the toolkit's header).
_CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2
_CU_POINTER_ATTRIBUTE_DEVICE_POINTER = 3
_CU_MEMORYTYPE_HOST = 1

_lock = threading.Lock()
_state: dict[str, Any] = {"lib": None, "failed": None}
_functions: dict[int, Any] = {}  # CUcontext -> CUfunction


def reason() -> str | None:
    """Why the one-kernel path is unavailable (None: it is, or it was never tried)."""
    return _state["failed"]


def _fail(msg: str) -> bool:
    _state["failed"] = msg
    return False


def _driver() -> Any:
    lib = _state["lib"]
    if lib is None:
        lib = ctypes.CDLL("libcuda.so.1")
        for name, args in {
            "cuCtxGetCurrent": [ctypes.POINTER(ctypes.c_void_p)],
            "cuModuleLoadData": [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p],
            "cuModuleGetFunction": [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, ctypes.c_char_p],
            "cuPointerGetAttribute": [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64],
            "cuLaunchKernel": [ctypes.c_void_p] + [ctypes.c_uint] * 7
            + [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p],
        }.items():
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = args, ctypes.c_int
        _state["lib"] = lib
    return lib


def _function(lib: Any) -> Any:
    """The kernel in the current context (torch made its device's primary context
    current on this thread), loading the module once per context."""
    ctx = ctypes.c_void_p()
    if lib.cuCtxGetCurrent(ctypes.byref(ctx)) != 0 or not ctx.value:
        return None
    fn = _functions.get(ctx.value)
    if fn is None:
        image = _FATBIN.read_bytes()
        buf = ctypes.create_string_buffer(image, len(image))
        mod, f = ctypes.c_void_p(), ctypes.c_void_p()
        if lib.cuModuleLoadData(ctypes.byref(mod), buf) != 0:
            return None
        if lib.cuModuleGetFunction(ctypes.byref(f), mod, b"apply_bitmask") != 0:
            return None
        fn = _functions[ctx.value] = f
    return fn


_NEG: dict[Any, tuple[int, int]] = {}  # torch dtype -> (element size, -inf's bits); filled by bind


class Launch:
    """The kernel bound to one pinned bitmask buffer on one device: the buffer's device
    address, the kernel in the device's context and the launch's argument block, all
    worked out once (:func:`bind`), so that each step only writes the scores' address
    and launches (a decoding step on a GPU pays for every driver call and Python object
    on its way). One caller at a time: the processor keeps one per stream."""

    __slots__ = ("mask", "rows", "words", "ctx", "fn", "args", "argv", "_cur")

    def __init__(self, mask: Any, ctx: int, fn: Any, dptr: int) -> None:
        self.mask = mask  # keeps the pinned memory alive while the address is in use
        self.rows, self.words = mask.shape
        self.ctx, self.fn = ctx, fn
        self.args = (
            ctypes.c_uint64(0),  # scores
            ctypes.c_int64(0),  # row stride
            ctypes.c_int32(0),  # width
            ctypes.c_uint64(dptr),  # mask
            ctypes.c_int32(self.words),
            ctypes.c_int32(0),  # element size
            ctypes.c_uint32(0),  # -inf's bits
        )
        self.argv = (ctypes.c_void_p * len(self.args))(*[ctypes.addressof(a) for a in self.args])
        self._cur = ctypes.c_void_p()

    def run(self, scores: Any, rows: int, width: int, stream: int) -> bool:
        """Set ``scores[r, c] = -inf`` for ``r < rows`` wherever bit ``c`` of the buffer's
        row ``r`` is clear, or ``c`` is past its words, in one launch on the CUDA stream
        handle ``stream``. False, having done nothing, when the launch cannot be made
        here (another dtype, layout or context than the binding's)."""
        kind = _NEG.get(scores.dtype)
        if (kind is None or rows > self.rows or scores.dim() != 2 or scores.shape[0] < rows
                or width > scores.shape[1] or scores.stride(1) != 1):
            return False
        lib = _state["lib"]
        if _state["failed"] is not None or lib.cuCtxGetCurrent(ctypes.byref(self._cur)) != 0 or self._cur.value != self.ctx:
            return False
        a = self.args
        a[0].value = scores.data_ptr()
        a[1].value = scores.stride(0)
        a[2].value = width
        a[5].value, a[6].value = kind
        grid = (width + _THREADS - 1) // _THREADS
        if lib.cuLaunchKernel(self.fn, grid, rows, 1, _THREADS, 1, 1, 0, stream, self.argv, None) != 0:
            return _fail("cuLaunchKernel failed")
        return True


def bind(mask: Any, device: Any) -> Launch | None:
    """A :class:`Launch` for the pinned host bitmask ``mask`` (int32 ``[rows, words]``)
    and the CUDA device ``device``, or None when the kernel cannot run there (then
    :func:`reason` says why, and the caller takes the torch path)."""
    import torch

    if _state["failed"] is not None:
        return None
    if not _NEG:
        _NEG.update({torch.float32: (4, 0xFF800000), torch.bfloat16: (2, 0xFF80), torch.float16: (2, 0xFC00)})
    if (device.type != "cuda" or mask.dim() != 2 or mask.dtype != torch.int32 or not mask.is_contiguous()
            or not mask.is_pinned() or not 0 < mask.shape[0] <= 65535):
        return None
    with _lock:
        try:
            lib = _driver()
        except (OSError, AttributeError) as e:
            _fail(f"CUDA driver: {e}")
            return None
        with torch.cuda.device(device):
            ctx = ctypes.c_void_p()
            if lib.cuCtxGetCurrent(ctypes.byref(ctx)) != 0 or not ctx.value:
                _fail("no current CUDA context on the scores' device")
                return None
            fn = _function(lib)
            if fn is None:
                _fail("the kernel module did not load in the current CUDA context")
                return None
            # The bitmask's address on the device (equal to the host address under
            # unified addressing for memory from cudaHostAlloc, as torch pins it). The
            # driver must call it host memory, and the address must be one the kernel
            # can read words at: anything else would make it fault, and a fault ends
            # the CUDA context of the whole process.
            kind = ctypes.c_uint32()
            if (lib.cuPointerGetAttribute(ctypes.byref(kind), _CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                          mask.data_ptr()) != 0 or kind.value != _CU_MEMORYTYPE_HOST):
                _fail("the bitmask is not pinned host memory the driver knows")
                return None
            dptr = ctypes.c_uint64()
            if lib.cuPointerGetAttribute(ctypes.byref(dptr), _CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
                                         mask.data_ptr()) != 0:
                _fail("the pinned bitmask is not mapped into the device's address space")
                return None
            if dptr.value == 0 or dptr.value % 4 != 0:
                _fail(f"the pinned bitmask's device address {dptr.value:#x} is not word-aligned")
                return None
            return Launch(mask, ctx.value, fn, dptr.value)


def apply(scores: Any, mask: Any, width: int) -> bool:
    """Set ``scores[r, c] = -inf`` on the device wherever bit ``c`` of row ``r`` of the
    pinned host bitmask ``mask`` (int32 ``[rows, words]``) is clear, or ``c`` is past
    the words, in one launch on torch's current stream. ``scores`` is a CUDA tensor
    ``[rows, width]`` (float32, bfloat16 or float16, rows contiguous). Returns False,
    having done nothing, when the kernel cannot run here. (:func:`bind` once and
    :meth:`Launch.run` each step does the same with the set-up paid once.)

    The kernel reads ``mask`` while it runs: the caller must not write it again before
    the stream has passed this point (record an event after the call).
    """
    import torch

    if scores.device.type != "cuda" or scores.dim() != 2 or mask.dim() != 2 or mask.shape[0] != scores.shape[0]:
        return False
    launch = bind(mask, scores.device)
    if launch is None:
        return False
    with torch.cuda.device(scores.device):
        return launch.run(scores, mask.shape[0], width, torch.cuda.current_stream(scores.device).cuda_stream)
