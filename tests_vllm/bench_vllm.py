"""tether against vLLM's own structured-output backends (`make bench-vllm`).

The same constrained workload on CPU vLLM (the cached `make test-vllm` environment) with
``structured_outputs_config={"backend": B}`` for B in tether, xgrammar (vLLM's default)
and guidance (llguidance), each with its default JSON whitespace (what a user who picks
the backend gets: tether's "bounded", xgrammar's and guidance's any whitespace; vLLM
refuses ``disable_any_whitespace`` for backends other than those two), and tether again
as "tether:flexible" with JSON's own whitespace (``TETHER_VLLM_WHITESPACE=flexible``),
the language the other two allow. The random model writes what the grammar lets it, so
output tok/s also measures what each backend let it write (how many requests stay in the
batch how long); the "grammar" columns measure the backend itself: the wall time vLLM
spends in it (bitmasks, accepting tokens, compiling), as a share and per output token.

- model: the tiny random Llama of tests_vllm/conftest.py with the real Llama-3 tokenizer
  (what the backends see is a 128,256-token vocabulary, as with a real Llama-3);
- schemas: the MaskBench dev split (../shared/jsonschemabench/maskbench-dev.jsonl),
  ``--schemas`` of them spread over the file, keeping those that every backend accepts
  (each backend's refusals are printed), one request per schema, all submitted in one
  batch (vLLM schedules them concurrently, up to ``max_num_seqs``);
- per backend, in a fresh process (no grammar cache carried over): first the batch with
  ``max_tokens=1`` — the wall time until every request has its first token, grammar
  compilation included (time to first token of a cold batch) — then the batch again with
  ``max_tokens`` tokens: output tokens per second over the wall time;
- every output is checked: JSON that the schema accepts (jsonschema) when it finished;
  an output cut by ``max_tokens`` is reported as truncated (the random model need not
  close its JSON within the budget) and checked as a prefix the grammar allows only by
  the backend itself.

    .venv-vllm/bin/python tests_vllm/bench_vllm.py [--schemas 48] [--max-tokens 96] [--repeat 1]
"""

from __future__ import annotations

import os

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEV = ROOT.parent / "shared" / "jsonschemabench" / "maskbench-dev.jsonl"
# "tether:flexible": tether with JSON's own whitespace (TETHER_VLLM_WHITESPACE=flexible),
# the whitespace xgrammar and guidance allow by default: the three then constrain to
# nearly the same language, so the random model's seeded outputs stay close and output
# tok/s compares the backends' costs rather than what each one let the model write.
BACKENDS = ["tether", "tether:flexible", "xgrammar", "guidance"]


