"""Fixtures for the vLLM tests (`make test-vllm`): a tiny random Llama saved with
safetensors next to the real Llama-3 tokenizer, and one offline LLM over it with the
tether backend and tether's logits processor.

vLLM must be configured before it is imported: in-process engine (no worker process),
one OpenMP thread (on 2 cores the defaults are 7-10x slower).
"""

from __future__ import annotations

import os

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import json
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
KV_CACHE_BYTES = 256 * 1024 * 1024


def tokenizer_dir() -> Path:
    d = Path(os.environ.get("TETHER_TOKENIZERS", ROOT / "build" / "tokenizers")) / "llama3"
    if not (d / "tokenizer.json").exists():
        pytest.fail(f"test tokenizer missing: {d}; run `make setup`")
    return d


def build_model(dest: Path) -> Path:
    """A 2-layer random Llama (head_dim 32, the CPU attention backend's minimum) with the
    real Llama-3 tokenizer, ending turns on <|eot_id|>."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    src = tokenizer_dir()
    tok = PreTrainedTokenizerFast(
        tokenizer_file=str(src / "tokenizer.json"), bos_token="<|begin_of_text|>", eos_token="<|eot_id|>"
    )
    # A Llama-3 style chat template, for the server's chat completions.
    tok.chat_template = (
        "{% for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>\n\n"
        "{{ m['content'] }}<|eot_id|>{% endfor %}"
        "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"
    )
    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=32,
        max_position_embeddings=1024,
        tie_word_embeddings=True,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        torch_dtype="float32",
    )
    model = LlamaForCausalLM(cfg).eval()
    model.save_pretrained(dest, safe_serialization=True)
    tok.save_pretrained(dest)
    json.loads((dest / "config.json").read_text())  # written
    return dest


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("tiny-llama")
    try:
        yield build_model(d)
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="session")
def llm(model_dir: Path):
    from vllm import LLM

    from tether.vllm import TetherLogitsProcessor  # also registers the backend

    llm = LLM(
        str(model_dir),
        dtype="float32",
        enforce_eager=True,
        kv_cache_memory_bytes=KV_CACHE_BYTES,
        max_model_len=512,
        max_num_seqs=32,
        seed=0,
        structured_outputs_config={"backend": "tether"},
        logits_processors=[TetherLogitsProcessor],
    )
    yield llm
