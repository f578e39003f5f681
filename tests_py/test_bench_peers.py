"""Smoke test of tests_py/bench_peers.py (`make bench-peers`), so the script does not rot:
three dev-split schemas with the real Llama-3 tokenizer, tether timed in Go and through
the Python API (always), llguidance and xgrammar when importable (they live in the
peers' environment, not in .venv)."""

from __future__ import annotations

import importlib.util
import sys

import numpy as np

import bench_peers


def test_bench_peers_smoke() -> None:
    cases = bench_peers.load_cases(bench_peers.DEV, 3)
    assert len(cases) == 3 and all(c.texts for c in cases)
    engines = ["tether-go", "tether-py"] + [p for p in bench_peers.PEERS if importlib.util.find_spec(p)]
    tok, eos = bench_peers.load_tokenizer()
    tallies = bench_peers.run(cases, engines, tok, eos)
    go, py = tallies["tether-go"], tallies["tether-py"]
    for t in (go, py):
        assert t.schemas == 3 and t.compiled == 3 and t.passing == 3, t
        assert t.invalid_accepted == 0 and t.valid_rejected == 0
        assert len(t.compile_us) == 3 and all(x > 0 for x in t.compile_us)
    # the same walk on both sides: one mask per token of every valid instance, plus the end
    want = sum(len(ids) + 1 for c in cases for ids, v in zip(c.ids, c.valid) if v)
    assert len(go.masks_us) == len(py.masks_us) == want > 0
    assert all(x > 0 for x in go.masks_us + py.masks_us)
    # every mask also timed with the thread's CPU clock, over the same call: not zero,
    # not the thread's total (a mask's CPU time is near its wall time at the median)
    for t in tallies.values():
        assert len(t.masks_cpu_us) == len(t.masks_us)
        if sys.platform.startswith("linux"):
            assert all(c > 0 for c in t.masks_cpu_us)
            assert np.median(t.masks_cpu_us) <= 2 * np.median(t.masks_us) + 20
    table = bench_peers.report(tallies, 1.0)
    assert "tether-py/tether-go" in table and "p99.9" in table
    assert "mask, timing thread's CPU time" in table and "off the CPU" in table
    assert "slowest masks of tether-go (wall, CPU): " in table
    for n in engines:
        assert f"slowest compiles of {n}: " in table
    for p in engines[2:]:
        assert tallies[p].schemas == 3 and f"tether-go/{p}" in table


def test_serialize_keeps_number_text_and_key_order() -> None:
    import json

    v = json.loads('{"b": 1.0, "a": [1e3, -0, "x\\u00e9"], "c": {"d": null, "e": true}}',
                   parse_float=bench_peers._Num, parse_int=bench_peers._Num)
    assert bench_peers.serialize(v) == '{"b":1.0,"a":[1e3,-0,"xé"],"c":{"d":null,"e":true}}'
