"""tether against llguidance and xgrammar on the MaskBench dev split (`make bench-peers`).

Every engine sees the same work: the real Llama-3 tokenizer (128,256 ids), each instance
of ``../shared/jsonschemabench/maskbench-dev.jsonl`` serialized once (compact JSON, the
corpus' number text and key order) and tokenized once, so every engine gets the same token
ids. Vocabularies are prepared once, before any timing (a throw-away grammar per engine).
Per schema the engines run one after another in an order that rotates from schema to
schema (so no engine always meets warm or cold CPU caches), each doing:

- compile: schema text -> first mask (conversion, grammar compile, matcher, first fill);
- for every instance: a new matcher; before each token the mask is filled (timed for valid
  instances), the token must be in it and is accepted; after the last token one more mask
  (timed) must allow the end token. Accepted = all of that held.

A schema passes for an engine when it compiled and every instance was judged right
(valid accepted, invalid refused). Engines:

- ``tether-go``: tether's engine timed inside Go (one binding call per schema runs the whole
  walk, ``bindings.BenchSchema``): what a Go program pays;
- ``tether-py``: tether's public Python API (``Grammar.from_json_schema``,
  ``Matcher.fill_next_token_bitmask`` into an int32 numpy row, ``accept_token``), each call
  timed from Python: what a Python decoding loop pays;
- ``llguidance``: ``LLMatcher.grammar_from_json_schema`` + ``LLMatcher``, masks by
  ``unsafe_compute_mask_ptr`` into a numpy row (its fastest Python path);
- ``xgrammar``: ``GrammarCompiler.compile_json_schema`` (cache off, one thread) +
  ``GrammarMatcher.fill_next_token_bitmask`` into a torch int32 row.

JSON whitespace is flexible for every engine (llguidance's and xgrammar's default; the
instances are compact, so every engine accepts them either way); xgrammar runs with
``strict_mode=False`` (JSON Schema's own additionalProperties semantics, as the others).
Peers that are not importable are left out. Python's garbage collector is off while a
schema runs.

Each mask is also timed with the timing thread's CPU clock (read outside the wall-clock
pair, so the wall times do not pay for it): a second table gives those CPU times, and
the report counts, per engine, the masks whose wall time exceeds their CPU time by 1 ms
or more, and gives wall and CPU time for each engine's slowest masks. On a machine of
few cores, the slowest wall times are often such waits (a Go garbage collection that
stops the mask's goroutine, another thread taking the core), not the engine's work. The two tether engines run in one process, each on a vocabulary of its own
(own_vocabulary): nothing one of them caches serves the other.

    python tests_py/bench_peers.py [--limit N] [--engines all|tether-go,tether-py,...] [--json out.json]

Default engines: tether-go, tether-py, llguidance; ``BENCH_PEERS_ENGINES=all`` (or
``--engines all``) adds xgrammar, whose compile of some schemas of the split takes over a
minute on this machine (one took 65 s), far past a default run's budget.

``BENCH_PEERS_LIMIT=N`` is the default of ``--limit``: N schemas spread evenly over the
split (every k-th line), 0 for all 2,811. Without it, 1,000 schemas (3 to 6 minutes on
2 cores): the whole split takes about 16 minutes without xgrammar.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DEV = ROOT.parent / "shared" / "jsonschemabench" / "maskbench-dev.jsonl"
ENGINES = ("tether-go", "tether-py", "llguidance", "xgrammar")
PEERS = ("llguidance", "xgrammar")
DEFAULT_LIMIT = 1000
# A mask whose wall time exceeds its thread's CPU time by this much (µs) is counted as
# having waited off the CPU.
OFF_CPU_US = 1000.0
# xgrammar is opt-in (BENCH_PEERS_ENGINES=all): its compile of one schema of the split
# takes over a minute here, which alone breaks the time budget of a default run.
DEFAULT_ENGINES = ("tether-go", "tether-py", "llguidance")


# ---- corpus ---------------------------------------------------------------------------


class _Num(str):
    """A JSON number kept as its text, so serializing does not change it (1.0 stays 1.0)."""


def serialize(v: Any) -> str:
    """Compact JSON text of a value loaded by :func:`load_cases` (numbers as written)."""
    if isinstance(v, _Num):
        return str.__str__(v)
    if isinstance(v, dict):
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + serialize(x) for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ",".join(serialize(x) for x in v) + "]"
    return json.dumps(v, ensure_ascii=False)


@dataclass
class Case:
    name: str
    schema: str  # JSON text
    texts: list[str]
    valid: list[bool]
    ids: list[np.ndarray] = field(default_factory=list)  # int32 per instance


def load_cases(path: Path = DEV, limit: int = 0) -> list[Case]:
    """The corpus' cases; with a limit, that many spread evenly over the file (every
    k-th line), so a subset keeps the corpus' mix of sources."""
    with open(path, encoding="utf-8") as f:
        lines = [line for line in f if line.strip()]
    if limit and limit < len(lines):
        lines = [lines[i * len(lines) // limit] for i in range(limit)]
    cases = []
    for line in lines:
        raw = json.loads(line)
        tests = json.loads(line, parse_float=_Num, parse_int=_Num, parse_constant=_Num).get("tests") or []
        cases.append(Case(
            name=raw["name"], schema=json.dumps(raw["schema"]),
            texts=[serialize(t["data"]) for t in tests], valid=[bool(t["valid"]) for t in tests],
        ))
    return cases


# ---- results --------------------------------------------------------------------------


@dataclass
class Result:
    error: str = ""
    compile_us: float = 0.0
    accepted: list[bool] = field(default_factory=list)
    masks_us: list[float] = field(default_factory=list)
    masks_cpu_us: list[float] = field(default_factory=list)  # the timing thread's CPU time per mask


@dataclass
class Tally:
    schemas: int = 0
    compiled: int = 0
    passing: int = 0
    invalid_accepted: int = 0
    valid_rejected: int = 0
    compile_us: list[float] = field(default_factory=list)
    masks_us: list[float] = field(default_factory=list)
    masks_cpu_us: list[float] = field(default_factory=list)
    wall_s: float = 0.0  # everything the engine did in the run, untimed parts included
    worst: list[tuple[float, str, int, float]] = field(default_factory=list)  # (µs, schema, mask index, CPU µs)
    compiles: list[tuple[float, str]] = field(default_factory=list)  # (µs, schema)

    def add(self, case: Case, r: Result) -> None:
        self.schemas += 1
        if r.error:
            return
        self.compiled += 1
        self.compile_us.append(r.compile_us)
        self.compiles.append((r.compile_us, case.name))
        self.masks_us.extend(r.masks_us)
        self.masks_cpu_us.extend(r.masks_cpu_us)
        if r.masks_us:
            i = int(np.argmax(r.masks_us))
            self.worst.append((r.masks_us[i], case.name, i, r.masks_cpu_us[i]))
        ok = True
        for valid, acc in zip(case.valid, r.accepted):
            if valid and not acc:
                self.valid_rejected += 1
                ok = False
            elif acc and not valid:
                self.invalid_accepted += 1
                ok = False
        self.passing += ok


PCTS = (50, 90, 99, 99.9, 100)


def pcts(xs: list[float]) -> list[float]:
    if not xs:
        return [float("nan")] * len(PCTS)
    a = np.sort(np.asarray(xs, dtype=np.float64))
    return [float(a[min(len(a) - 1, int(round(p / 100 * (len(a) - 1))))]) for p in PCTS]


# ---- engines --------------------------------------------------------------------------


def _bit(row: np.ndarray, i: int) -> bool:
    return i < row.size * 32 and (int(row[i >> 5]) >> (i & 31)) & 1 == 1


class TetherGo:
    """tether's engine, timed inside Go (bindings.BenchSchema)."""

    name = "tether-go"

    def __init__(self, tok: Any, eos: int) -> None:
        import tether
        from tether._native_call import native

        self._native = native
        self.vocab = own_vocabulary(tok, eos)
        tether.Grammar('root ::= "x"', self.vocab).matcher().allowed_token_ids()  # token trie built
        self.opts = json.dumps({"whitespace": "flexible"})

    def run(self, case: Case) -> Result:
        from tether._native_call import call
        from tether import TetherError

        ids = np.concatenate(case.ids).astype(np.int32) if case.ids else np.zeros(0, np.int32)
        ends = np.cumsum([len(x) for x in case.ids], dtype=np.int64) if case.ids else np.zeros(0, np.int64)
        timed = np.array(case.valid, dtype=np.uint8)
        n = ids.size + len(case.ids)
        times = np.zeros(2 * n, dtype=np.float64)  # wall, then thread CPU
        # zero-length buffers still need a valid address
        bufs = [b if b.size else np.zeros(1, b.dtype) for b in (ids, ends, timed, times)]
        out = json.loads(call(
            self._native.bindings_BenchSchema, self.vocab._handle, case.schema, self.opts,
            bufs[0].ctypes.data, ids.size, bufs[1].ctypes.data, len(case.ids), bufs[2].ctypes.data,
            bufs[3].ctypes.data, bufs[3].size, error=TetherError,
        ))
        if out["error"]:
            return Result(error=out["error"])
        k = out["masks"]
        return Result(compile_us=out["compile_us"], accepted=out["accepted"], masks_us=times[:k].tolist(),
                      masks_cpu_us=times[n : n + k].tolist())


def own_vocabulary(tok: Any, eos: int) -> Any:
    """A tether Vocabulary no other engine here shares (``shared=False``): a Go vocabulary
    of its own, so its token trie and the token sets it caches across grammars are its
    own. With one shared vocabulary (what ``Vocabulary.from_hf`` gives by default, in
    Python and in Go alike), whichever tether engine ran a schema second would find the
    positions the first one visited already analysed: its first visits, the mask tail,
    would be measured warm."""
    import tether

    return tether.Vocabulary.from_hf(tok, eos_token_id=eos, shared=False)


class TetherPy:
    """tether's public Python API, every call timed from Python."""

    name = "tether-py"

    def __init__(self, tok: Any, eos: int) -> None:
        import tether

        self.t = tether
        self.vocab = own_vocabulary(tok, eos)
        self.eos = eos
        self.mask = np.zeros((1, (self.vocab.size + 31) // 32), dtype=np.int32)
        tether.Grammar('root ::= "x"', self.vocab).matcher().fill_next_token_bitmask(self.mask)

    def run(self, case: Case) -> Result:
        t, mask, row = self.t, self.mask, self.mask[0]
        clock, cpu = time.perf_counter_ns, time.thread_time_ns
        t0 = clock()
        try:
            g = t.Grammar.from_json_schema(case.schema, self.vocab, whitespace="flexible")
            g.matcher().fill_next_token_bitmask(mask)
        except t.TetherError as e:
            return Result(error=str(e))
        res = Result(compile_us=(clock() - t0) / 1e3)
        for ids, valid in zip(case.ids, case.valid):
            m = g.matcher()
            ok = True
            fill, accept = m.fill_next_token_bitmask, m.accept_token
            for tid in ids.tolist():
                c0 = cpu()
                t0 = clock()
                fill(mask)
                d = clock() - t0
                c = cpu() - c0
                if valid:
                    res.masks_us.append(d / 1e3)
                    res.masks_cpu_us.append(c / 1e3)
                if not _bit(row, tid):
                    ok = False
                    break
                accept(tid)
            if ok:
                c0 = cpu()
                t0 = clock()
                fill(mask)
                d = clock() - t0
                c = cpu() - c0
                if valid:
                    res.masks_us.append(d / 1e3)
                    res.masks_cpu_us.append(c / 1e3)
                ok = _bit(row, self.eos)
            res.accepted.append(ok)
        return res


class LLGuidance:
    name = "llguidance"

    def __init__(self, tok: Any, eos: int) -> None:
        import llguidance
        import llguidance.hf

        self.llg = llguidance
        self.tok = llguidance.hf.from_tokenizer(tok, n_vocab=len(tok), eos_token=eos)
        self.mask = np.zeros((1, (len(tok) + 31) // 32), dtype=np.int32)
        self.addr, self.nbytes = self.mask.ctypes.data, self.mask.nbytes
        m = llguidance.LLMatcher(self.tok, llguidance.LLMatcher.grammar_from_regex("x"), log_level=0)
        m.unsafe_compute_mask_ptr(self.addr, self.nbytes)

    def run(self, case: Case) -> Result:
        LLMatcher, row, addr, nbytes = self.llg.LLMatcher, self.mask[0], self.addr, self.nbytes
        clock, cpu = time.perf_counter_ns, time.thread_time_ns
        t0 = clock()
        try:
            grammar = LLMatcher.grammar_from_json_schema(case.schema)
            m = LLMatcher(self.tok, grammar, log_level=0)
            if m.is_error():
                return Result(error=m.get_error())
            m.unsafe_compute_mask_ptr(addr, nbytes)
        except Exception as e:  # noqa: BLE001 - a peer's compile failure is a result
            return Result(error=f"{type(e).__name__}: {e}")
        if m.is_error():
            return Result(error=m.get_error())
        res = Result(compile_us=(clock() - t0) / 1e3)
        for ids, valid in zip(case.ids, case.valid):
            m = LLMatcher(self.tok, grammar, log_level=0)
            ok = True
            for tid in ids.tolist():
                c0 = cpu()
                t0 = clock()
                m.unsafe_compute_mask_ptr(addr, nbytes)
                d = clock() - t0
                c = cpu() - c0
                if valid:
                    res.masks_us.append(d / 1e3)
                    res.masks_cpu_us.append(c / 1e3)
                if m.is_error() or not _bit(row, tid) or not m.consume_token(tid):
                    ok = False
                    break
            if ok:
                c0 = cpu()
                t0 = clock()
                m.unsafe_compute_mask_ptr(addr, nbytes)
                d = clock() - t0
                c = cpu() - c0
                if valid:
                    res.masks_us.append(d / 1e3)
                    res.masks_cpu_us.append(c / 1e3)
                ok = m.is_accepting() and not m.is_error()
            res.accepted.append(ok)
        return res


class XGrammar:
    name = "xgrammar"

    def __init__(self, tok: Any, eos: int) -> None:
        import torch
        import xgrammar as xgr

        self.xgr = xgr
        info = xgr.TokenizerInfo.from_huggingface(tok, vocab_size=len(tok), stop_token_ids=[eos])
        self.compiler = xgr.GrammarCompiler(info, max_threads=1, cache_enabled=False)
        self.eos = eos
        self.mask = torch.zeros((1, (len(tok) + 31) // 32), dtype=torch.int32)
        self.row = self.mask.numpy()[0]
        xgr.GrammarMatcher(self.compiler.compile_regex("x")).fill_next_token_bitmask(self.mask)

    def run(self, case: Case) -> Result:
        xgr, mask, row = self.xgr, self.mask, self.row
        clock, cpu = time.perf_counter_ns, time.thread_time_ns
        t0 = clock()
        try:
            cg = self.compiler.compile_json_schema(case.schema, any_whitespace=True, strict_mode=False)
            xgr.GrammarMatcher(cg).fill_next_token_bitmask(mask)
        except Exception as e:  # noqa: BLE001 - a peer's compile failure is a result
            return Result(error=f"{type(e).__name__}: {e}")
        res = Result(compile_us=(clock() - t0) / 1e3)
        for ids, valid in zip(case.ids, case.valid):
            m = xgr.GrammarMatcher(cg)
            ok = True
            for tid in ids.tolist():
                c0 = cpu()
                t0 = clock()
                m.fill_next_token_bitmask(mask)
                d = clock() - t0
                c = cpu() - c0
                if valid:
                    res.masks_us.append(d / 1e3)
                    res.masks_cpu_us.append(c / 1e3)
                if not _bit(row, tid) or not m.accept_token(tid):
                    ok = False
                    break
            if ok:
                c0 = cpu()
                t0 = clock()
                m.fill_next_token_bitmask(mask)
                d = clock() - t0
                c = cpu() - c0
                if valid:
                    res.masks_us.append(d / 1e3)
                    res.masks_cpu_us.append(c / 1e3)
                ok = _bit(row, self.eos)
            res.accepted.append(ok)
        return res


ENGINE_CLASSES = {c.name: c for c in (TetherGo, TetherPy, LLGuidance, XGrammar)}


def available(names: list[str]) -> tuple[list[str], dict[str, str]]:
    """The engines of names that can be imported, and why the others cannot."""
    ok, missing = [], {}
    for n in names:
        mod = {"llguidance": "llguidance", "xgrammar": "xgrammar"}.get(n, "tether")
        try:
            __import__(mod)
        except ImportError as e:
            missing[n] = str(e)
            continue
        ok.append(n)
    return ok, missing


def load_tokenizer() -> tuple[Any, int]:
    from transformers import PreTrainedTokenizerFast

    d = Path(os.environ.get("TETHER_TOKENIZERS", ROOT / "build" / "tokenizers"))
    tok = PreTrainedTokenizerFast(tokenizer_file=str(d / "llama3" / "tokenizer.json"), eos_token="<|eot_id|>")
    return tok, int(tok.eos_token_id)


# ---- the run --------------------------------------------------------------------------


def run(cases: list[Case], engines: list[str], tok: Any, eos: int, progress: bool = False) -> dict[str, Tally]:
    for c in cases:
        c.ids = [np.asarray(tok.encode(t, add_special_tokens=False), dtype=np.int32) for t in c.texts]
    objs = [ENGINE_CLASSES[n](tok, eos) for n in engines]
    tallies = {n: Tally() for n in engines}
    started = time.monotonic()
    for i, case in enumerate(cases):
        k = i % len(objs)
        gc.collect()
        gc.disable()
        try:
            for e in objs[k:] + objs[:k]:
                t0 = time.perf_counter()
                r = e.run(case)
                tallies[e.name].wall_s += time.perf_counter() - t0
                tallies[e.name].add(case, r)
        finally:
            gc.enable()
        if progress and (i + 1) % 100 == 0:
            walls = ", ".join(f"{n} {t.wall_s:.0f} s" for n, t in tallies.items())
            print(f"  {i + 1}/{len(cases)} schemas, {time.monotonic() - started:.0f} s ({walls})", file=sys.stderr, flush=True)
    return tallies


def report(tallies: dict[str, Tally], wall_s: float) -> str:
    names = list(tallies)
    peers = [n for n in names if n in PEERS]
    ours = [n for n in names if n.startswith("tether")]
    lines = []
    hdr = f"{'engine':<11} {'schemas':>7} {'compiled':>8} {'pass':>6} {'inv.acc':>7} {'val.rej':>7} {'wall s':>7}"
    lines.append(hdr)
    for n in names:
        t = tallies[n]
        pass_pct = 100 * t.passing / max(t.schemas, 1)
        lines.append(f"{n:<11} {t.schemas:>7} {t.compiled:>8} {t.passing:>6} {t.invalid_accepted:>7} {t.valid_rejected:>7} {t.wall_s:>7.1f}"
                     f"   ({pass_pct:.1f}% pass)")

    def table(title: str, unit: str, get: Any, scale: float) -> None:
        lines.append("")
        lines.append(f"{title} ({unit})      {'n':>7} " + " ".join(f"{('p' + str(p)) if p < 100 else 'max':>9}" for p in PCTS))
        vals = {n: [x / scale for x in pcts(get(tallies[n]))] for n in names}
        for n in names:
            lines.append(f"  {n:<22} {len(get(tallies[n])):>7} " + " ".join(f"{x:>9.2f}" for x in vals[n]))
        for o in ours:
            for p in peers:
                lines.append(f"  {o + '/' + p:<22} {'':>7} " + " ".join(
                    f"{a / b:>8.2f}x" if b and b == b else f"{'-':>9}" for a, b in zip(vals[o], vals[p])))
        if "tether-go" in vals and "tether-py" in vals:
            lines.append(f"  {'tether-py/tether-go':<22} {'':>7} " + " ".join(
                f"{a / b:>8.2f}x" if b else f"{'-':>9}" for a, b in zip(vals["tether-py"], vals["tether-go"])))

    table("mask", "µs", lambda t: t.masks_us, 1.0)
    table("mask, timing thread's CPU time", "µs", lambda t: t.masks_cpu_us, 1.0)
    table("compile: schema -> first mask", "ms", lambda t: t.compile_us, 1000.0)
    lines.append("")
    lines.append(f"masks that spent {OFF_CPU_US / 1000:g} ms or more of their wall time off the CPU "
                 "(descheduled, or stopped by a garbage collector):")
    for n in names:
        w, c = np.asarray(tallies[n].masks_us), np.asarray(tallies[n].masks_cpu_us)
        off = w - c if w.size == c.size else np.zeros(0)
        lines.append(f"  {n:<22} {int((off >= OFF_CPU_US).sum()):>7}")
    for o in ours + peers:
        worst = sorted(tallies[o].worst, reverse=True)[:8]
        if worst:
            lines.append("")
            lines.append(f"slowest masks of {o} (wall, CPU): " + ", ".join(
                f"{s} #{i} {us:.0f}/{cpu_us:.0f} µs" for us, s, i, cpu_us in worst))
    for n in names:
        slow = sorted(tallies[n].compiles, reverse=True)[:4]
        if slow:
            lines.append("")
            lines.append(f"slowest compiles of {n}: " + ", ".join(f"{s} {us / 1000:.1f} ms" for us, s in slow))
    lines.append("")
    lines.append(f"wall time {wall_s:.0f} s")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--limit", type=int, default=int(os.environ.get("BENCH_PEERS_LIMIT", "") or DEFAULT_LIMIT),
                    help="first N schemas of the dev split (0: all; default $BENCH_PEERS_LIMIT)")
    ap.add_argument("--engines", default=os.environ.get("BENCH_PEERS_ENGINES", "") or ",".join(DEFAULT_ENGINES),
                    help=f"comma-separated, of {', '.join(ENGINES)} (default $BENCH_PEERS_ENGINES, else "
                    f"{','.join(DEFAULT_ENGINES)}; 'all' for every one)")
    ap.add_argument("--json", help="write the per-engine numbers to this file")
    args = ap.parse_args(argv)
    want = list(ENGINES) if args.engines == "all" else [e.strip() for e in args.engines.split(",") if e.strip()]
    for e in want:
        if e not in ENGINE_CLASSES:
            ap.error(f"unknown engine {e!r}: one of {', '.join(ENGINES)}")
    engines, missing = available(want)
    for n, why in missing.items():
        print(f"bench-peers: {n} left out: {why}", file=sys.stderr)
    tok, eos = load_tokenizer()
    cases = load_cases(DEV, args.limit)
    print(f"bench-peers: {len(cases)} schemas, engines {', '.join(engines)}, Llama-3 tokenizer ({len(tok)} ids)",
          file=sys.stderr, flush=True)
    t0 = time.monotonic()
    tallies = run(cases, engines, tok, eos, progress=True)
    print(report(tallies, time.monotonic() - t0))
    if args.json:
        out = {n: {"schemas": t.schemas, "compiled": t.compiled, "passing": t.passing,
                   "invalid_accepted": t.invalid_accepted, "valid_rejected": t.valid_rejected,
                   "mask_us": dict(zip(map(str, PCTS), pcts(t.masks_us))), "masks": len(t.masks_us),
                   "mask_cpu_us": dict(zip(map(str, PCTS), pcts(t.masks_cpu_us))),
                   "compile_ms": dict(zip(map(str, PCTS), [x / 1000 for x in pcts(t.compile_us)])),
                   "slowest": sorted(t.worst, reverse=True)[:20],
                   "slowest_compiles": sorted(t.compiles, reverse=True)[:20]}
               for n, t in tallies.items()}
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
