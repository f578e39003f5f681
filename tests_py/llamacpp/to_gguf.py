"""Write a Llama-architecture safetensors checkpoint as a GGUF file for llama.cpp.

    python to_gguf.py MODEL_DIR OUT.gguf {f32,bf16,q8_0} GGUF_PY_DIR

GGUF_PY_DIR is the gguf-py folder of the llama.cpp source that matches the libraries
(the Makefile's llamacpp-env extracts it from the pinned npm package, so the writer and
the reader come from the same llama.cpp release). Weights are read with safetensors (as
float32), the query and key projections permuted from Hugging Face's rotate-half layout
to llama.cpp's interleaved one (as llama.cpp's convert_hf_to_gguf.py does for
LlamaForCausalLM), and written as the requested type: norms stay float32, matrices
become f32, bf16 or Q8_0 (quantized by gguf-py's gguf.quants, the reference Q8_0 of
llama.cpp: blocks of 32 int8 values with one f16 scale). The vocabulary is the model's
tokenizer.json vocabulary, padded with [PAD<id>] tokens up to the model's vocab_size:
the benchmark feeds token ids, so llama.cpp's tokenizer is never used, only its size.
Plain RoPE only (rope scaling is refused). Checked: on test_model_parity.py's random
llama2-f32 model, llama.cpp's 32 greedy ids equal tether's (19 distinct tokens), which
they would not with the q/k permutation wrong.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def permute(w, n_head: int):
    """HF rotate-half q/k rows -> llama.cpp's interleaved pairs (per head)."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def main() -> None:
    if len(sys.argv) != 5 or sys.argv[3] not in ("f32", "bf16", "q8_0"):
        sys.exit(__doc__)
    src, out, kind, gguf_py = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4]
    sys.path.insert(0, gguf_py)
    import gguf
    import numpy as np
    from safetensors.torch import load_file

    cfg = json.loads((src / "config.json").read_text())
    if cfg.get("architectures") != ["LlamaForCausalLM"]:
        sys.exit(f"{src}: architectures {cfg.get('architectures')}, want LlamaForCausalLM")
    rope = cfg.get("rope_scaling") or cfg.get("rope_parameters") or {}
    if rope.get("rope_type", rope.get("type", "default")) != "default":
        sys.exit(f"{src}: rope scaling {rope.get('rope_type', rope.get('type'))!r} is not written by this converter")
    h, heads = cfg["hidden_size"], cfg["num_attention_heads"]
    kv_heads = cfg.get("num_key_value_heads", heads)
    qtype = {"f32": gguf.GGMLQuantizationType.F32, "bf16": gguf.GGMLQuantizationType.BF16,
             "q8_0": gguf.GGMLQuantizationType.Q8_0}[kind]
    ftype = {"f32": gguf.LlamaFileType.ALL_F32, "bf16": gguf.LlamaFileType.MOSTLY_BF16,
             "q8_0": gguf.LlamaFileType.MOSTLY_Q8_0}[kind]

    w = gguf.GGUFWriter(out, "llama")
    w.add_name(src.name)
    w.add_file_type(ftype)
    w.add_vocab_size(cfg["vocab_size"])
    w.add_context_length(cfg.get("max_position_embeddings", 2048))
    w.add_embedding_length(h)
    w.add_block_count(cfg["num_hidden_layers"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_rope_dimension_count(cfg.get("head_dim") or h // heads)
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    w.add_rope_freq_base(cfg.get("rope_theta", 10000.0))

    vocab = json.loads((src / "tokenizer.json").read_text())["model"]["vocab"]
    special = {t["id"]: t["content"] for t in json.loads((src / "tokenizer.json").read_text()).get("added_tokens", [])}
    tokens = [f"[PAD{i}]" for i in range(cfg["vocab_size"])]
    types = [gguf.TokenType.USER_DEFINED] * cfg["vocab_size"]
    for tok, i in vocab.items():
        if i < len(tokens):
            tokens[i], types[i] = tok, gguf.TokenType.NORMAL
    for i, tok in special.items():
        if i < len(tokens):
            tokens[i], types[i] = tok, gguf.TokenType.CONTROL
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores([0.0] * len(tokens))
    w.add_token_types(types)
    w.add_bos_token_id(cfg.get("bos_token_id", 1))
    w.add_eos_token_id(cfg.get("eos_token_id", 2))

    tensors = {}
    for f in sorted(src.glob("*.safetensors")):
        tensors.update(load_file(f))
    names = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
             "lm_head.weight": "output.weight"}
    per_layer = {"input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm",
                 "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
                 "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
                 "mlp.down_proj": "ffn_down"}
    for name, t in tensors.items():
        if name == "lm_head.weight" and cfg.get("tie_word_embeddings"):
            continue
        if name in names:
            new = names[name]
        else:
            parts = name.split(".")  # model.layers.N.<module...>.weight
            if parts[:2] != ["model", "layers"] or parts[-1] != "weight":
                sys.exit(f"{src}: unexpected tensor {name}")
            new = f"blk.{parts[2]}.{per_layer['.'.join(parts[3:-1])]}.weight"
        a = t.float().numpy()
        if name.endswith("q_proj.weight"):
            a = permute(a, heads)
        elif name.endswith("k_proj.weight"):
            a = permute(a, kv_heads)
        a = np.ascontiguousarray(a, dtype=np.float32)
        tt = qtype if a.ndim == 2 else gguf.GGMLQuantizationType.F32
        w.add_tensor(new, gguf.quants.quantize(a, tt) if tt != gguf.GGMLQuantizationType.F32 else a, raw_dtype=tt)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
