"""The checks of check_parity.py must be able to fail: run them against broken "engines".

    TETHER_CUDA_DRYRUN=1 python tests_cuda/mutants.py MODELS_DIR [REAL_TETHER [MUTANT,...]]

A dry-run tool (CPU only, not bundled). MODELS_DIR is a dry run's make_models.py output
(e.g. `TETHER_CUDA_DRYRUN=1 python tests_cuda/make_models.py /tmp/m --only
tiny-f32,tiny-bf16,tiny-llama3-f32`). REAL_TETHER defaults to build/bin/tether. For each
mutant, a wrapper stands in for tether; calls meant for the GPU (the harness tells the
wrapper through TETHER_DRYRUN_DEVICE) are broken in one way, calls for the CPU are not:

    rope    the model's rope_theta x 1.5 (a wrong RoPE)
    ids     generate --json: the 10th generated id replaced
    schema  generate --json-schema: the output text loses its last character
    prompt  generate --json: prompt_ids with one id changed (a tokenizer mismatch)

check_parity.py runs on the tiny models for each mutant, and the named checks must FAIL
(and the others must still pass, so a failure is the mutant's doing). Exit status 0 when
every mutant was caught.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

WRAPPER = r"""
import json, os, shutil, subprocess, sys, tempfile
from pathlib import Path
real, mutant = os.environ["MUTANT_REAL"], os.environ["MUTANT"]
args = sys.argv[1:]
gpu = os.environ.get("TETHER_DRYRUN_DEVICE") == "cuda"
if gpu and mutant == "rope" and "--model" in args:
    i = args.index("--model") + 1
    src = Path(args[i])
    dst = Path(tempfile.mkdtemp(prefix="mutant-"))
    for f in src.iterdir():
        if f.name != "config.json":
            os.symlink(f, dst / f.name)
    cfg = json.loads((src / "config.json").read_text())
    rp = cfg.get("rope_parameters") or {}
    if "rope_theta" in rp:
        rp["rope_theta"] *= 1.5
    else:
        cfg["rope_theta"] = cfg.get("rope_theta", 10000.0) * 1.5
    (dst / "config.json").write_text(json.dumps(cfg))
    args[i] = str(dst)
proc = subprocess.run([real, *args], capture_output=True, text=True)
out = proc.stdout
if gpu and proc.returncode == 0 and args[0] == "generate" and "--json" in args:
    r = json.loads(out.strip().splitlines()[-1])
    if mutant == "ids" and "--json-schema" not in args and len(r["ids"]) > 10:
        r["ids"][9] = (r["ids"][9] + 1) % 1000
    if mutant == "schema" and "--json-schema" in args:
        r["text"] = r["text"][:-1]
    if mutant == "prompt" and "--json-schema" not in args:
        r["prompt_ids"][3] += 1
    out = json.dumps(r) + "\n"
sys.stdout.write(out)
sys.stderr.write(proc.stderr)
sys.exit(proc.returncode)
"""

# mutant -> checks that must fail
EXPECT = {
    "rope": {
        "parity-torch-tiny-f32",
        "parity-cpu-tiny-f32",
        "parity-torch-tiny-bf16",
        "greedy-tiny-f32",
        "parity-torch-tiny-llama3-f32",
        "parity-cpu-tiny-llama3-f32",
        "greedy-tiny-llama3-f32",
    },
    "ids": {"greedy-tiny-f32", "greedy-tiny-llama3-f32"},
    "schema": {
        "schema-tiny-llama3-f32-person",
        "schema-tiny-llama3-f32-record",
        "schema-tiny-llama3-f32-list",
    },
    "prompt": {"greedy-tiny-f32", "greedy-tiny-llama3-f32"},
}


def main() -> int:
    if os.environ.get("TETHER_CUDA_DRYRUN", "") in ("", "0"):
        sys.exit("mutants.py is a dry-run tool: set TETHER_CUDA_DRYRUN=1")
    models = Path(sys.argv[1])
    real = Path(
        sys.argv[2] if len(sys.argv) > 2 else HERE.parent / "build" / "bin" / "tether"
    ).resolve()
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        wrapper = Path(tmp) / "tether"
        wrapper.write_text(f"#!{sys.executable}\n{WRAPPER}")
        wrapper.chmod(0o755)
        pick = sys.argv[3].split(",") if len(sys.argv) > 3 else list(EXPECT)
        for mutant, expect in ((m, EXPECT[m]) for m in pick):
            env = {
                **os.environ,
                "MUTANT": mutant,
                "MUTANT_REAL": str(real),
                "TETHER_CUDA_BIN": str(wrapper),
            }
            proc = subprocess.run(
                [
                    sys.executable,
                    str(HERE / "check_parity.py"),
                    str(models),
                    "--only",
                    "tiny-f32,tiny-bf16,tiny-llama3-f32",
                ],
                capture_output=True,
                text=True,
                env=env,
                timeout=600,
                check=False,
            )
            lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(("PASS ", "FAIL "))]
            failed = {ln.split()[1].rstrip(":") for ln in lines if ln.startswith("FAIL ")}
            passed = {ln.split()[1].rstrip(":") for ln in lines if ln.startswith("PASS ")}
            missed, extra = expect - failed, failed - expect
            ok = not missed and not extra and proc.returncode != 0 and passed
            bad += not ok
            print(
                f"{'CAUGHT' if ok else 'MISSED'} mutant {mutant}: {len(failed)} failed {sorted(failed)}; "
                f"{len(passed)} still passed"
                + (f"; not failed: {sorted(missed)}" if missed else "")
                + (f"; failed unexpectedly: {sorted(extra)}" if extra else "")
            )
            for ln in lines:
                if ln.startswith("FAIL "):
                    print("   " + ln[:300])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
