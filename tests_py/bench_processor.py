"""Per-step overhead of tether's logits processor (not part of `make test`; `make bench-py`).

Steps a JSONSchemaLogitsProcessor through the tokens of a valid JSON document, the way
generate calls it (input_ids growing by one token per step), with CPU float32 scores over
the real Llama-3 vocabulary, at batch 1 and 8, and prints p50/p90/p99 per step for both the
fp32 and bf16 paths (both masked by Go on CPU), and with inplace=True (no row copy).
"""

from __future__ import annotations

import json
import statistics
import sys
import time

import torch
from conftest import tokenizer_path
from transformers import PreTrainedTokenizerFast

import tether

SCHEMA = {
    "type": "object",
    "properties": {
        "id": {"type": "integer", "minimum": 0},
        "name": {"type": "string", "maxLength": 40},
        "tags": {"type": "array", "items": {"type": "string"}},
        "score": {"type": "number"},
        "active": {"type": "boolean"},
        "owner": {"type": "object", "properties": {"email": {"type": "string"}, "age": {"type": "integer"}}},
    },
    "required": ["id", "name"],
}
DOC = {"id": 4711, "name": "grammar constrained decoding", "tags": ["go", "python", "gbnf", "json"],
       "score": 0.875, "active": True, "owner": {"email": "someone@example.com", "age": 42}}


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def run(tok: PreTrainedTokenizerFast, batch: int, fp32_fast: bool, repeat: int = 5, inplace: bool = False) -> dict[str, float]:
    doc_ids = tok.encode(json.dumps(DOC), add_special_tokens=False)
    prompt = [tok.bos_token_id or 0]
    times: list[float] = []
    for _ in range(repeat):
        proc = tether.JSONSchemaLogitsProcessor(SCHEMA, tok, inplace=inplace)
        for i in range(len(doc_ids)):
            ids = torch.tensor([prompt + doc_ids[:i]] * batch)
            scores = torch.randn((batch, len(tok)))
            if not fp32_fast:
                scores = scores.to(torch.bfloat16)
            t0 = time.perf_counter()
            out = proc(ids, scores)
            times.append(1e6 * (time.perf_counter() - t0))
            assert torch.isfinite(out[0, doc_ids[i]]), f"step {i}: the document's next token was masked"
            assert (out is scores) == inplace
    first_pass = len(doc_ids)
    warm = times[first_pass:]
    return {"steps": len(times), "p50_us": statistics.median(warm), "p90_us": pct(warm, 0.9),
            "p99_us": pct(warm, 0.99), "first_pass_p50_us": statistics.median(times[:first_pass])}


def main() -> int:
    tok = PreTrainedTokenizerFast(tokenizer_file=str(tokenizer_path("llama3")), bos_token="<|begin_of_text|>")
    results = {}
    for batch in (1, 8):
        for fast, inplace in ((True, False), (False, False), (True, True)):
            key = f"batch{batch}_{'fp32' if fast else 'bf16'}{'_inplace' if inplace else ''}"
            results[key] = run(tok, batch, fast, inplace=inplace)
            print(key, json.dumps({k: round(v, 1) for k, v in results[key].items()}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
