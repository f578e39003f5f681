"""Go (tether generate) vs PyTorch CPU and llama.cpp on a SmolLM-135M-shaped random model:
f32, bf16 and 8-bit weights.

Builds LlamaForCausalLM with SmolLM-135M's shape (hidden 576, 30 layers, 9 query heads
sharing 3 key/value heads, intermediate 1536, vocab 49152, tied embeddings, rope_theta
10000) and random weights, saves it as f32 and as bf16 safetensors with the Llama-2
tokenizer (no SmolLM tokenizer is among the test tokenizers). The tokenizer has 32,000
tokens; the model keeps SmolLM's 49,152 rows, so ids 32,000..49,151 are padding the
tokenizer never produces (gocore/vocab treats them as such) and the products have exactly
SmolLM's sizes.

Then, per dtype, in the same run and with the same number of threads (2 unless --threads):
- Go: `tether generate --temp 0 --ignore-eog` on that checkpoint, reading its prefill and
  decode tokens/s. Weight matrices are stored in packed panels where the CPU has
  AVX512_VBMI (every value exactly, bf16 in 12 bits and float32 in 28: see
  gocore/model/packed.go; decode multiplies them by float32 inputs exactly). A bf16
  checkpoint's prefill by default rounds its inputs to bf16 and multiplies in bf16
  (AVX512-BF16), as PyTorch and llama.cpp compute a bf16 model; for bf16 also with
  --exact-bf16 (prefill multiplies float32 inputs exactly);
- PyTorch: the model in that dtype (bf16 weights and activations for bf16; MKL and
  oneDNN kernels, SDPA attention), one forward over the prompt keeping only the last
  position's logits (logits_to_keep=1, as `generate` does) for prefill, then one forward
  per token with the KV cache (DynamicCache) and argmax (decode), under inference_mode:
  the eager loop `generate` runs, without its bookkeeping. PyTorch gets its best thread
  setting within the budget: it runs with torch.set_num_threads(n) for n = 1 and n =
  threads, and each phase reports the faster of the two medians (on a busy machine
  OpenMP's spinning barriers can make two threads slower than one; the comparison
  should not gain from that).
- llama.cpp (with --llamacpp DRIVER, as `make bench-model` passes it): the same
  checkpoint written as GGUF (tests_py/llamacpp/to_gguf.py with the gguf-py of the
  pinned llama.cpp release: f32 for f32, bf16 for bf16, Q8_0 for int8), run by
  tests_py/llamacpp/driver.c over libllama: the same prompt ids as one batch (prefill),
  then one token per step, argmax (decode), same threads, one process per run. For
  each precision the greedy ids of Go and llama.cpp are compared and the line says
  whether they are identical (for f32 they should be: same weights, same math up to
  rounding order; for bf16 and 8-bit llama.cpp rounds its activations too).
- int8: Go with `--weights int8` on the f32 checkpoint (blocks of 32 int8 weights with
  one scale, activations quantized per block of 32, as llama.cpp's Q8_0 computes)
  against llama.cpp with Q8_0 made from the same checkpoint; PyTorch has no
  comparable path, so it is left out there.
Every side is warmed up once (per thread setting), then run --repeat times (default 5)
interleaved; the median is reported, with min and max, and the ratios of medians.
On a loaded machine llama.cpp's runs are bimodal: its worker threads spin-wait between
operations, and when the OS deschedules one of them a run can drop to a few tokens/s
(seen here: 2-5 tok/s against 130-140 in the same minute); Go's pool spins briefly and
then lets the caller take the work. Read the min/max columns, and run it on a quiet
machine.

It also measures the memory bandwidth (a STREAM-like copy of 256 MiB, bytes read +
written per second, best of 10 trials with 1 and with --threads threads), computes the bytes one decode
step must read (every weight once, the tied embedding once as the output layer, and on
average half the KV cache the run fills) and prints the bound bandwidth/bytes in
tokens/s and the fraction of it each decode reaches (8-bit: 34 bytes per 32 weights, as Q8_0
stores them and `--weights int8` does). When Go reports packed panels, a second bound for
the bytes Go reads (12 bits per bf16 matrix weight, 28 per float32 one, and a 16-byte
table per 16 rows) is printed with Go's fraction of it.

    .venv/bin/python tests_py/bench_model.py [--prompt-tokens 128] [--decode-tokens 64]
        [--repeat 5] [--dtypes f32,bf16,int8] [--llamacpp DRIVER --gguf-py DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TETHER = ROOT / "build" / "bin" / "tether"
TOKENIZERS = Path(os.environ.get("TETHER_TOKENIZERS", ROOT / "build" / "tokenizers"))
TEXT = (
    "Grammar-constrained decoding keeps a language model on the rails of a schema: at "
    "every step the grammar engine computes which tokens may come next and the sampler "
    "picks only among them. "
)


def build(out: Path, dtype: str) -> None:
    import shutil

    import torch
    import transformers

    cfg = transformers.LlamaConfig(
        hidden_size=576,
        intermediate_size=1536,
        num_hidden_layers=30,
        num_attention_heads=9,
        num_key_value_heads=3,
        vocab_size=49152,
        max_position_embeddings=2048,
        rms_norm_eps=1e-5,
        rope_theta=10000.0,
        tie_word_embeddings=True,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=2,
    )
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(cfg).to(torch.float32)
    if dtype == "bf16":
        model = model.to(torch.bfloat16)
    model.save_pretrained(out)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(TOKENIZERS / "llama2" / f, out / f)


def prompt_text(tokens: int) -> tuple[str, list[int]]:
    import tokenizers

    tok = tokenizers.Tokenizer.from_file(str(TOKENIZERS / "llama2" / "tokenizer.json"))
    text = TEXT
    while len(tok.encode(text).ids) < tokens:
        text += TEXT
    ids = tok.encode(text).ids[:tokens]
    # Cut the text where the ids end, so both sides see exactly `tokens` tokens.
    text = tok.decode(ids[1:])  # without BOS, which encode adds back
    ids = tok.encode(text).ids
    return text, ids


def run_go(model: Path, text: str, decode: int, threads: int, extra: tuple[str, ...] = (), with_ids: bool = False):
    proc = subprocess.run(
        [
            str(TETHER), "generate", "--model", str(model), "--prompt", text, "--temp", "0",
            "--max-tokens", str(decode + 1), "--ignore-eog", "--threads", str(threads), "--json",
            *extra,
        ],  # fmt: skip
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "GOMAXPROCS": str(threads)},
    )
    if proc.returncode != 0:
        sys.exit(f"tether generate failed:\n{proc.stderr}")
    out = json.loads(proc.stdout)
    if with_ids:
        return out["prefill_tok_s"], out["decode_tok_s"], out["prompt_ids"], out["ids"], out["engine"]
    return out["prefill_tok_s"], out["decode_tok_s"], out["prompt_ids"], out["engine"]


def run_llamacpp(driver: Path, gguf: Path, ids: list[int], decode: int, threads: int) -> tuple[float, float, list[int]]:
    proc = subprocess.run(
        [str(driver), str(gguf), str(threads), str(decode), *map(str, ids)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        sys.exit(f"llama.cpp driver failed on {gguf}:\n{proc.stderr}")
    out = json.loads(proc.stdout)
    return out["prefill_tok_s"], out["decode_tok_s"], out["ids"]


def make_gguf(src: Path, out: Path, kind: str, gguf_py: Path) -> None:
    if out.exists():
        return
    t = time.perf_counter()
    tmp = out.with_suffix(".tmp")
    script = ROOT / "tests_py" / "llamacpp" / "to_gguf.py"
    subprocess.run([sys.executable, str(script), str(src), str(tmp), kind, str(gguf_py)], check=True)
    tmp.rename(out)
    print(f"wrote {out} in {time.perf_counter() - t:.1f}s", file=sys.stderr)


def same_ids(a: list[int], b: list[int]) -> str:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"differ from token {i} on ({i} identical of {min(len(a), len(b))})"
    # A random model may repeat one token: say so, identity then shows less.
    return f"identical ({min(len(a), len(b))} tokens, {len(set(a))} distinct)"


def run_torch(model, ids: list[int], decode: int) -> tuple[float, float]:
    import torch
    from transformers import DynamicCache

    with torch.inference_mode():
        x = torch.tensor([ids])
        cache = DynamicCache()
        t0 = time.perf_counter()
        out = model(input_ids=x, past_key_values=cache, use_cache=True, logits_to_keep=1)
        nxt = out.logits[:, -1].argmax(-1, keepdim=True)
        t1 = time.perf_counter()
        for _ in range(decode):
            out = model(input_ids=nxt, past_key_values=cache, use_cache=True)
            nxt = out.logits[:, -1].argmax(-1, keepdim=True)
        t2 = time.perf_counter()
    return len(ids) / (t1 - t0), decode / (t2 - t1)


def summary(xs: list[float]) -> str:
    return f"{statistics.median(xs):8.1f}  (min {min(xs):.1f}, max {max(xs):.1f})"


def bandwidth(threads: int, mib: int = 256, repeat: int = 10) -> float:
    """STREAM-like copy of mib MiB: bytes read + written per second.

    numpy copies (which release the GIL) in 1 and in `threads` Python threads, each
    thread its own slice; like STREAM, the best of `repeat` trials counts, and the
    higher of the two thread counts is returned (on a loaded machine, a second thread
    may only get in the first one's way; the bound should not be lowered by that).
    """
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np

    n = (mib << 20) // 4
    a = np.ones(n, dtype=np.float32)
    b = np.empty_like(a)
    b[:] = a  # fault the pages in
    best = 0.0
    for th in sorted({1, threads}):
        parts = [(i * n // th, (i + 1) * n // th) for i in range(th)]
        with ThreadPoolExecutor(th) as ex:
            for _ in range(repeat):
                t = time.perf_counter()
                list(ex.map(lambda p: np.copyto(b[p[0] : p[1]], a[p[0] : p[1]]), parts))
                best = max(best, 2 * n * 4 / (time.perf_counter() - t))
    return best


def decode_bytes(cfg: dict, dtype: str, prompt: int, decode: int) -> float:
    """Bytes one decode step reads on average: weights once, plus the KV cache (f32).
    dtype b12 / b28: bf16 / f32 matrices in packed panels (1.5 / 3.5 bytes per weight,
    16 per panel of 16 rows), norm weights as stored."""
    h, i, v, n = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"], cfg["num_hidden_layers"]
    hd = h // cfg["num_attention_heads"]
    kv = cfg["num_key_value_heads"] * hd
    per_layer = h * h * 2 + h * kv * 2 + 3 * h * i + 2 * h
    params = n * per_layer + v * h + h  # tied: the embedding is read once, as lm_head
    if dtype in ("b12", "b28"):
        norms = (2 * n + 1) * h
        per, norm = {"b12": (1.5, 2), "b28": (3.5, 4)}[dtype]
        wbytes = (params - norms) * per + (params - norms) / (16 * h) * 16 + norms * norm
    else:
        wbytes = params * {"bf16": 2, "f32": 4, "int8": 34 / 32}[dtype]
    avg_pos = prompt + decode / 2
    return wbytes + n * 2 * kv * avg_pos * 4


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--prompt-tokens", type=int, default=128)
    ap.add_argument("--decode-tokens", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--dtypes", default="f32,bf16,int8", help="comma-separated: f32, bf16, int8")
    ap.add_argument("--llamacpp", type=Path, help="the llama.cpp driver (tests_py/llamacpp/driver.c, built)")
    ap.add_argument("--gguf-py", type=Path, help="gguf-py of the same llama.cpp release (writes the GGUF files)")
    ap.add_argument("--model-dir", type=Path, help="reuse (or create) the models under here")
    args = ap.parse_args()
    if not TETHER.exists():
        sys.exit(f"{TETHER} missing: run `make build`")
    dtypes = [d.strip() for d in args.dtypes.split(",") if d.strip()]
    for d in dtypes:
        if d not in ("f32", "bf16", "int8"):
            sys.exit(f"unknown dtype {d!r}: use f32, bf16 or int8")
    if args.llamacpp and not args.gguf_py:
        sys.exit("--llamacpp needs --gguf-py")

    import torch
    import transformers

    torch.set_num_threads(args.threads)
    bw = bandwidth(args.threads)
    text, ids = prompt_text(args.prompt_tokens)
    lines = [
        f"SmolLM-135M-shaped, {len(ids)}-token prompt, {args.decode_tokens} decode tokens, "
        f"{args.threads} threads, median of {args.repeat} (tokens/s)",
        f"  memory bandwidth (STREAM-like copy, best of 1 and {args.threads} threads): {bw / 1e9:.1f} GB/s",
        f"  go: tether generate --threads {args.threads} (GOMAXPROCS={args.threads}), greedy, one process per run",
        f"  torch {torch.__version__} (transformers {transformers.__version__}, "
        f"{torch.backends.mkl.is_available() and 'MKL' or 'no MKL'}, "
        f"{torch.backends.mkldnn.is_available() and 'oneDNN' or 'no oneDNN'}): same dtype, "
        f"inference_mode, SDPA, DynamicCache, logits_to_keep=1 at prefill, argmax; best of "
        f"set_num_threads({' and '.join(map(str, sorted({1, args.threads})))}) per phase "
        f"[thr: the one that won]",
    ]
    if args.llamacpp:
        lines.append(f"  llama.cpp: {args.llamacpp} (libllama, GGUF from the same checkpoint), one process per run")
    with tempfile.TemporaryDirectory(prefix="tether-bench-") as tmp:
        root = args.model_dir or Path(tmp)
        for dt in dtypes:
            src = "f32" if dt == "int8" else dt  # 8-bit: quantized from the f32 checkpoint
            d = root / f"smollm-135m-shaped-{src}"
            if not (d / "model.safetensors").exists():
                d.mkdir(parents=True, exist_ok=True)
                t = time.perf_counter()
                build(d, src)
                print(f"built {d} in {time.perf_counter() - t:.1f}s", file=sys.stderr)
            cfg = json.loads((d / "config.json").read_text())
            go_extra: tuple[str, ...] = ("--weights", "int8") if dt == "int8" else ()
            gguf = None
            if args.llamacpp:
                kind = {"f32": "f32", "bf16": "bf16", "int8": "q8_0"}[dt]
                gguf = root / f"smollm-135m-shaped-{kind}.gguf"
                make_gguf(d, gguf, kind, args.gguf_py)
            with_torch = dt != "int8"
            model = None
            torch_threads = sorted({1, args.threads}) if with_torch else []
            if with_torch:
                tdt = torch.bfloat16 if dt == "bf16" else torch.float32
                model = transformers.LlamaForCausalLM.from_pretrained(d, dtype=tdt, attn_implementation="sdpa").eval()
            # Warm-up: first-call allocations and kernels, the checkpoint in the page cache.
            for n in torch_threads:
                torch.set_num_threads(n)
                run_torch(model, ids, 2)
            run_go(d, text, 2, args.threads, go_extra)
            if gguf:
                run_llamacpp(args.llamacpp, gguf, ids, 2, args.threads)

            # bf16: also Go with --exact-bf16 (prefill multiplies float32 inputs exactly)
            math16 = dt == "bf16"
            if math16:
                run_go(d, text, 2, args.threads, ("--exact-bf16",))
            go_pre, go_dec, m_pre, m_dec, l_pre, l_dec = [], [], [], [], [], []
            go_out: list[int] = []
            l_out: list[int] = []
            t_pre: dict[int, list[float]] = {n: [] for n in torch_threads}
            t_dec: dict[int, list[float]] = {n: [] for n in torch_threads}
            for _ in range(args.repeat):  # interleaved, so drift in the machine hits every side
                p, dcd, go_ids, go_out, engine = run_go(d, text, args.decode_tokens, args.threads, go_extra, with_ids=True)
                if go_ids != ids:
                    sys.exit("Go tokenized the prompt differently from the tokenizers package")
                go_pre.append(p)
                go_dec.append(dcd)
                if math16:
                    p, dcd, _, _ = run_go(d, text, args.decode_tokens, args.threads, ("--exact-bf16",))
                    m_pre.append(p)
                    m_dec.append(dcd)
                if gguf:
                    p, dcd, l_out = run_llamacpp(args.llamacpp, gguf, ids, args.decode_tokens, args.threads)
                    l_pre.append(p)
                    l_dec.append(dcd)
                for n in torch_threads:
                    torch.set_num_threads(n)
                    p, dcd = run_torch(model, ids, args.decode_tokens)
                    t_pre[n].append(p)
                    t_dec[n].append(dcd)
            del model
            torch.set_num_threads(args.threads)

            nbytes = decode_bytes(cfg, dt, len(ids), args.decode_tokens)
            bound = bw / nbytes
            med = statistics.median
            lines += [
                f"{dt}{' (go --weights int8, llama.cpp Q8_0)' if dt == 'int8' else ''}:",
                f"  decode bound: {nbytes / 1e6:.0f} MB read per token -> {bound:.1f} tok/s at {bw / 1e9:.1f} GB/s",
                f"  decode   go {summary(go_dec)} = {med(go_dec) / bound:.0%} of bound",
                f"  go engine: {engine}",
            ]
            if "packed panels" in engine and dt in ("bf16", "f32"):
                fmt = {"bf16": "b12", "f32": "b28"}[dt]
                pb = decode_bytes(cfg, fmt, len(ids), args.decode_tokens)
                lines.append(f"  go reads {fmt} panels: {pb / 1e6:.0f} MB per token -> {bw / pb:.1f} tok/s; "
                             f"go = {med(go_dec) / (bw / pb):.0%} of that bound")
            if gguf:
                lines.append(f"           llama.cpp {summary(l_dec)} = {med(l_dec) / bound:.0%} of bound")
            if with_torch:
                pre_n = max(torch_threads, key=lambda n: med(t_pre[n]))
                dec_n = max(torch_threads, key=lambda n: med(t_dec[n]))
                torch_pre, torch_dec = t_pre[pre_n], t_dec[dec_n]
                lines.append(f"           torch {summary(torch_dec)} = {med(torch_dec) / bound:.0%} of bound [{dec_n} thr]")
            lines.append(f"  prefill  go {summary(go_pre)}")
            if gguf:
                lines.append(f"           llama.cpp {summary(l_pre)}")
            if with_torch:
                lines += [
                    f"           torch {summary(torch_pre)} [{pre_n} thr]",
                    f"  ratio go/torch: decode {med(go_dec) / med(torch_dec):.2f}x, prefill {med(go_pre) / med(torch_pre):.2f}x",
                ]
            if gguf:
                lines += [
                    f"  ratio go/llama.cpp: decode {med(go_dec) / med(l_dec):.2f}x, prefill {med(go_pre) / med(l_pre):.2f}x",
                    f"  greedy ids go vs llama.cpp: {same_ids(go_out, l_out)}",
                ]
            if math16:
                lines += [
                    f"  go --exact-bf16 (prefill multiplies float32 inputs exactly):",
                    f"  decode   go {summary(m_dec)}   ratio go/torch {med(m_dec) / med(torch_dec):.2f}x"
                    + (f", go/llama.cpp {med(m_dec) / med(l_dec):.2f}x" if gguf else ""),
                    f"  prefill  go {summary(m_pre)}   ratio go/torch {med(m_pre) / med(torch_pre):.2f}x"
                    + (f", go/llama.cpp {med(m_pre) / med(l_pre):.2f}x" if gguf else ""),
                ]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
