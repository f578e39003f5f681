"""The processor's one-kernel CUDA path (tether/_cuda.py), as far as a machine without a
GPU can check it: the committed fatbin is what `make cuda-kernels` made from the
committed source, it ships in the package, and scores that are not on a CUDA device
never reach the driver; and the default CLI's --device cuda is a clear error naming
`make build-cuda`. The kernel itself runs in the device check
(tests_py/gpu_processor_check.py, section 1c and the step timings)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import torch

import tether
from tether import _cuda

KDIR = Path(tether.__file__).parent / "cuda"


def test_committed_fatbin_is_built_from_committed_source() -> None:
    want = dict(reversed(line.split()) for line in (KDIR / "apply_bitmask.sha256").read_text().splitlines())
    assert set(want) == {"apply_bitmask.cu", "apply_bitmask.fatbin"}
    for name, digest in want.items():
        got = hashlib.sha256((KDIR / name).read_bytes()).hexdigest()
        assert got == digest, f"{name} changed since the fatbin was built: run make cuda-kernels"


def test_cpu_scores_do_not_touch_the_driver() -> None:
    scores = torch.zeros(2, 64)
    mask = torch.zeros(2, 2, dtype=torch.int32)
    assert _cuda.apply(scores, mask, 64) is False
    assert torch.count_nonzero(scores) == 0
    assert _cuda._state["lib"] is None  # libcuda.so.1 was never loaded


def test_default_cli_refuses_device_cuda_clearly(tmp_path) -> None:
    """The default build has no CUDA engine: --device cuda fails with an error naming the
    build that has one, before the model is read; a malformed --device is a usage error."""
    import subprocess

    from test_model_parity import TETHER

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(TETHER), *args], capture_output=True, text=True, timeout=60, check=False)

    for cmd in (["generate", "--prompt", "x"], ["logits", "--ids", "1", "--out", str(tmp_path / "l.f32")]):
        p = run(*cmd, "--model", str(tmp_path), "--device", "cuda")
        assert p.returncode == 2, p.stderr
        assert "built without CUDA support" in p.stderr and "make build-cuda" in p.stderr, p.stderr
        for bad in ("gpu", "cuda:x", "cuda:-1"):
            p = run(*cmd, "--model", str(tmp_path), "--device", bad)
            assert p.returncode != 0 and f'--device "{bad}"' in p.stderr, p.stderr


def _cuda_h() -> Path:
    """The CUDA 13 toolkit's cuda.h (make test-py passes it after `make cuda-toolkit`)."""
    import os

    path = os.environ.get("TETHER_CUDA_H", "")
    assert path, "TETHER_CUDA_H is not set: run through `make test-py`, which installs the pip CUDA toolkit"
    return Path(path)


def test_driver_constants_match_cuda_h() -> None:
    """_cuda.py calls the driver through ctypes, so cuda.h's enums are written out there by
    hand. A wrong one cannot be seen without a GPU and is fatal with one: attribute 2
    (MEMORY_TYPE) asked for where 3 (DEVICE_POINTER) was meant gave the kernel the address
    0x1 on an H200, and the fault ("misaligned address") ended the process's CUDA context.
    So every constant is read back from the toolkit's header."""
    import re

    text = _cuda_h().read_text()

    def enum(name: str) -> int:
        m = re.search(rf"\b{name}\s*=\s*(0x[0-9a-fA-F]+|\d+)\s*,", text)
        assert m, f"{name} not in cuda.h"
        return int(m.group(1), 0)

    consts = {n[1:]: v for n, v in vars(_cuda).items() if n.startswith("_CU_")}
    assert set(consts) == {"CU_POINTER_ATTRIBUTE_MEMORY_TYPE", "CU_POINTER_ATTRIBUTE_DEVICE_POINTER", "CU_MEMORYTYPE_HOST"}
    for name, value in consts.items():
        assert value == enum(name), f"_cuda._{name} is {value}, cuda.h says {enum(name)}"


def test_bind_refuses_what_the_kernel_cannot_read_without_the_driver() -> None:
    """bind() checks the buffer before it loads the driver: a CPU device, a buffer that
    is not pinned, of another dtype or not 2-D gets None (the processor then takes
    torch's path), and libcuda.so.1 is never loaded for them."""
    mask = torch.zeros(2, 4, dtype=torch.int32)
    assert _cuda.bind(mask, torch.device("cpu")) is None
    assert _cuda.bind(mask, torch.device("cuda", 0)) is None  # not pinned
    assert _cuda.bind(mask.to(torch.int64), torch.device("cuda", 0)) is None
    assert _cuda.bind(mask[0], torch.device("cuda", 0)) is None
    assert _cuda._state["lib"] is None
    assert _cuda.reason() is None  # nothing here is a reason to give the kernel up


def test_cuda_docstring_example_runs() -> None:
    """The module's example runs here (the CPU branch; the kernel branch on a GPU)."""
    import doctest

    result = doctest.testmod(_cuda, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 8 and result.failed == 0
