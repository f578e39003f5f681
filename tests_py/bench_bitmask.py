"""Batch bitmask fill (issue 15; `make bench-py`, not part of `make test`).

64 matchers over 64 different grammars (32 regexes and 32 JSON Schema Bench dev schemas),
each a few tokens into its grammar, Llama-3 vocabulary (128,256 ids): the time of one
``tether.fill_next_token_bitmasks`` call for all 64 rows against 64 single
``Matcher.fill_next_token_bitmask`` calls, same states, same run, warm caches. Prints the
median per-row cost and the speedup. Rows run in parallel on GOMAXPROCS threads, so the
speedup depends on the cores (and on what else the machine runs).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time

from conftest import ROOT, tokenizer_path
from transformers import PreTrainedTokenizerFast

import tether

ROWS = 64


def grammars(tok: PreTrainedTokenizerFast) -> list[tuple[tether.Grammar, str]]:
    out = [(tether.Grammar(tether.regex_to_gbnf(rf"[a-z]{{{i + 1},{i + 8}}}-\d{{{i % 4 + 1}}}"), tok), "abc") for i in range(32)]
    dev = ROOT.parent / "shared" / "jsonschemabench" / "maskbench-dev.jsonl"
    for line in dev.read_text().splitlines():
        r = json.loads(line)
        valid = [t["data"] for t in r.get("tests") or [] if t["valid"]]
        if not valid:
            continue
        try:
            g = tether.Grammar(tether.json_schema_to_gbnf(r["schema"])[0], tok)
        except tether.TetherError:
            continue
        text = json.dumps(valid[0])
        out.append((g, text[: max(1, len(text) // 3)]))
        if len(out) == ROWS:
            break
    return out


def main() -> int:
    tok = PreTrainedTokenizerFast(tokenizer_file=str(tokenizer_path("llama3")), eos_token="<|eot_id|>")
    matchers = []
    for g, prefix in grammars(tok):
        m = g.matcher()
        m.accept_text(prefix)
        matchers.append(m)
    assert len(matchers) == ROWS, len(matchers)
    mask = tether.allocate_token_bitmask(ROWS, len(tok))
    tether.fill_next_token_bitmasks(matchers, mask)  # warm every state's caches
    batch, single = [], []
    for _ in range(30):
        t0 = time.perf_counter()
        tether.fill_next_token_bitmasks(matchers, mask)
        batch.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        for i, m in enumerate(matchers):
            m.fill_next_token_bitmask(mask, i)
        single.append(time.perf_counter() - t0)
    b, s = statistics.median(batch), statistics.median(single)
    print(json.dumps({
        "rows": ROWS, "vocab": len(tok), "gomaxprocs_cpus": os.cpu_count(),
        "batch_call_us": round(b * 1e6, 1), "batch_per_row_us": round(b * 1e6 / ROWS, 1),
        "single_calls_us": round(s * 1e6, 1), "single_per_row_us": round(s * 1e6 / ROWS, 1),
        "speedup": round(s / b, 2),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
