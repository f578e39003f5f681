"""The device check's harness: how the scripts find tether, call it and report a check.

Shared by make_models.py, check_parity.py and bench_cuda.py (all three sit in the same
folder, here and in the bundle build/cuda-check/). Standard library only, so that it
imports before torch does.

Environment (set by run.sh):
    TETHER_CUDA_DRYRUN=1   CPU dry run: the ordinary CPU binary, no --device flag, torch on
                           the CPU, tiny shapes. Every PASS/FAIL line then ends in
                           "[DRY RUN]" and no result may be read as a GPU result.
    TETHER_CUDA_BIN        the tether binary (default: bin/tether-cuda beside this file)
    TETHER_TOKENIZERS      folder with llama2/ and llama3/ tokenizers (default: tokenizers/)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DRY_RUN = os.environ.get("TETHER_CUDA_DRYRUN", "") not in ("", "0")
TAG = " [DRY RUN]" if DRY_RUN else ""
TETHER = Path(os.environ.get("TETHER_CUDA_BIN", HERE / "bin" / "tether-cuda"))
TOKENIZERS = Path(os.environ.get("TETHER_TOKENIZERS", HERE / "tokenizers"))

# Text the prompts are cut from (as tests_py/bench_model.py uses).
TEXT = (
    "Grammar-constrained decoding keeps a language model on the rails of a schema: at "
    "every step the grammar engine computes which tokens may come next and the sampler "
    "picks only among them. "
)


def quiet_transformers() -> None:
    """No progress bars or advisory warnings from transformers in the check's output."""
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    from transformers.utils import logging

    logging.disable_progress_bar()
    logging.set_verbosity_error()


def banner() -> str:
    """One line saying what kind of run this is."""
    if DRY_RUN:
        return (
            "DRY RUN on the CPU (tiny shapes, the CPU binary, torch on the CPU): NOT A GPU RESULT"
        )
    return "GPU run"


class Checks:
    """Collects PASS/FAIL lines; each is printed as soon as it is known."""

    def __init__(self) -> None:
        self.failed: list[str] = []
        self.passed: list[str] = []

    def report(self, name: str, ok: bool, detail: str) -> bool:
        # One line per check, so that run.sh's summary (which greps PASS/FAIL lines) has it all.
        detail = " | ".join(ln.strip() for ln in detail.strip().splitlines() if ln.strip())
        if ok:
            self.passed.append(name)
            print(f"PASS {name}: {detail}{TAG}", flush=True)
        else:
            self.failed.append(name)
            print(f"FAIL {name}: {detail}{TAG}", flush=True)
        return ok

    def fail(self, name: str, reason: str) -> bool:
        return self.report(name, False, reason)

    def exit_code(self) -> int:
        return 1 if self.failed else 0


def tether(
    sub: str, *args: str, device: str | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run `tether SUB [--device D] ARGS...`; raise RuntimeError with stderr's tail on failure.

    In a dry run the CPU binary has no --device flag: it is left out, and "cuda" then
    means the same CPU engine as "cpu" (the dry run checks the scripts, not the engine).
    """
    cmd = [str(TETHER), sub]
    if device is not None and not DRY_RUN:
        cmd += ["--device", device]
    cmd += list(args)
    env = None
    if DRY_RUN and device is not None:
        # For the harness's own mutation tests: a wrapper standing in for tether can
        # tell which device a call meant.
        env = {**os.environ, "TETHER_DRYRUN_DEVICE": device}
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout, check=False, env=env
        )
    except subprocess.TimeoutExpired as e:
        raise RuntimeError(f"`{' '.join(cmd[:2])} ...` timed out after {timeout:.0f} s") from e
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
        raise RuntimeError(f"`{' '.join(_short(cmd))}` exited {proc.returncode}:\n{tail}")
    return proc


def _short(cmd: list[str]) -> list[str]:
    return [a if len(a) <= 60 else a[:57] + "..." for a in cmd]


def generate_json(
    model: Path, prompt: str, *args: str, device: str | None, timeout: float = 300
) -> dict:
    """`tether generate --json`: the parsed object."""
    proc = tether(
        "generate",
        "--model",
        str(model),
        "--prompt",
        prompt,
        "--json",
        *args,
        device=device,
        timeout=timeout,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    if not lines:
        raise RuntimeError(f"tether generate printed no JSON; stderr:\n{proc.stderr[-2000:]}")
    try:
        return json.loads(lines[-1])
    except ValueError as e:
        raise RuntimeError(f"tether generate --json printed {lines[-1][:200]!r}: {e}") from e


def prompt_for(tokenizer_dir: Path, tokens: int) -> tuple[str, list[int]]:
    """Text whose encoding (with BOS, as tether encodes a prompt) is exactly `tokens` ids."""
    import tokenizers

    tok = tokenizers.Tokenizer.from_file(str(tokenizer_dir / "tokenizer.json"))
    text = TEXT
    while len(tok.encode(text).ids) < tokens + 8:
        text += TEXT
    ids = tok.encode(text).ids[:tokens]
    # Cut the text where the ids end; decode without the BOS, which encode adds back.
    skip = 1 if ids and _is_bos(tok, ids[0]) else 0
    text = tok.decode(ids[skip:])
    ids = tok.encode(text).ids
    # A cut inside a merge can re-tokenize one token longer or shorter; nudge it.
    for _ in range(8):
        if len(ids) == tokens:
            break
        text = text[:-1] if len(ids) > tokens else text + "a"
        ids = tok.encode(text).ids
    if len(ids) != tokens:
        raise RuntimeError(f"could not cut a prompt of exactly {tokens} tokens (got {len(ids)})")
    return text, ids


def _is_bos(tok, tid: int) -> bool:
    return tok.id_to_token(tid) in ("<s>", "<|begin_of_text|>", "<bos>")


def read_logits(path: Path, n: int, vocab: int):
    """A `tether logits` file: little-endian float32, [n x vocab]."""
    import numpy as np

    a = np.fromfile(path, dtype="<f4")
    if a.size != n * vocab:
        raise RuntimeError(f"{path}: {a.size} floats, want {n} positions x {vocab} = {n * vocab}")
    return a.reshape(n, vocab)


def rel_diff(a, b) -> float:
    """max |a - b| / max |b| over every position and vocabulary entry."""
    import numpy as np

    scale = float(np.abs(b).max())
    return float(np.abs(a.astype(np.float64) - b.astype(np.float64)).max()) / (
        scale if scale > 0 else 1.0
    )


def manifest(models_dir: Path) -> dict:
    """models.json written by make_models.py: name -> {dir, dtype, role, ...}."""
    p = models_dir / "models.json"
    if not p.exists():
        raise RuntimeError(f"{p} missing: run make_models.py first")
    return json.loads(p.read_text())


class Stopwatch:
    def __init__(self) -> None:
        self.t0 = time.perf_counter()

    def __str__(self) -> str:
        return f"{time.perf_counter() - self.t0:.1f} s"


def die(msg: str) -> None:
    print(f"FAIL setup: {msg}{TAG}", flush=True)
    sys.exit(1)
