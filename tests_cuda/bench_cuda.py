"""bench-model-cuda: tether's CUDA engine against PyTorch eager and compiled, same run, same GPU.

    python bench_cuda.py MODELS_DIR [--repeat 5] [--prompt-tokens 128]
        [--decode smollm-bf16=128,llama1b-bf16=64] [--compile-timeout 200] [--budget-s 300]

For the SmolLM-135M and Llama-3.2-1B shapes (bf16, batch 1, make_models.py's random
weights), a prompt of exactly 128 tokens (BOS + text) and greedy decoding:

- tether:   `tether-cuda generate --device cuda --temp 0 --ignore-eog --max-tokens D+1
            --json`, one process per run; prefill_tok_s and decode_tok_s as it reports them
            (the prompt's forward pass + first sample; D single-token steps).
- eager:    transformers' LlamaForCausalLM in bf16 (SDPA attention) under inference_mode:
            one forward over the prompt with logits_to_keep=1 (prefill), then D forwards
            with a DynamicCache and argmax (decode); synchronised before and after each
            phase. This is the loop `generate` runs, without its bookkeeping.
- compiled: a StaticCache and the decode step (forward + argmax) under
            torch.compile(mode="reduce-overhead", fullgraph=True; fullgraph=False if that
            fails), in a hand-written loop calling torch.compiler.cudagraph_mark_step_begin()
            each step (transformers' generate(cache_implementation="static") with a compiled
            forward fails on torch 2.11 / transformers 5.17). It runs in its own process,
            started first and given --compile-timeout seconds to compile and warm up; if it
            fails or times out, the table says "compiled: failed (reason)" and the run goes on.
Warm-ups are not measured. Then --repeat rounds, each running tether, eager and compiled
once (interleaved, so drift hits all three); the median is reported, with min and max.

Decode bound: the HBM copy bandwidth (torch copy of a 1 GiB tensor, bytes read + written
per second, best of 20) over the bytes one decode step must read: every weight once in
bf16 (the tied embedding once, as the output layer) plus the KV cache at its average
length (prompt + D/2 positions), counted in bf16 (fewer bytes: a higher bound, so a
conservative fraction). tether's fraction of it is printed.

Acceptance (GPU run; PASS/FAIL lines, counted in the exit status):
    Llama-3.2-1B decode >= 60% of the bound, >= 2x compiled, >= 10x eager;
    SmolLM-135M decode >= 1,000 tok/s (goal 2,000); prefill >= eager on both.
In a dry run (TETHER_CUDA_DRYRUN=1: CPU, tiny shapes) the same table is printed, marked
as a dry run, and the acceptance lines are printed as "DRY ... (not evaluated)".
"""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

from harness import (
    DRY_RUN,
    TAG,
    Checks,
    banner,
    generate_json,
    manifest,
    prompt_for,
    quiet_transformers,
)

SHAPES = ("smollm-bf16", "llama1b-bf16")
DEFAULT_DECODE = "smollm-bf16=128,llama1b-bf16=64"


# ---- measurements -------------------------------------------------------------------
def sync(device: str) -> None:
    import torch

    if device == "cuda":
        torch.cuda.synchronize()


