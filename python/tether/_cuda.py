"""One-launch application of a grammar bitmask to scores on a CUDA device.

The processor's device path fills the bitmask in pinned host memory (Go) and then needs
the refused scores set to -inf on the device. Without this module that is a copy of
the bitmask to the device and three or four torch kernels (unpack the bits, compare,
masked_fill). With it, it is one kernel (``cuda/apply_bitmask.cu``, compiled to the
committed ``cuda/apply_bitmask.fatbin``) that reads the pinned bitmask directly through
its device mapping, launched on torch's current stream.

The CUDA driver (``libcuda.so.1``) is loaded only when scores are on a CUDA device, so
``import tether`` and CPU use never need it. Anything that keeps the kernel from
running (no driver symbol, a module that does not load, memory that is not mapped)
makes :func:`apply` return False, and the caller takes the torch path; ``reason()`` says
why.
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


def apply(scores: Any, mask: Any, width: int) -> bool:
    """Set ``scores[r, c] = -inf`` on the device wherever bit ``c`` of row ``r`` of the
    pinned host bitmask ``mask`` (int32 ``[rows, words]``) is clear, or ``c`` is past
    the words, in one launch on torch's current stream. ``scores`` is a CUDA tensor
    ``[rows, width]`` (float32, bfloat16 or float16, rows contiguous). Returns False,
    having done nothing, when the kernel cannot run here.

    The kernel reads ``mask`` while it runs: the caller must not write it again before
    the stream has passed this point (record an event after the call).
    """
    import torch

    if _state["failed"] is not None:
        return False
    if scores.dim() != 2 or scores.stride(1) != 1 or mask.dim() != 2 or not mask.is_pinned():
        return False
    if scores.dtype == torch.float32:
        elem, neg = 4, 0xFF800000
    elif scores.dtype == torch.bfloat16:
        elem, neg = 2, 0xFF80
    elif scores.dtype == torch.float16:
        elem, neg = 2, 0xFC00
    else:
        return False
    rows, words = mask.shape
    if rows != scores.shape[0] or width > scores.shape[1] or rows > 65535:
        return False
    with _lock:
        try:
            lib = _driver()
        except (OSError, AttributeError) as e:
            return _fail(f"CUDA driver: {e}")
        with torch.cuda.device(scores.device):
            fn = _function(lib)
            if fn is None:
                return _fail("the kernel module did not load in the current CUDA context")
            # The bitmask's address on the device (equal to the host address under
            # unified addressing for memory from cudaHostAlloc, as torch pins it).
            # The driver must call it host memory, and the address must be one the
            # kernel can read words at: anything else would make it fault, and a fault
            # ends the CUDA context of the whole process.
            kind = ctypes.c_uint32()
            if (lib.cuPointerGetAttribute(ctypes.byref(kind), _CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                          mask.data_ptr()) != 0 or kind.value != _CU_MEMORYTYPE_HOST):
                return _fail("the bitmask is not pinned host memory the driver knows")
            dptr = ctypes.c_uint64()
            if lib.cuPointerGetAttribute(ctypes.byref(dptr), _CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
                                         mask.data_ptr()) != 0:
                return _fail("the pinned bitmask is not mapped into the device's address space")
            if dptr.value == 0 or dptr.value % 4 != 0:
                return _fail(f"the pinned bitmask's device address {dptr.value:#x} is not word-aligned")
            args = [
                ctypes.c_uint64(scores.data_ptr()),
                ctypes.c_int64(scores.stride(0)),
                ctypes.c_int32(width),
                ctypes.c_uint64(dptr.value),
                ctypes.c_int32(words),
                ctypes.c_int32(elem),
                ctypes.c_uint32(neg),
            ]
            argv = (ctypes.c_void_p * len(args))(*[ctypes.addressof(a) for a in args])
            stream = torch.cuda.current_stream(scores.device).cuda_stream
            grid = (width + _THREADS - 1) // _THREADS
            if lib.cuLaunchKernel(fn, grid, rows, 1, _THREADS, 1, 1, 0, stream, argv, None) != 0:
                return _fail("cuLaunchKernel failed")
    return True
