"""Make the device check's random-weight models with transformers (no hub access needed).

    python make_models.py OUT_DIR [--tokenizers DIR] [--only NAME,...]

Each model is a LlamaForCausalLM with random weights saved by save_pretrained as
safetensors, with a real tokenizer's tokenizer.json and tokenizer_config.json copied in.
An f32 and a bf16 model of the same name family share their weights (the bf16 one is the
f32 one rounded). OUT_DIR/models.json lists them for check_parity.py and bench_cuda.py.

GPU run (the shapes the issue's acceptance is stated for):
    tiny-f32, tiny-bf16   hidden 64, 2 layers, 4 heads / 2 kv heads (head_dim 16),
                          intermediate 128, the Llama-2 tokenizer's 32,000 tokens, untied
    tiny-llama3-f32       the same shape with the Llama-3 tokenizer (128,256 tokens), tied,
                          llama3 RoPE scaling with original_max_position_embeddings 64 so
                          that head_dim 16's frequencies fall in all three llama3 bands
    smollm-f32, -bf16     SmolLM-135M: hidden 576, 30 layers, 9 heads / 3 kv heads,
                          intermediate 1536, vocab 49,152 (the Llama-2 tokenizer's 32,000
                          ids, the rest padding it never produces, as tests_py/bench_model.py),
                          tied, rope_theta 10000
    llama1b-bf16          Llama-3.2-1B: hidden 2048, 16 layers, 32 heads / 8 kv heads,
                          head_dim 64, intermediate 8192, vocab 128,256 (Llama-3 tokenizer),
                          tied, rope_theta 500000 with llama3 scaling (factor 32, low 1,
                          high 4, original 8192), max_position_embeddings 131072
Dry run (TETHER_CUDA_DRYRUN=1): the tiny models as above; smollm-* and llama1b-bf16 keep
their tokenizer, vocabulary, tying and RoPE but shrink to a few small layers (unless
TETHER_CUDA_MODELS_FULL=1, which makes the full shapes on the CPU, to test them here).

Weights: seeded per family (crc32 of its name), so every run makes the same model on the
same kind of device. Linear weights are N(0, 1/fan_in) (variance-preserving), norm
weights N(1, 0.1), the embedding and output layer N(0, 9/hidden): logits come out with a
standard deviation of about 3, so greedy picks are well separated (not near-ties) and
attention is neither uniform nor one-hot. The default 0.02 init would make tied models
repeat their input token and logits tiny. The speed of a forward pass does not depend on
the values, so the benchmark uses these models too.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
import zlib
from pathlib import Path

from harness import DRY_RUN, TAG, TOKENIZERS, quiet_transformers

# Testing knob: a dry run that still makes the GPU run's full shapes (on the CPU).
SMALL = DRY_RUN and os.environ.get("TETHER_CUDA_MODELS_FULL", "") in ("", "0")

LLAMA3_ROPE_TINY = {
    "rope_type": "llama3",
    "rope_theta": 500000.0,
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 64,
}
LLAMA3_ROPE_1B = {
    "rope_type": "llama3",
    "rope_theta": 500000.0,
    "factor": 32.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 8192,
}
DEFAULT_ROPE_10K = {"rope_type": "default", "rope_theta": 10000.0}

TINY = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 1024,
}
SMOLLM = {
    "hidden_size": 576,
    "intermediate_size": 1536,
    "num_hidden_layers": 30,
    "num_attention_heads": 9,
    "num_key_value_heads": 3,
    "vocab_size": 49152,
    "max_position_embeddings": 2048,
    "tie_word_embeddings": True,
}
LLAMA1B = {
    "hidden_size": 2048,
    "intermediate_size": 8192,
    "num_hidden_layers": 16,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 64,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
    "tie_word_embeddings": True,
}
# Dry run: the same families, a few small layers.
SMOLLM_DRY = {**SMOLLM, "hidden_size": 144, "intermediate_size": 384, "num_hidden_layers": 3}
LLAMA1B_DRY = {
    **LLAMA1B,
    "hidden_size": 256,
    "intermediate_size": 512,
    "num_hidden_layers": 2,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "head_dim": 32,
}

# family -> (shape label, tokenizer, config, rope, dtypes, roles)
FAMILIES = {
    "tiny": (
        "tiny Llama (64/2 layers)",
        "llama2",
        TINY,
        DEFAULT_ROPE_10K,
        ("f32", "bf16"),
        ("parity", "greedy"),
    ),
    "tiny-llama3": (
        "tiny Llama, llama3 RoPE, tied",
        "llama3",
        {**TINY, "tie_word_embeddings": True},
        LLAMA3_ROPE_TINY,
        ("f32",),
        ("parity", "greedy", "schema"),
    ),
    "smollm": (
        "SmolLM-135M shape",
        "llama2",
        SMOLLM_DRY if SMALL else SMOLLM,
        DEFAULT_ROPE_10K,
        ("f32", "bf16"),
        ("parity", "greedy", "bench"),
    ),
    "llama1b": (
        "Llama-3.2-1B shape",
        "llama3",
        LLAMA1B_DRY if SMALL else LLAMA1B,
        LLAMA3_ROPE_1B,
        ("bf16",),
        ("parity", "bench", "schema"),
    ),
}
BOS_EOS = {"llama2": (1, 2), "llama3": (128000, 128001)}


def llama_config(tokenizer: str, shape: dict, rope: dict, vocab: int):
    import transformers

    bos, eos = BOS_EOS[tokenizer]
    kw = {
        "vocab_size": vocab,
        "rms_norm_eps": 1e-5,
        "bos_token_id": bos,
        "eos_token_id": eos,
        "pad_token_id": eos,
    }
    kw.update(shape)
    try:  # transformers 5: rope_parameters carries rope_theta and the scaling
        cfg = transformers.LlamaConfig(**kw, rope_parameters=dict(rope))
    except TypeError:  # transformers 4: rope_theta + rope_scaling
        scaling = {k: v for k, v in rope.items() if k != "rope_theta"}
        cfg = transformers.LlamaConfig(
            **kw,
            rope_theta=rope["rope_theta"],
            rope_scaling=None if scaling.get("rope_type") == "default" else scaling,
        )
    return cfg


def init_weights(model, seed: int) -> None:
    import torch

    # The generator lives where the weights are (the device the model was built on).
    g = torch.Generator(device=next(model.parameters()).device).manual_seed(seed)
    hidden = model.config.hidden_size
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "embed_tokens" in name or "lm_head" in name:
                p.normal_(0.0, 3.0 / hidden**0.5, generator=g)
            elif p.dim() == 2:
                p.normal_(0.0, 1.0 / p.shape[1] ** 0.5, generator=g)
            elif "norm" in name:
                p.normal_(1.0, 0.1, generator=g)
            else:
                p.normal_(0.0, 0.1, generator=g)


def check_rope(out: Path, rope: dict) -> None:
    cfg = json.loads((out / "config.json").read_text())
    got = cfg.get("rope_parameters") or cfg.get("rope_scaling") or {}
    theta = got.get("rope_theta", cfg.get("rope_theta"))
    if (
        rope["rope_type"] != "default"
        and got.get("rope_type", got.get("type")) != rope["rope_type"]
    ):
        raise RuntimeError(f"{out}/config.json lost the {rope['rope_type']} RoPE scaling: {got}")
    if theta != rope["rope_theta"]:
        raise RuntimeError(f"{out}/config.json has rope_theta {theta}, want {rope['rope_theta']}")


def build_family(root: Path, family: str, only: set[str] | None, device: str) -> dict:
    import tokenizers
    import torch
    import transformers

    label, tok_name, shape, rope, dtypes, roles = FAMILIES[family]
    names = {dt: f"{family}-{dt}" for dt in dtypes}
    if only is not None:
        names = {dt: n for dt, n in names.items() if n in only}
    if not names:
        return {}
    tok_dir = TOKENIZERS / tok_name
    tok = tokenizers.Tokenizer.from_file(str(tok_dir / "tokenizer.json"))
    vocab = shape.get("vocab_size", tok.get_vocab_size(with_added_tokens=True))
    cfg = llama_config(tok_name, {k: v for k, v in shape.items() if k != "vocab_size"}, rope, vocab)
    t0 = time.perf_counter()
    with torch.device(device):
        model = transformers.LlamaForCausalLM(cfg).to(torch.float32)
    init_weights(model, zlib.crc32(family.encode()))
    out: dict = {}
    for dt in ("f32", "bf16"):  # f32 first: the bf16 model is the f32 one rounded
        if dt not in names:
            continue
        d = root / names[dt]
        d.mkdir(parents=True, exist_ok=True)
        m = model if dt == "f32" else model.to(torch.bfloat16)
        m.to("cpu").save_pretrained(d)
        for f in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copy(tok_dir / f, d / f)
        check_rope(d, rope)
        c = json.loads((d / "config.json").read_text())
        params = sum(p.numel() for p in m.parameters())
        out[names[dt]] = {
            "dir": str(d),
            "dtype": dt,
            "family": family,
            "shape": label,
            "tokenizer": tok_name,
            "roles": list(roles),
            "params": params,
            "dry_run": DRY_RUN,
            "hidden_size": c["hidden_size"],
            "num_hidden_layers": c["num_hidden_layers"],
            "vocab_size": c["vocab_size"],
        }
        print(
            f"made {names[dt]}: {label}, {dt}, {params / 1e6:.1f} M parameters, hidden {c['hidden_size']}, "
            f"{c['num_hidden_layers']} layers, vocab {c['vocab_size']} ({time.perf_counter() - t0:.1f} s){TAG}",
            flush=True,
        )
    del model
    return out


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("out", type=Path)
    ap.add_argument("--only", help="comma-separated model names (default: all)")
    args = ap.parse_args()

    import torch

    quiet_transformers()
    device = "cuda" if (not DRY_RUN and torch.cuda.is_available()) else "cpu"
    if not DRY_RUN and device != "cuda":
        print(
            "FAIL make-models: torch sees no CUDA device (torch.cuda.is_available() is False)",
            flush=True,
        )
        return 1
    only = set(args.only.split(",")) if args.only else None
    args.out.mkdir(parents=True, exist_ok=True)
    man_path = args.out / "models.json"
    models = json.loads(man_path.read_text()) if man_path.exists() else {}
    try:
        for fam in FAMILIES:
            models.update(build_family(args.out, fam, only, device))
            if device == "cuda":
                torch.cuda.empty_cache()
    except Exception as e:  # noqa: BLE001 - reported as a failed check, not a traceback
        print(f"FAIL make-models: {type(e).__name__}: {e}{TAG}", flush=True)
        return 1
    man_path.write_text(json.dumps(models, indent=1))
    print(
        f"PASS make-models: {len(models)} models in {args.out} (weights initialised on {device}){TAG}",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