def bandwidth(device: str) -> tuple[float, str]:
    """Copy bandwidth (bytes read + written per second), best of the trials, and how."""
    import torch

    if device == "cuda":
        n, trials = 1 << 30, 20
        a = torch.ones(n // 2, dtype=torch.bfloat16, device="cuda")
        b = torch.empty_like(a)
        for _ in range(3):
            b.copy_(a)
        best = float("inf")
        for _ in range(trials):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            b.copy_(a)
            e.record()
            e.synchronize()
            best = min(best, s.elapsed_time(e) / 1e3)
        del a, b
        torch.cuda.empty_cache()
        return 2 * n / best, f"HBM copy of a 1 GiB tensor (torch, read + written), best of {trials}"
    n, trials = 256 << 20, 5
    a = torch.ones(n // 4, dtype=torch.float32)
    b = torch.empty_like(a)
    b.copy_(a)
    best = float("inf")
    for _ in range(trials):
        t = time.perf_counter()
        b.copy_(a)
        best = min(best, time.perf_counter() - t)
    return 2 * n / best, f"CPU memory copy of 256 MiB (torch, read + written), best of {trials}"


def decode_bytes(cfg: dict, prompt: int, decode: int) -> float:
    """Bytes one decode step reads on average: bf16 weights once, plus the bf16 KV cache."""
    h, inter, v, n = (
        cfg["hidden_size"],
        cfg["intermediate_size"],
        cfg["vocab_size"],
        cfg["num_hidden_layers"],
    )
    heads, kvh = (
        cfg["num_attention_heads"],
        cfg.get("num_key_value_heads") or cfg["num_attention_heads"],
    )
    hd = cfg.get("head_dim") or h // heads
    q, kv = heads * hd, kvh * hd
    per_layer = 2 * h * q + 2 * h * kv + 3 * h * inter + 2 * h  # q,o; k,v; gate,up,down; two norms
    params = (
        n * per_layer + v * h + h
    )  # the output layer (tied: the embedding, read once) + final norm
    return 2 * params + n * 2 * kv * (prompt + decode / 2) * 2


def run_eager(model, ids: list[int], decode: int, device: str) -> tuple[float, float, list[int]]:
    import torch
    from transformers import DynamicCache

    with torch.inference_mode():
        x = torch.tensor([ids], device=device)
        cache = DynamicCache()
        sync(device)
        t0 = time.perf_counter()
        out = model(input_ids=x, past_key_values=cache, use_cache=True, logits_to_keep=1)
        nxt = out.logits[:, -1].argmax(-1, keepdim=True)
        sync(device)
        t1 = time.perf_counter()
        toks = [nxt]
        for _ in range(decode):
            out = model(input_ids=nxt, past_key_values=cache, use_cache=True)
            nxt = out.logits[:, -1].argmax(-1, keepdim=True)
            toks.append(nxt)
        sync(device)
        t2 = time.perf_counter()
    return len(ids) / (t1 - t0), decode / (t2 - t1), torch.cat(toks, 1)[0].tolist()


def run_tether(d: Path, text: str, ids: list[int], decode: int) -> tuple[float, float, list[int]]:
    r = generate_json(
        d,
        text,
        "--temp",
        "0",
        "--seed",
        "1",
        "--ignore-eog",
        "--max-tokens",
        str(decode + 1),
        device="cuda",
        timeout=180,
    )
    if r["prompt_ids"] != ids:
        raise RuntimeError(
            f"tether tokenized the prompt into {len(r['prompt_ids'])} ids, not the {len(ids)} expected"
        )
    if r["decode_steps"] != decode:
        raise RuntimeError(f"tether ran {r['decode_steps']} decode steps, not {decode}")
    return r["prefill_tok_s"], r["decode_tok_s"], r["ids"]


# ---- compiled PyTorch, in a worker process ----------------------------------------------
def compiled_worker(d: Path, ids: list[int], decode: int, device: str) -> int:
    """Protocol on stdout: READY {json} | ERROR msg; then per stdin line RUN: RESULT {json}."""
    import torch
    import transformers
    from transformers import StaticCache

    quiet_transformers()
    if DRY_RUN:
        torch.set_num_threads(2)

    def say(s: str) -> None:
        sys.stdout.write(s + "\n")
        sys.stdout.flush()

    try:
        model = transformers.LlamaForCausalLM.from_pretrained(
            d, dtype=torch.bfloat16, attn_implementation="sdpa"
        )
        model = model.to(device).eval()
        try:  # transformers 5
            cache = StaticCache(config=model.config, max_cache_len=len(ids) + decode + 8)
        except TypeError:  # transformers 4.4x-4.5x
            cache = StaticCache(
                config=model.config,
                max_batch_size=1,
                max_cache_len=len(ids) + decode + 8,
                device=device,
                dtype=torch.bfloat16,
            )

        def step(cur, pos):
            logits = model(
                input_ids=cur,
                position_ids=pos.unsqueeze(0),
                cache_position=pos,
                past_key_values=cache,
                use_cache=True,
                return_dict=False,
            )[0]
            return logits[:, -1].argmax(-1, keepdim=True)

        def one_run(fn) -> tuple[float, float, list[int]]:
            # no_grad, not inference_mode: the static cache's tensors and the CUDA graphs'
            # inputs stay ordinary tensors, as transformers' static-cache recipe has them.
            with torch.no_grad():
                cache.reset()
                x = torch.tensor([ids], device=device)
                sync(device)
                t0 = time.perf_counter()
                logits = model(
                    input_ids=x,
                    cache_position=torch.arange(len(ids), device=device),
                    past_key_values=cache,
                    use_cache=True,
                    logits_to_keep=1,
                ).logits
                nxt = logits[:, -1].argmax(-1, keepdim=True)
                sync(device)
                t1 = time.perf_counter()
                pos = torch.tensor([len(ids)], device=device)
                toks = [nxt]
                for _ in range(decode):
                    torch.compiler.cudagraph_mark_step_begin()
                    # A CUDA graph's output is overwritten by the next replay: copy it.
                    nxt = fn(nxt.clone(), pos).clone()
                    toks.append(nxt)
                    pos += 1
                sync(device)
                t2 = time.perf_counter()
            return len(ids) / (t1 - t0), decode / (t2 - t1), torch.cat(toks, 1)[0].tolist()

        mode, err = "", ""
        t = time.perf_counter()
        for fullgraph in (True, False):
            try:
                torch._dynamo.reset()
                fn = torch.compile(step, mode="reduce-overhead", fullgraph=fullgraph)
                one_run(fn)  # compiles
                one_run(fn)  # records the CUDA graphs
                one_run(fn)  # replays them
                mode = f"fullgraph={fullgraph}"
                break
            except Exception as e:  # noqa: BLE001
                err = f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"
                print(
                    f"compiled (fullgraph={fullgraph}) failed: {err}", file=sys.stderr, flush=True
                )
        if not mode:
            say(f"ERROR {err}")
            return 1
        say("READY " + json.dumps({"mode": mode, "compile_s": time.perf_counter() - t}))
    except Exception as e:  # noqa: BLE001
        say(f"ERROR {type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}")
        return 1
    for line in sys.stdin:
        if line.strip() != "RUN":
            break
        try:
            p, dec, out = one_run(fn)
            say("RESULT " + json.dumps({"prefill": p, "decode": dec, "ids": out}))
        except Exception as e:  # noqa: BLE001
            say(f"ERROR {type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}")
            return 1
    return 0


class Worker:
    """The compiled-PyTorch worker process for one model, driven over a pipe."""

    def __init__(self, name: str, d: Path, ids: list[int], decode: int, log: Path) -> None:
        self.name, self.failed, self.mode = name, "", ""
        self.log = log
        self.proc = subprocess.Popen(
            [
                sys.executable,
                str(Path(__file__).resolve()),
                "--compiled-worker",
                str(d),
                "--worker-ids",
                ",".join(map(str, ids)),
                "--worker-decode",
                str(decode),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log.open("w"),
            text=True,
            bufsize=1,
            start_new_session=True,
        )

    def _read(self, deadline: float) -> str:
        while True:
            left = deadline - time.time()
            if left <= 0:
                raise TimeoutError("timed out")
            r, _, _ = select.select([self.proc.stdout], [], [], left)
            if r:
                line = self.proc.stdout.readline()
                if not line:
                    raise RuntimeError(f"worker exited ({self.proc.wait()})")
                if line.startswith(("READY", "RESULT", "ERROR")):
                    return line.strip()

    def ready(self, deadline: float) -> bool:
        if self.failed:
            return False
        try:
            line = self._read(deadline)
        except (TimeoutError, RuntimeError) as e:
            return self.fail(f"not ready: {e}")
        if not line.startswith("READY"):
            return self.fail(line.removeprefix("ERROR ").strip())
        info = json.loads(line.split(" ", 1)[1])
        self.mode = f"{info['mode']}, compiled and warmed up in {info['compile_s']:.0f} s"
        return True

    def run(self, timeout: float) -> tuple[float, float, list[int]] | None:
        if self.failed:
            return None
        try:
            self.proc.stdin.write("RUN\n")
            self.proc.stdin.flush()
            line = self._read(time.time() + timeout)
        except (TimeoutError, RuntimeError, BrokenPipeError) as e:
            self.fail(f"run: {e}")
            return None
        if not line.startswith("RESULT"):
            self.fail(line.removeprefix("ERROR ").strip())
            return None
        r = json.loads(line.split(" ", 1)[1])
        return r["prefill"], r["decode"], r["ids"]

    def fail(self, why: str) -> bool:
        self.failed = why
        tail = (
            self.log.read_text(errors="replace").strip().splitlines()[-12:]
            if self.log.exists()
            else []
        )
        print(
            f"compiled PyTorch for {self.name} failed: {why}"
            + ("\n   " + "\n   ".join(tail) if tail else ""),
            flush=True,
        )
        self.stop(kill=True)
        return False

    def stop(self, kill: bool = False) -> None:
        """End the worker: politely (close its stdin) or, after a failure, at once."""
        if self.proc.poll() is not None:
            return
        if not kill:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=20)
                return
            except (subprocess.TimeoutExpired, OSError):
                pass
        # Its process group: inductor's compile workers go with it.
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()


# ---- the benchmark ------------------------------------------------------------------------
def med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def cell(xs: list[float]) -> str:
    return f"{med(xs):,.0f}" if xs else "-"


def spread(xs: list[float]) -> str:
    return f"{med(xs):,.1f} ({min(xs):,.1f}-{max(xs):,.1f})" if xs else "-"


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("models", type=Path, nargs="?")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--prompt-tokens", type=int, default=128)
    ap.add_argument(
        "--decode", default=DEFAULT_DECODE, help="NAME=tokens,... decode steps per model"
    )
    ap.add_argument(
        "--compile-timeout",
        type=float,
        default=200.0,
        help="seconds for compiled PyTorch to be ready",
    )
    ap.add_argument(
        "--budget-s",
        type=float,
        default=0.0,
        help="whole run's time budget (0: none); the compile timeout shrinks to fit it",
    )
    ap.add_argument("--compiled-worker", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--worker-ids", help=argparse.SUPPRESS)
    ap.add_argument("--worker-decode", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    device = "cpu" if DRY_RUN else "cuda"
    if args.compiled_worker:
        return compiled_worker(
            args.compiled_worker,
            [int(x) for x in args.worker_ids.split(",")],
            args.worker_decode,
            device,
        )
    if args.models is None:
        ap.error("MODELS_DIR is required")
    t_start = time.time()
    checks = Checks()
    print(f"== bench_cuda.py: {banner()}", flush=True)

    import torch
    import transformers

    quiet_transformers()
    if device == "cuda" and not torch.cuda.is_available():
        checks.fail("bench-setup", "torch.cuda.is_available() is False")
        return 1
    if DRY_RUN:
        torch.set_num_threads(2)
    decode_of = dict(kv.split("=") for kv in args.decode.split(","))
    models = manifest(args.models)
    todo = [n for n in SHAPES if n in models]
    if len(todo) != len(SHAPES):
        checks.fail("bench-setup", f"models.json lacks {sorted(set(SHAPES) - set(todo))}")
        return 1

    # 1. Start the compiled workers (they compile on the CPU in parallel), then load and
    #    warm up the eager models and tether while they do; nothing is timed until every
    #    worker is ready or has failed, so compiling never overlaps a measurement.
    runs: dict[str, dict] = {}
    for name in todo:
        m = models[name]
        d = Path(m["dir"])
        text, ids = prompt_for(d, args.prompt_tokens)
        dec = int(decode_of.get(name, 64))
        runs[name] = {
            "m": m,
            "d": d,
            "text": text,
            "ids": ids,
            "decode": dec,
            "tp": [],
            "td": [],
            "ep": [],
            "ed": [],
            "cd": [],
            "cp": [],
            "err": "",
        }
    timeout = args.compile_timeout
    if args.budget_s:
        # Leave about 20 s per model and round for the measured runs after compiling.
        timeout = min(
            timeout,
            args.budget_s - (time.time() - t_start) - 20 * len(todo) * (1 + args.repeat / 5) - 15,
        )
    workers: dict[str, Worker] = {}
    for name, r in runs.items():
        if timeout < 20:
            continue
        workers[name] = Worker(
            name, r["d"], r["ids"], r["decode"], args.models / f"compiled-{name}.log"
        )
    deadline = time.time() + timeout
    eager = {}
    for name, r in runs.items():
        eager[name] = (
            transformers.LlamaForCausalLM.from_pretrained(
                r["d"], dtype=torch.bfloat16, attn_implementation="sdpa"
            )
            .to(device)
            .eval()
        )
        run_eager(eager[name], r["ids"], 4, device)
        try:
            run_tether(r["d"], r["text"], r["ids"], 4)
        except Exception as e:  # noqa: BLE001
            r["err"] = f"{type(e).__name__}: {e}"
    for name, r in runs.items():
        if name not in workers:
            r["cmode"] = (
                f"failed (not started: only {timeout:.0f} s to compile, from --compile-timeout "
                "and --budget-s)"
            )
        elif workers[name].ready(deadline):
            r["cmode"] = workers[name].mode
        else:
            r["cmode"] = f"failed ({workers[name].failed})"
    bw, bw_how = bandwidth(device)

    # 2. Interleaved rounds.
    for name, r in runs.items():
        w = workers.get(name)
        for _ in range(args.repeat):
            if not r["err"]:
                try:
                    p, dcd, _ = run_tether(r["d"], r["text"], r["ids"], r["decode"])
                    r["tp"].append(p)
                    r["td"].append(dcd)
                except Exception as e:  # noqa: BLE001
                    r["err"] = f"{type(e).__name__}: {e}"
            p, dcd, _ = run_eager(eager[name], r["ids"], r["decode"], device)
            r["ep"].append(p)
            r["ed"].append(dcd)
            if w is not None:
                res = w.run(timeout=120)
                if res is None:
                    r["cmode"] = f"failed ({w.failed})"
                    w = None
                else:
                    r["cp"].append(res[0])
                    r["cd"].append(res[1])
        if workers.get(name):
            workers[name].stop()
        del eager[name]
        if device == "cuda":
            torch.cuda.empty_cache()

    # 3. The table.
    where = torch.cuda.get_device_name(0) if device == "cuda" else "CPU (dry run)"
    print()
    print(
        f"== bench-model-cuda{' [DRY RUN: CPU, tiny shapes, NOT A GPU RESULT]' if DRY_RUN else ''}: {where}, "
        f"torch {torch.__version__}, transformers {transformers.__version__}; bf16, batch 1, "
        f"{args.prompt_tokens}-token prompt, greedy; tok/s, median of {args.repeat} interleaved runs"
    )
    print(f"memory bandwidth: {bw / 1e12:.3f} TB/s ({bw_how})")
    print(
        "| model shape | decode steps | tether prefill | eager prefill | tether decode | eager decode | "
        "compiled decode | decode bound | tether % of bound | tether / compiled | tether / eager |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    acc: list[tuple[str, bool, str]] = []
    for name, r in runs.items():
        m = r["m"]
        cfg = json.loads((r["d"] / "config.json").read_text())
        nbytes = decode_bytes(cfg, len(r["ids"]), r["decode"])
        bound = bw / nbytes
        td, ed, cd, tp, ep = med(r["td"]), med(r["ed"]), med(r["cd"]), med(r["tp"]), med(r["ep"])
        label = m["shape"] + (
            f" (dry: hidden {m['hidden_size']}, {m['num_hidden_layers']} layers)" if DRY_RUN else ""
        )
        print(
            f"| {label} | {r['decode']} | {cell(r['tp'])} | {cell(r['ep'])} | {cell(r['td'])} | {cell(r['ed'])} | "
            f"{cell(r['cd']) if r['cd'] else 'failed'} | {bound:,.0f} | "
            f"{td / bound:.0%} | {td / cd:.2f}x | {td / ed:.2f}x |".replace("nan%", "-").replace(
                "nanx", "-"
            )
        )
        r.update(bound=bound, nbytes=nbytes)
        if r["err"]:
            checks.fail(f"bench-tether-{name}", r["err"])
        short = "llama1b" if name.startswith("llama1b") else "smollm"
        first = len(acc)
        if short == "llama1b":
            acc.append(
                (
                    f"accept-{short}-decode-60pct-of-bound",
                    td >= 0.6 * bound,
                    f"tether decode {td:,.0f} tok/s = {td / bound:.0%} of the {bound:,.0f} tok/s bound (need >= 60%)",
                )
            )
            acc.append(
                (
                    f"accept-{short}-decode-2x-compiled",
                    bool(r["cd"]) and td >= 2 * cd,
                    f"tether {td:,.0f} vs compiled {cd:,.0f} tok/s = {td / cd:.2f}x (need >= 2x)"
                    if r["cd"]
                    else f"compiled PyTorch {r['cmode']}: the ratio was not measured",
                )
            )
            acc.append(
                (
                    f"accept-{short}-decode-10x-eager",
                    td >= 10 * ed,
                    f"tether {td:,.0f} vs eager {ed:,.0f} tok/s = {td / ed:.1f}x (need >= 10x)",
                )
            )
        else:
            acc.append(
                (
                    f"accept-{short}-decode-1000",
                    td >= 1000,
                    f"tether decode {td:,.0f} tok/s (need >= 1,000; goal 2,000{', met' if td >= 2000 else ''})",
                )
            )
        acc.append(
            (
                f"accept-{short}-prefill-ge-eager",
                tp >= ep,
                f"tether prefill {tp:,.0f} vs eager {ep:,.0f} tok/s = {tp / ep:.2f}x (need >= 1x)",
            )
        )
        if not r["td"]:
            acc[first:] = [
                (n, False, f"not measured: tether-cuda did not run ({r['err'][:160]})")
                for n, _, _ in acc[first:]
            ]
    print()
    print("runs, median (min-max) tok/s:")
    for name, r in runs.items():
        print(
            f"  {r['m']['shape']}: tether prefill {spread(r['tp'])}, decode {spread(r['td'])}; eager prefill "
            f"{spread(r['ep'])}, decode {spread(r['ed'])}; compiled decode {spread(r['cd'])} "
            f"[compiled: {r['cmode']}; its prefill (eager, StaticCache) {spread(r['cp'])}]; "
            f"{r['nbytes'] / 1e6:,.1f} MB read per decode step"
        )
    print()
    for name, ok, detail in acc:
        if DRY_RUN:
            print(
                f"DRY {name}: {detail} (not evaluated: CPU numbers from a dry run, NOT A GPU RESULT)"
            )
        else:
            checks.report(name, ok, detail)
    print(
        f"== bench_cuda.py: {len(checks.passed)} passed, {len(checks.failed)} failed{TAG} "
        f"({time.time() - t_start:.0f} s)",
        flush=True,
    )
    return checks.exit_code()


if __name__ == "__main__":
    sys.exit(main())
