"""Parity of Go's forward pass (gocore/model, through the tether CLI) with PyTorch.

Tiny random models of every supported architecture (LlamaForCausalLM,
Qwen2ForCausalLM, Qwen3ForCausalLM, MistralForCausalLM, Phi3ForCausalLM,
Gemma3ForCausalLM) are built with transformers (hidden 64, 2-3 layers, 4 query heads
sharing 2 key/value heads, the vocabulary of a real tokenizer), saved as safetensors in
float32 and bfloat16, and given to `tether logits` / `tether generate`. The specs switch
on each architecture's variants: Qwen3's per-head q/k norms; Gemma3's (1+w) sandwich
norms, GeGLU, scaled embedding, query_pre_attn_scalar, sliding layers (window 8, shorter
than the 32-position prompt) between global ones with their own RoPE base, linear RoPE
scaling on the global layers and final logit softcapping; Mistral's sliding window
(8); Phi-3's fused qkv/gate_up projections, partial rotary embeddings and longrope
(the prompt is longer than original_max_position_embeddings, so the long factors
apply). Checked:

- logits at every position of a 32-token prompt: max |Go - PyTorch| <= 1e-4 for f32
  checkpoints; for bf16 checkpoints <= 2e-2 against PyTorch computing in bf16, and
  <= 1e-4 against PyTorch computing in f32 on the same (widened) weights, which is what
  Go does (the bf16 bound is mostly PyTorch's own bf16 rounding, which grows with the
  logits' size: the random weights keep |logit| around 2);
- logits at every position of a 12-token prefill followed by 36 decode steps
  (`tether logits --prefill 12`, the KV-cache path, past the sliding windows and Phi-3's
  longrope switch) against transformers stepping the same way: <= 1e-4;
- 32 greedy tokens equal to transformers' generate(do_sample=False). Both sides never
  pick an end-of-generation token (Go: --ignore-eog; transformers: suppress_tokens with
  the ids Go reports as EOG), so both produce exactly 32 tokens and the comparison is
  plain list equality, with no stop to line up;
- a JSON Schema-constrained `tether generate` output that parses and validates.

The CLI is ROOT/build/bin/tether (`make build`; `make test` builds it first).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pytest
import tokenizers
import torch
import transformers
from conftest import ROOT, tokenizer_path

TETHER = ROOT / "build" / "bin" / "tether"
PROMPT = (
    "The quick brown fox jumps over the lazy dog. Grammar-constrained decoding keeps a "
    "language model on the rails of a schema, one token at a time, without retries."
)
N_POSITIONS = 32
N_GREEDY = 32


@dataclass(frozen=True)
class Spec:
    """One tiny model: architecture, tokenizer, checkpoint dtype, config overrides."""

    name: str
    arch: str  # "llama", "qwen2", "qwen3", "mistral", "phi3" or "gemma3"
    tokenizer: str  # a name under build/tokenizers
    dtype: torch.dtype
    extra: dict[str, Any] = field(default_factory=dict)
    # max |Go - PyTorch computing in bf16| for a bf16 checkpoint: PyTorch's own bf16
    # rounding, which is what this bounds (Go matches PyTorch f32 to 1e-4), grows with
    # the roundings per layer
    bf16_tol: float = 2e-2


LLAMA3_ROPE = {
    "rope_type": "llama3",
    "rope_theta": 500000.0,
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    # Small, so that with head_dim 16 the frequencies fall in all three llama3 bands
    # (kept, interpolated, divided by factor).
    "original_max_position_embeddings": 64,
}

GEMMA3 = {
    "num_hidden_layers": 3,
    "head_dim": 16,
    "query_pre_attn_scalar": 24,  # not head_dim: the scale is checked
    "sliding_window": 8,  # the prompt has 32 positions
    "sliding_window_pattern": 2,  # layers: sliding, full, sliding
    "rope_theta": 1_000_000.0,  # full_attention layers
    "rope_local_base_freq": 10_000.0,  # sliding_attention layers
    "rope_scaling": {"rope_type": "linear", "factor": 2.0},  # full_attention layers only
}

PHI3_LONGROPE = {
    # head_dim 16, partial_rotary_factor 0.5: 8 rotated values, 4 frequencies
    "partial_rotary_factor": 0.5,
    "original_max_position_embeddings": 16,  # the 32-position prompt uses long_factor
    "max_position_embeddings": 1024,
    "rope_scaling": {
        "rope_type": "longrope",
        "short_factor": [1.0, 1.3, 2.1, 3.7],
        "long_factor": [1.1, 2.5, 6.0, 17.0],
    },
}

SPECS = [
    Spec("llama2-f32", "llama", "llama2", torch.float32),
    Spec("llama2-bf16", "llama", "llama2", torch.bfloat16),
    Spec("qwen2-f32", "qwen2", "llama2", torch.float32, {"tie_word_embeddings": True}),
    Spec("qwen2-bf16", "qwen2", "llama2", torch.bfloat16),
    Spec("llama3-rope-f32", "llama", "llama3", torch.float32, {"rope_parameters": LLAMA3_ROPE}),
    Spec("qwen3-f32", "qwen3", "qwen3", torch.float32, {"head_dim": 16}),
    Spec(
        "qwen3-bf16", "qwen3", "qwen3", torch.bfloat16,
        {"head_dim": 24, "tie_word_embeddings": True},
    ),  # fmt: skip
    Spec(
        "qwen3-sliding-f32", "qwen3", "qwen3", torch.float32,
        {"head_dim": 16, "use_sliding_window": True, "sliding_window": 8, "max_window_layers": 1},
    ),  # fmt: skip
    Spec(
        "gemma3-f32", "gemma3", "gemma3", torch.float32, {**GEMMA3, "final_logit_softcapping": 3.0}
    ),
    # hidden 96: √96 rounds to 9.8125 in bf16, which transformers multiplies by
    # (and four bf16-rounded norms per layer: PyTorch bf16 is 0.034 from PyTorch f32)
    Spec("gemma3-bf16", "gemma3", "gemma3", torch.bfloat16, {**GEMMA3, "hidden_size": 96}, 5e-2),
    Spec("mistral-f32", "mistral", "llama2", torch.float32, {"sliding_window": 8}),
    Spec("mistral-bf16", "mistral", "llama2", torch.bfloat16, {"sliding_window": 8}),
    Spec("phi3-f32", "phi3", "llama2", torch.float32),
    Spec("phi3-bf16", "phi3", "llama2", torch.bfloat16),
    Spec("phi3-longrope-f32", "phi3", "llama2", torch.float32, PHI3_LONGROPE),
    # original_max_position_embeddings 40: the 32 prefill positions use short_factor;
    # test_decode_logits decodes past position 40, where transformers switches to
    # long_factor for the new tokens while the cache keeps the earlier rotations
    Spec(
        "phi3-longrope-switch-f32", "phi3", "llama2", torch.float32,
        {**PHI3_LONGROPE, "original_max_position_embeddings": 40},
    ),  # fmt: skip
]

CLASSES = {
    "llama": (transformers.LlamaConfig, transformers.LlamaForCausalLM),
    "qwen2": (transformers.Qwen2Config, transformers.Qwen2ForCausalLM),
    "qwen3": (transformers.Qwen3Config, transformers.Qwen3ForCausalLM),
    "mistral": (transformers.MistralConfig, transformers.MistralForCausalLM),
    "phi3": (transformers.Phi3Config, transformers.Phi3ForCausalLM),
    "gemma3": (transformers.Gemma3TextConfig, transformers.Gemma3ForCausalLM),
}


def tether(*args: str, timeout: int = 120) -> subprocess.CompletedProcess[str]:
    if not TETHER.exists():
        pytest.fail(f"{TETHER} missing: run `make build`")
    proc = subprocess.run(
        [str(TETHER), *args], capture_output=True, text=True, timeout=timeout, check=False
    )
    assert proc.returncode == 0, f"tether {args[0]} failed ({proc.returncode}):\n{proc.stderr}"
    return proc


def build_model(spec: Spec, out: Path) -> Path:
    """Save a random-weight transformers model plus the real tokenizer into out."""
    tok_json = tokenizer_path(spec.tokenizer)
    ref = tokenizers.Tokenizer.from_file(str(tok_json))
    vocab = ref.get_vocab_size(with_added_tokens=True)
    bos, eos = {
        "llama2": (1, 2),
        "llama3": (128000, 128001),
        "qwen3": (None, ref.token_to_id("<|im_end|>")),
        "gemma3": (ref.token_to_id("<bos>"), ref.token_to_id("<eos>")),
    }[spec.tokenizer]
    common: dict[str, Any] = dict(
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=vocab,
        max_position_embeddings=1024,
        rms_norm_eps=1e-5,
        bos_token_id=bos,
        eos_token_id=eos,
        pad_token_id=eos,
    )
    common.update(spec.extra)
    torch.manual_seed(zlib.crc32(spec.name.encode()))
    config_cls, model_cls = CLASSES[spec.arch]
    model = model_cls(config_cls(**common))
    # Larger than the default 0.02 init, so that the logits differ visibly between
    # positions and greedy decoding does not repeat one token. Tied embeddings make the
    # output favour the input token: there the embedding stays small and the layers
    # get larger weights.
    tied = bool(common.get("tie_word_embeddings"))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if tied and "embed_tokens" in name:
                p.normal_(0.0, 0.02)
            elif p.dim() > 1:
                p.normal_(0.0, 0.1 if tied else 0.05)
            else:  # norm weights around 1 (Gemma stores w-1), biases around 0
                p.normal_(1.0 if "norm" in name and spec.arch != "gemma3" else 0.0, 0.1)
    model.to(spec.dtype).save_pretrained(out)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(tokenizer_path(spec.tokenizer, f), out / f)
    return out


@pytest.fixture(scope="module", params=SPECS, ids=lambda s: s.name)
def tiny(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    spec: Spec = request.param
    d = build_model(spec, tmp_path_factory.mktemp(spec.name))
    return spec, d


def load(d: Path, spec: Spec, dtype: torch.dtype) -> torch.nn.Module:
    model = CLASSES[spec.arch][1].from_pretrained(d, dtype=dtype).eval()
    if spec.arch == "gemma3":
        # transformers multiplies the embedding by √hidden_size in the embedding's dtype:
        # a bf16 checkpoint run in f32 (what Go does) keeps the checkpoint's bf16 value.
        emb = model.model.embed_tokens
        scale = torch.tensor(emb.scalar_embed_scale).to(spec.dtype).to(dtype)
        with torch.no_grad():
            emb.embed_scale.fill_(scale.item())
    return model


def prompt_ids(spec: Spec) -> list[int]:
    ids = tokenizers.Tokenizer.from_file(str(tokenizer_path(spec.tokenizer))).encode(PROMPT).ids
    assert len(ids) >= N_POSITIONS
    return ids[:N_POSITIONS]


def test_logits_every_position(tiny: tuple[Spec, Path], tmp_path: Path) -> None:
    spec, d = tiny
    ids = prompt_ids(spec)
    vocab = json.loads((d / "config.json").read_text())["vocab_size"]

    def go_logits(*flags: str) -> np.ndarray:
        out = tmp_path / "logits.f32"
        tether("logits", "--model", str(d), "--ids", ",".join(map(str, ids)), "--out", str(out), *flags)
        go = np.fromfile(out, dtype="<f4")
        assert go.size == len(ids) * vocab, "logits file is not [n_ids x vocab]"
        return go.reshape(len(ids), vocab)

    # --exact-bf16: a bf16 checkpoint's products are those of its weights widened to
    # float32, so the logits are PyTorch's f32 logits on the same widened weights.
    go = go_logits("--exact-bf16")
    with torch.no_grad():
        ref32 = load(d, spec, torch.float32)(torch.tensor([ids])).logits[0].float().numpy()
    diff32 = float(np.abs(go - ref32).max())
    scale = float(np.abs(ref32).max())
    print(f"{spec.name}: max|diff| vs torch f32 = {diff32:.3g} (max|logit| {scale:.3g})")
    # Logits that were all ~0 would make the bound meaningless.
    assert scale > 0.5
    assert diff32 <= 1e-4, f"{spec.name}: max |logit diff| {diff32} vs PyTorch f32"
    if spec.dtype == torch.bfloat16:
        with torch.no_grad():
            ref16 = load(d, spec, torch.bfloat16)(torch.tensor([ids])).logits[0].float().numpy()
        diff16 = float(np.abs(go - ref16).max())
        print(f"{spec.name}: max|diff| vs torch bf16 = {diff16:.3g} "
              f"(torch f32 vs torch bf16: {float(np.abs(ref32 - ref16).max()):.3g})")
        assert diff16 <= spec.bf16_tol, f"{spec.name}: max |logit diff| {diff16} vs PyTorch bf16"
        # The default: prefill inputs rounded to bf16 as PyTorch's bf16 model rounds them
        # (on AVX512-BF16 CPUs; exact elsewhere), within the same bound of PyTorch bf16.
        math16 = go_logits()
        diff16m = float(np.abs(math16 - ref16).max())
        print(f"{spec.name}: default (bf16 math): max|diff| vs torch bf16 = {diff16m:.3g}, "
              f"vs --exact-bf16 {float(np.abs(math16 - go).max()):.3g}")
        assert diff16m <= spec.bf16_tol, f"{spec.name}: default max |logit diff| {diff16m} vs PyTorch bf16"


N_DECODE_PREFILL = 12
N_DECODE_TOTAL = 48


def test_decode_logits_match_transformers_incremental(
    tiny: tuple[Spec, Path], tmp_path: Path
) -> None:
    """The KV-cache path: a 12-token prefill, then 36 decode steps (past every sliding
    window, and past Phi-3's longrope switch), against transformers stepping the same
    way with its DynamicCache (which keeps only a sliding layer's window)."""
    spec, d = tiny
    base = tokenizers.Tokenizer.from_file(str(tokenizer_path(spec.tokenizer))).encode(PROMPT).ids
    ids = (base * 2)[:N_DECODE_TOTAL]
    out = tmp_path / "logits.f32"
    tether(
        "logits", "--model", str(d), "--ids", ",".join(map(str, ids)), "--out", str(out),
        "--prefill", str(N_DECODE_PREFILL), "--exact-bf16",
    )  # fmt: skip
    vocab = json.loads((d / "config.json").read_text())["vocab_size"]
    go = np.fromfile(out, dtype="<f4").reshape(len(ids), vocab)
    model = load(d, spec, torch.float32)
    cache = transformers.DynamicCache(config=model.config)
    rows = []
    with torch.no_grad():
        o = model(torch.tensor([ids[:N_DECODE_PREFILL]]), past_key_values=cache, use_cache=True)
        rows.append(o.logits[0])
        for i in range(N_DECODE_PREFILL, len(ids)):
            o = model(torch.tensor([ids[i : i + 1]]), past_key_values=cache, use_cache=True)
            rows.append(o.logits[0])
    ref = torch.cat(rows).float().numpy()
    diff = float(np.abs(go - ref).max())
    print(f"{spec.name}: decode max|diff| vs torch f32 = {diff:.3g}")
    assert diff <= 1e-4, f"{spec.name}: max |logit diff| {diff} in decode vs PyTorch f32"


def test_greedy_matches_transformers_generate(tiny: tuple[Spec, Path]) -> None:
    spec, d = tiny
    proc = tether(
        "generate", "--model", str(d), "--prompt", PROMPT, "--temp", "0",
        "--max-tokens", str(N_GREEDY), "--ignore-eog", "--json", "--exact-bf16",
    )  # fmt: skip
    got = json.loads(proc.stdout)
    want_prompt = tokenizers.Tokenizer.from_file(str(tokenizer_path(spec.tokenizer))).encode(
        PROMPT
    )
    assert got["prompt_ids"] == want_prompt.ids, "Go tokenized the prompt differently"
    assert got["stop"] == "max_tokens"
    assert got["eog_ids"], "the vocabulary reports no end-of-generation token"
    model = load(d, spec, torch.float32)  # the weights Go runs, widened to f32 as Go does
    with torch.no_grad():
        out = model.generate(
            torch.tensor([got["prompt_ids"]]),
            do_sample=False,
            max_new_tokens=N_GREEDY,
            suppress_tokens=got["eog_ids"],
            pad_token_id=got["eog_ids"][0],
        )
    want = out[0, len(got["prompt_ids"]) :].tolist()
    assert len(want) == N_GREEDY
    assert got["ids"] == want, f"{spec.name}: greedy tokens differ"
    # Not a degenerate run: a random model that repeats one token would prove little.
    assert len(set(want)) > 3, want


SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 12},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "maxItems": 3},
    },
    "required": ["name", "age", "tags"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(("seed", "whitespace"), [(1, "bounded"), (2, "compact")])
def test_json_schema_constrained_output_validates(
    tmp_path: Path, seed: int, whitespace: str
) -> None:
    spec = SPECS[-1]  # Llama-3's byte-level tokenizer: multi-character JSON tokens
    d = build_model(spec, tmp_path / "model")
    schema_file = tmp_path / "schema.json"
    schema_file.write_text(json.dumps(SCHEMA))
    proc = tether(
        "generate", "--model", str(d), "--prompt", "JSON:", "--json-schema", str(schema_file),
        "--whitespace", whitespace, "--temp", "1.0", "--seed", str(seed), "--max-tokens", "400",
    )  # fmt: skip
    text = proc.stdout.removesuffix("\n")
    print(f"seed {seed}: {text!r}\n{proc.stderr}")
    assert "stop: eog" in proc.stderr, "generation did not end with the grammar complete"
    value = json.loads(text)
    jsonschema.validate(value, SCHEMA)


def test_errors_name_the_problem(tmp_path: Path) -> None:
    spec = SPECS[0]
    d = build_model(spec, tmp_path / "model")
    cfg = json.loads((d / "config.json").read_text())

    bad = tmp_path / "bad-arch"
    shutil.copytree(d, bad)
    (bad / "config.json").write_text(json.dumps({**cfg, "architectures": ["MambaForCausalLM"]}))
    proc = subprocess.run(
        [str(TETHER), "logits", "--model", str(bad), "--ids", "1,2", "--out", str(tmp_path / "x")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "unsupported architecture" in proc.stderr and "MambaForCausalLM" in proc.stderr

    bad = tmp_path / "bad-shape"
    shutil.copytree(d, bad)
    (bad / "config.json").write_text(json.dumps({**cfg, "intermediate_size": 96}))
    proc = subprocess.run(
        [str(TETHER), "logits", "--model", str(bad), "--ids", "1,2", "--out", str(tmp_path / "x")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "model.layers.0.mlp.gate_proj.weight" in proc.stderr, proc.stderr
    assert "[128 64]" in proc.stderr and "[96 64]" in proc.stderr, proc.stderr

    # two ways to multiply bf16 weights at once: a usage error naming both flags
    proc = subprocess.run(
        [str(TETHER), "logits", "--model", str(d), "--ids", "1,2", "--out", str(tmp_path / "x"),
         "--exact-bf16", "--bf16-math"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "--exact-bf16" in proc.stderr and "--bf16-math" in proc.stderr, proc.stderr