def load_schemas(n: int) -> list[tuple[str, dict]]:
    lines = [line for line in DEV.read_text(encoding="utf-8").splitlines() if line.strip()]
    picked = [lines[i * len(lines) // n] for i in range(min(n, len(lines)))]
    return [(json.loads(x)["name"], json.loads(x)["schema"]) for x in picked]


def make_llm(model_dir: str, backend: str):
    from vllm import LLM

    import tether.vllm  # noqa: F401  registers the "tether" backend before the config is checked

    backend, _, ws = backend.partition(":")
    if ws:
        os.environ["TETHER_VLLM_WHITESPACE"] = ws
    return LLM(
        model_dir, dtype="float32", enforce_eager=True, kv_cache_memory_bytes=256 * 1024 * 1024,
        max_model_len=1024, max_num_seqs=64, seed=0,
        structured_outputs_config={"backend": backend},
    )


def params(schema: dict, max_tokens: int, seed: int):
    from vllm import SamplingParams
    from vllm.sampling_params import StructuredOutputsParams

    return SamplingParams(max_tokens=max_tokens, seed=seed, temperature=1.0,
                          structured_outputs=StructuredOutputsParams(json=schema))


def worker_filter(args: argparse.Namespace) -> None:
    """Which schemas the backend accepts: one request each, max_tokens=1."""
    llm = make_llm(args.model, args.backend)
    schemas = json.loads(Path(args.schemas_file).read_text())
    ok, refused = [], {}
    for name, schema in schemas:
        try:
            llm.generate(["x"], [params(schema, 1, 0)], use_tqdm=False)
            ok.append(name)
        except Exception as e:  # a refusal: vLLM raises for schemas the backend cannot take
            refused[name] = f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"
    Path(args.out).write_text(json.dumps({"ok": ok, "refused": refused}))


def time_grammar_work(spent: list[float]) -> None:
    """Adds the seconds vLLM's structured-output manager spends in the backend (filling
    bitmasks, accepting tokens, compiling) to spent[0]."""
    from vllm.v1.structured_output import StructuredOutputManager

    for name in ("grammar_bitmask", "accept_tokens", "grammar_init"):
        f = getattr(StructuredOutputManager, name)

        def timed(*a, _f=f, **k):
            t = time.perf_counter()
            try:
                return _f(*a, **k)
            finally:
                spent[0] += time.perf_counter() - t

        setattr(StructuredOutputManager, name, timed)


def worker_bench(args: argparse.Namespace) -> None:
    t0 = time.perf_counter()
    llm = make_llm(args.model, args.backend)
    load_s = time.perf_counter() - t0
    spent = [0.0]
    time_grammar_work(spent)
    schemas = json.loads(Path(args.schemas_file).read_text())
    prompts = [f"Request {i}, JSON:" for i in range(len(schemas))]
    t0 = time.perf_counter()
    llm.generate(prompts, [params(s, 1, i) for i, (_, s) in enumerate(schemas)], use_tqdm=False)
    ttft_s = time.perf_counter() - t0
    runs = []
    for r in range(args.repeat):
        spent[0] = 0.0
        t0 = time.perf_counter()
        outs = llm.generate(prompts, [params(s, args.max_tokens, 1000 * r + i) for i, (_, s) in enumerate(schemas)],
                            use_tqdm=False)
        wall = time.perf_counter() - t0
        runs.append({"wall_s": wall, "grammar_s": spent[0], "outputs": [
            {"text": o.outputs[0].text, "tokens": len(o.outputs[0].token_ids), "finish": o.outputs[0].finish_reason}
            for o in outs]})
    Path(args.out).write_text(json.dumps({"load_s": load_s, "ttft_s": ttft_s, "runs": runs}))


def spawn(mode: str, backend: str, model: Path, schemas_file: Path, out: Path, args: argparse.Namespace) -> dict:
    cmd = [sys.executable, __file__, "--worker", mode, "--backend", backend, "--model", str(model),
           "--schemas-file", str(schemas_file), "--out", str(out), "--max-tokens", str(args.max_tokens),
           "--repeat", str(args.repeat)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    if p.returncode != 0:
        raise SystemExit(f"{backend} {mode} worker failed ({p.returncode}):\n{p.stderr[-3000:]}")
    return json.loads(out.read_text())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--schemas", type=int, default=48)
    ap.add_argument("--max-tokens", type=int, default=96)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--backends", default=",".join(BACKENDS))
    ap.add_argument("--timeout", type=int, default=1200, help="seconds per worker process")
    ap.add_argument("--worker", choices=["filter", "bench"])
    ap.add_argument("--backend")
    ap.add_argument("--model")
    ap.add_argument("--schemas-file")
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.worker == "filter":
        worker_filter(args)
        return 0
    if args.worker == "bench":
        worker_bench(args)
        return 0

    import jsonschema

    sys.path.insert(0, str(HERE))
    from conftest import build_model

    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        model = build_model(tmp / "model")
        schemas = load_schemas(args.schemas)
        all_file = tmp / "all.json"
        all_file.write_text(json.dumps(schemas))
        accepted = {s[0] for s in schemas}
        for b in backends:
            res = spawn("filter", b, model, all_file, tmp / f"filter-{b}.json", args)
            accepted &= set(res["ok"])
            for name, why in sorted(res["refused"].items()):
                print(f"{b} refuses {name}: {why}")
        common = [s for s in schemas if s[0] in accepted]
        print(f"{len(common)} of {len(schemas)} schemas accepted by every backend ({', '.join(backends)})", flush=True)
        common_file = tmp / "common.json"
        common_file.write_text(json.dumps(common))
        rows = {}
        for b in backends:
            res = spawn("bench", b, model, common_file, tmp / f"bench-{b}.json", args)
            toks, walls, grammar, valid, invalid, truncated, bad = 0, [], 0.0, 0, 0, 0, []
            for run in res["runs"]:
                walls.append(run["wall_s"])
                grammar += run["grammar_s"]
                for (name, schema), o in zip(common, run["outputs"], strict=True):
                    toks += o["tokens"]
                    if o["finish"] != "stop":
                        truncated += 1
                        continue
                    try:
                        jsonschema.validate(json.loads(o["text"]), schema)
                        valid += 1
                    except Exception as e:  # not JSON, or not accepted by the schema
                        invalid += 1
                        bad.append(f"{name}: {type(e).__name__}: {str(e).splitlines()[0][:120]} in {o['text'][:120]!r}")
            wall = sum(walls)
            rows[b] = dict(tok_s=toks / wall, ttft_s=res["ttft_s"], valid=valid, invalid=invalid, tokens=toks,
                           grammar_share=grammar / wall, grammar_us_tok=1e6 * grammar / max(toks, 1),
                           truncated=truncated, total=valid + invalid + truncated, load_s=res["load_s"], bad=bad)
            print(f"{b}: done ({toks} tokens in {wall:.1f} s)", flush=True)

    print(f"\nvLLM (CPU) structured outputs, {len(common)} schemas of the MaskBench dev split in one batch, "
          f"max_tokens {args.max_tokens}, repeat {args.repeat}, each backend's default whitespace "
          f"(tether:flexible: JSON's own, as xgrammar's and guidance's default), same run; grammar: the "
          f"share of the wall time vLLM spent in the backend (bitmasks, accepting tokens, compiling) and "
          f"that time per output token:")
    print(f"{'backend':16s} {'output tok/s':>12s} {'tokens':>7s} {'grammar':>8s} {'µs/tok':>7s} "
          f"{'TTFT cold batch (s)':>20s} {'valid':>7s} {'invalid':>8s} {'truncated':>10s}")
    for b, r in rows.items():
        print(f"{b:16s} {r['tok_s']:12.1f} {r['tokens']:7d} {r['grammar_share']:8.1%} {r['grammar_us_tok']:7.1f} "
              f"{r['ttft_s']:20.2f} {r['valid']:7d} {r['invalid']:8d} {r['truncated']:10d}")
    for t in (b for b in rows if b.startswith("tether")):
        for b in (b for b in rows if not b.startswith("tether")):
            print(f"ratio {t}/{b}: throughput {rows[t]['tok_s'] / rows[b]['tok_s']:.2f}x, "
                  f"TTFT {rows[t]['ttft_s'] / rows[b]['ttft_s']:.2f}x, "
                  f"grammar time per token {rows[t]['grammar_us_tok'] / rows[b]['grammar_us_tok']:.2f}x")
    for b, r in rows.items():
        for line in r["bad"][:10]:
            print(f"{b} INVALID {line}")
    return 1 if any(r["invalid"] for r in rows.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
