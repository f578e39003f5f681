"""End-to-end demo: ``python -m tether.demo [--tokenizers DIR]`` (what ``make demo`` runs).

For now it shows the whole chain tether is built on: Python hands each test tokenizer's
tokenizer.json to the Go core, Go encodes and decodes through the Rust tokenizers library,
and the ids are compared with the ``tokenizers`` Python package on the same file.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import tether

SAMPLE = 'Grammar-constrained 🧩 decoding: {"ok": true, "日本": [1, 2.5]}  café\n\tdone'


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tether.demo", description=__doc__)
    ap.add_argument(
        "--tokenizers",
        type=Path,
        default=Path(os.environ.get("TETHER_TOKENIZERS", "build/tokenizers")),
        help="folder with <name>/tokenizer.json (make setup fetches llama3, llama2, qwen3, gemma3)",
    )
    ap.add_argument("--text", default=SAMPLE)
    args = ap.parse_args(argv)

    try:
        import tokenizers as hf_tokenizers
    except ImportError:  # pragma: no cover
        hf_tokenizers = None

    paths = sorted(args.tokenizers.glob("*/tokenizer.json"))
    if not paths:
        print(f"no */tokenizer.json under {args.tokenizers}; run `make setup`", file=sys.stderr)
        return 2
    print(f"tether {tether.__version__}: tokenizer round trip through Go + Rust")
    print(f"text: {args.text!r}\n")
    print(f"{'tokenizer':<10} {'vocab':>7} {'ids':>4} {'load ms':>8} {'encode µs':>10}  round trip  same ids as HF")
    ok = True
    for path in paths:
        t0 = time.perf_counter()
        with tether.Tokenizer.from_file(path) as tok:
            t1 = time.perf_counter()
            ids = tok.encode(args.text)
            t2 = time.perf_counter()
            back = tok.decode(ids)
            same = "n/a"
            if hf_tokenizers is not None:
                ref = hf_tokenizers.Tokenizer.from_file(str(path)).encode(args.text, add_special_tokens=False).ids
                same = "yes" if ref == ids else "NO"
                ok &= ref == ids
            ok &= back == args.text
            print(
                f"{path.parent.name:<10} {tok.vocab_size:>7} {len(ids):>4} {1e3 * (t1 - t0):>8.1f} "
                f"{1e6 * (t2 - t1):>10.1f}  {'yes' if back == args.text else 'NO':<10}  {same}"
            )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
