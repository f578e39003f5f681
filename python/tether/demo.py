"""End-to-end demo: JSON Schema-constrained generation with 🤗 transformers.

    python -m tether.demo [--model DIR] [--tokenizers DIR] [--max-new-tokens N]

What ``make demo`` runs. With ``--model`` (or ``MODEL=<dir>`` through make) it loads a
local Hugging Face model directory. Offline, by default, it builds a tiny random-weight
Llama with the real Llama-3 tokenizer: the text is nonsense, but every output still
parses and validates against the schema, which is the point. The demo checks each
output independently with ``json`` and ``jsonschema`` and exits non-zero on a failure.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import tether

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "maxLength": 20},
        "population": {"type": "integer", "minimum": 0, "maximum": 40000000},
        "country": {"enum": ["FR", "DE", "JP", "BR", "IN"]},
        "landmarks": {"type": "array", "items": {"type": "string", "maxLength": 16}, "maxItems": 3},
    },
    "required": ["city", "population", "country"],
    "additionalProperties": False,
}


def _tiny_model(tokenizers: Path) -> tuple[Any, Any]:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    path = tokenizers / "llama3"
    cfg = json.loads((path / "tokenizer_config.json").read_text())
    tok = PreTrainedTokenizerFast(
        tokenizer_file=str(path / "tokenizer.json"),
        eos_token=cfg.get("eos_token"),
        bos_token=cfg.get("bos_token"),
        padding_side="left",
    )
    tok.pad_token = tok.eos_token
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
    )
    return tok, LlamaForCausalLM(config).eval()


def _real_model(model_dir: str) -> tuple[Any, Any]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir, padding_side="left")
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok, AutoModelForCausalLM.from_pretrained(model_dir).eval()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tether.demo", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=os.environ.get("MODEL") or None, help="local HF model directory")
    ap.add_argument("--tokenizers", type=Path,
                    default=Path(os.environ.get("TETHER_TOKENIZERS", "build/tokenizers")),
                    help="test tokenizers (make setup fetches them); used without --model")
    ap.add_argument("--max-new-tokens", type=int, default=96)
    args = ap.parse_args(argv)

    import jsonschema
    import torch

    if args.model:
        tok, model = _real_model(args.model)
        what = args.model
    else:
        if not (args.tokenizers / "llama3" / "tokenizer.json").exists():
            print(f"no Llama-3 tokenizer under {args.tokenizers}; run `make setup`", file=sys.stderr)
            return 2
        tok, model = _tiny_model(args.tokenizers)
        what = "a tiny random Llama (2 layers, hidden 64) with the real Llama-3 tokenizer"

    print(f"tether {tether.__version__} — JSON Schema-constrained generation with {what}\n")
    t0 = time.perf_counter()
    # Compact whitespace keeps the printout readable: a random model otherwise spends its
    # tokens on the (bounded) indentation the default "bounded" mode allows.
    proc = tether.JSONSchemaLogitsProcessor(
        SCHEMA, tok, whitespace="compact", model=model
    )
    print(f"schema → grammar → compiled for {len(tok)} tokens in {1e3 * (time.perf_counter() - t0):.1f} ms")

    prompts = ["Describe a large city as JSON:", "Give one city in JSON:"]
    enc = tok(prompts, return_tensors="pt", padding=True)
    modes = {
        "greedy": dict(do_sample=False),
        "sampling, T=1.2, 2 per prompt": dict(do_sample=True, temperature=1.2, num_return_sequences=2),
        "beam search, 3 beams": dict(do_sample=False, num_beams=3),
    }
    ok = True
    for name, kw in modes.items():
        torch.manual_seed(7)
        t0 = time.perf_counter()
        with torch.no_grad():
            out = model.generate(**enc, logits_processor=[proc], max_new_tokens=args.max_new_tokens, **kw)
        dt = time.perf_counter() - t0
        print(f"\n── {name} ({dt:.2f} s)")
        for row in out[:, enc["input_ids"].shape[1]:]:
            text = tok.decode(row, skip_special_tokens=True)
            ended = any(int(t) in proc.vocab.eog_token_ids for t in row)
            if ended:
                try:
                    jsonschema.validate(json.loads(text), SCHEMA)
                    verdict = "valid JSON, matches the schema"
                except (ValueError, jsonschema.ValidationError) as e:
                    verdict, ok = f"INVALID: {e}", False
            else:
                valid_prefix = proc.grammar.matcher().accepts_prefix(text)
                verdict = "cut at max-new-tokens; a valid prefix" if valid_prefix else "INVALID prefix"
                ok &= valid_prefix
            print(f"  {text}\n    → {verdict}")
    print(f"\ntokens the grammar had to reject: {proc.rejected}")
    return 0 if ok and proc.rejected == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
