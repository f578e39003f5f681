"""Where a decode step's GPU time goes: tether's kernels under Nsight Compute.

    python3 profile_kernels.py MODELS [--names smollm-bf16,llama1b-bf16] [--decode 4]

Not a check (it prints no PASS/FAIL line and always exits 0): it feeds the next round
of kernel work. For each model, two runs of `tether-cuda generate --device cuda` under
`ncu --clock-control none --metrics gpu__time_duration.sum --csv --page raw` with the
bench's 128-token prompt, greedy: one stopping after the first token (load warm-up and
prefill) and one after 1 + DECODE tokens. Kernels are grouped by name, grid and block;
the second run's groups less the first's, divided by DECODE, are one decode step: a
table of launches and microseconds per step, largest first, with their sum (GPU time
only: launch gaps inside the replayed graph and the host's share are not in it).
The first run's groups are printed too (warm-up and prefill together).
"""

from __future__ import annotations

import argparse
import csv
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from harness import TETHER, prompt_for

UNITS = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3, "second": 1e6, "s": 1e6}


def find_ncu() -> str | None:
    for c in (shutil.which("ncu"), "/usr/local/cuda/bin/ncu"):
        if c and Path(c).exists():
            return c
    for p in sorted(Path("/opt/nvidia").glob("nsight-compute/*/ncu")) + sorted(
        Path("/usr/local").glob("cuda*/bin/ncu")
    ):
        return str(p)
    return None


def parse(log: Path) -> dict[tuple[str, str, str], list[float]]:
    """ncu's raw CSV page: (kernel, grid, block) -> durations in µs."""
    rows = [ln for ln in log.read_text(errors="replace").splitlines() if ln.startswith('"')]
    head = next((i for i, ln in enumerate(rows) if ln.startswith('"ID"')), None)
    if head is None:
        raise RuntimeError(f"no CSV header in {log}: {log.read_text(errors='replace')[-800:]}")
    table = list(csv.reader(rows[head:]))
    cols = table[0]
    ki, gi, bi = cols.index("Kernel Name"), cols.index("Grid Size"), cols.index("Block Size")
    mi = cols.index("gpu__time_duration.sum")
    scale = 1.0
    body = table[1:]
    if body and not body[0][0].strip().isdigit():  # the units row
        unit = body[0][mi].strip()
        if unit not in UNITS:
            raise RuntimeError(f"unknown unit {unit!r} of gpu__time_duration.sum")
        scale = UNITS[unit]
        body = body[1:]
    out: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for r in body:
        if len(r) <= mi:
            continue
        try:
            v = float(r[mi].replace(",", ""))
        except ValueError:
            continue
        name = r[ki].split("(")[0]
        out[(name[:70], r[gi], r[bi])].append(v * scale)
    return out


def run(ncu: str, model: Path, text: str, tokens: int, log: Path, timeout: float) -> str:
    cmd = [
        ncu,
        "--clock-control",
        "none",
        "--metrics",
        "gpu__time_duration.sum",
        "--csv",
        "--page",
        "raw",
        "--log-file",
        str(log),
        str(TETHER),
        "generate",
        "--device",
        "cuda",
        "--model",
        str(model),
        "--prompt",
        text,
        "--temp",
        "0",
        "--ignore-eog",
        "--max-tokens",
        str(tokens),
    ]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"ncu exited {p.returncode}: {(p.stderr or p.stdout)[-1500:]}")
    return p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""


def table(title: str, groups: dict, div: float) -> None:
    items = sorted(groups.items(), key=lambda kv: -kv[1][1])
    total = sum(v[1] for v in groups.values()) / div
    print(f"  {title}: {total:,.1f} µs of kernel time")
    print(f"    {'µs':>9} {'share':>6} {'launches':>8}  kernel [grid] [block]")
    for (name, grid, block), (n, t) in items[:24]:
        if t / div < 0.05:
            continue
        print(f"    {t / div:9.1f} {t / div / total:6.1%} {n / div:8.1f}  {name} [{grid}] [{block}]")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", type=Path)
    ap.add_argument("--names", default="smollm-bf16,llama1b-bf16")
    ap.add_argument("--decode", type=int, default=4)
    ap.add_argument("--timeout", type=float, default=150)
    args = ap.parse_args()
    ncu = find_ncu()
    if ncu is None:
        print("profile: no ncu on this machine; nothing profiled")
        return 0
    print(f"profile: {ncu}")
    tmp = Path(tempfile.mkdtemp(prefix="tether-ncu-"))
    for name in args.names.split(","):
        d = args.models / name
        if not d.is_dir():
            print(f"profile {name}: no model at {d}")
            continue
        try:
            text, _ = prompt_for(d, 128)
            base, full = tmp / f"{name}-1.csv", tmp / f"{name}-n.csv"
            run(ncu, d, text, 1, base, args.timeout)
            info = run(ncu, d, text, 1 + args.decode, full, args.timeout)
            a, b = parse(base), parse(full)
            step = {}
            for k, v in b.items():
                n, t = len(v) - len(a.get(k, [])), sum(v) - sum(a.get(k, []))
                if n > 0 or t > 0:
                    step[k] = (n, t)
            print(f"\n== profile {name}: one decode step (runs of 1 and {1 + args.decode} tokens; {info})")
            table("decode step", step, args.decode)
            table("load warm-up + prefill of 128 tokens", {k: (len(v), sum(v)) for k, v in a.items()}, 1)
        except Exception as e:  # noqa: BLE001 - a profile that fails says why and goes on
            print(f"profile {name}: {type(e).__name__}: {e}")
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
