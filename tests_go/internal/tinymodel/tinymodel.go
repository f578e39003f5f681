// Package tinymodel writes small random-weight checkpoints of the architectures
// gocore/model loads (config.json and a hand-written model.safetensors, f32 or bf16)
// for tests that need a model directory without Python.
package tinymodel

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
)

// Config is the shape of the model to write.
type Config struct {
	// Arch is config.json's architecture (default LlamaForCausalLM, or Qwen2ForCausalLM
	// with QKVBias); Qwen3, Mistral, Phi3 and Gemma3 ...ForCausalLM get their tensors
	// (per-head q/k norms, fused projections, sandwich norms stored as w-1).
	Arch                                         string
	Hidden, Inter, Layers, Heads, KVHeads, Vocab int
	HeadDim                                      int            // default Hidden/Heads
	Extra                                        map[string]any // more config.json fields
	MaxPositions                                 int            // default 512
	Tie, QKVBias                                 bool           // tied embeddings; q/k/v biases (Qwen2)
	BF16                                         bool           // store weights as bfloat16 (rounded to nearest even)
}

type tensor struct {
	name  string
	shape []int
	vals  []float32
}

// Tensor is one tensor of a safetensors file: its name, dtype ("F32", "BF16", "F16"),
// shape and little-endian element bytes.
type Tensor struct {
	Name  string
	DType string
	Shape []int
	Raw   []byte
}

// Write writes dir/config.json and dir/model.safetensors with weights drawn from a
// normal distribution seeded by seed.
func Write(dir string, c Config, seed uint64) error {
	cfg, ts := c.build(seed)
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644); err != nil {
		return err
	}
	return writeSafetensors(filepath.Join(dir, "model.safetensors"), ts, c.BF16)
}

// JSON returns the config.json fields of c.
func (c Config) JSON() map[string]any {
	cfg, _ := c.build(0)
	return cfg
}

// Tensors returns c's random weights (seeded by seed) as float32 tensors, sorted by
// name, for tests that edit them before writing.
func Tensors(c Config, seed uint64) []Tensor {
	_, ts := c.build(seed)
	out := make([]Tensor, len(ts))
	for i, t := range ts {
		raw := make([]byte, 0, 4*len(t.vals))
		for _, v := range t.vals {
			raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(v))
		}
		out[i] = Tensor{Name: t.name, DType: "F32", Shape: t.shape, Raw: raw}
	}
	return out
}

// build returns c's config.json fields and its random tensors sorted by name.
func (c Config) build(seed uint64) (map[string]any, []tensor) {
	if c.MaxPositions == 0 {
		c.MaxPositions = 512
	}
	arch := c.Arch
	if arch == "" {
		arch = "LlamaForCausalLM"
		if c.QKVBias {
			arch = "Qwen2ForCausalLM"
		}
	}
	hd := c.HeadDim
	if hd == 0 {
		hd = c.Hidden / c.Heads
	}
	cfg := map[string]any{
		"architectures": []string{arch}, "hidden_size": c.Hidden, "intermediate_size": c.Inter,
		"num_hidden_layers": c.Layers, "num_attention_heads": c.Heads, "num_key_value_heads": c.KVHeads,
		"vocab_size": c.Vocab, "max_position_embeddings": c.MaxPositions, "rms_norm_eps": 1e-5,
		"rope_theta": 10000.0, "tie_word_embeddings": c.Tie, "head_dim": hd,
	}
	gemma := arch == "Gemma3ForCausalLM"
	if gemma {
		cfg["hidden_act"] = "gelu_pytorch_tanh"
		cfg["tie_word_embeddings"] = true // Gemma's output layer is the embedding
	} else {
		cfg["hidden_act"] = "silu"
	}
	for k, v := range c.Extra {
		cfg[k] = v
	}
	r := rand.New(rand.NewPCG(seed, 1))
	rnd := func(name string, scale, mean float32, shape ...int) tensor {
		n := 1
		for _, d := range shape {
			n *= d
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = mean + scale*float32(r.NormFloat64())
		}
		return tensor{name, shape, v}
	}
	normMean := float32(1)
	if gemma {
		normMean = 0 // Gemma stores w-1 and multiplies by 1+w
	}
	q, kv := c.Heads*hd, c.KVHeads*hd
	ts := []tensor{rnd("model.embed_tokens.weight", 0.5, 0, c.Vocab, c.Hidden)}
	for l := 0; l < c.Layers; l++ {
		p := fmt.Sprintf("model.layers.%d.", l)
		ts = append(ts,
			rnd(p+"input_layernorm.weight", 0.1, normMean, c.Hidden),
			rnd(p+"post_attention_layernorm.weight", 0.1, normMean, c.Hidden),
			rnd(p+"self_attn.o_proj.weight", 0.2, 0, c.Hidden, q),
			rnd(p+"mlp.down_proj.weight", 0.2, 0, c.Hidden, c.Inter))
		if arch == "Phi3ForCausalLM" {
			ts = append(ts, rnd(p+"self_attn.qkv_proj.weight", 0.2, 0, q+2*kv, c.Hidden),
				rnd(p+"mlp.gate_up_proj.weight", 0.2, 0, 2*c.Inter, c.Hidden))
		} else {
			ts = append(ts,
				rnd(p+"self_attn.q_proj.weight", 0.2, 0, q, c.Hidden),
				rnd(p+"self_attn.k_proj.weight", 0.2, 0, kv, c.Hidden),
				rnd(p+"self_attn.v_proj.weight", 0.2, 0, kv, c.Hidden),
				rnd(p+"mlp.gate_proj.weight", 0.2, 0, c.Inter, c.Hidden),
				rnd(p+"mlp.up_proj.weight", 0.2, 0, c.Inter, c.Hidden))
		}
		if gemma || arch == "Qwen3ForCausalLM" {
			ts = append(ts, rnd(p+"self_attn.q_norm.weight", 0.1, normMean, hd),
				rnd(p+"self_attn.k_norm.weight", 0.1, normMean, hd))
		}
		if gemma {
			ts = append(ts, rnd(p+"pre_feedforward_layernorm.weight", 0.1, 0, c.Hidden),
				rnd(p+"post_feedforward_layernorm.weight", 0.1, 0, c.Hidden))
		}
		if c.QKVBias {
			ts = append(ts,
				rnd(p+"self_attn.q_proj.bias", 0.1, 0, c.Heads*hd),
				rnd(p+"self_attn.k_proj.bias", 0.1, 0, c.KVHeads*hd),
				rnd(p+"self_attn.v_proj.bias", 0.1, 0, c.KVHeads*hd))
		}
	}
	ts = append(ts, rnd("model.norm.weight", 0.1, normMean, c.Hidden))
	if !c.Tie && !gemma {
		ts = append(ts, rnd("lm_head.weight", 0.5, 0, c.Vocab, c.Hidden))
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].name < ts[j].name })
	return cfg, ts
}

// writeSafetensors writes the tensors ts with values stored as f32, or bf16.
func writeSafetensors(path string, ts []tensor, bf16 bool) error {
	out := make([]Tensor, len(ts))
	for i, t := range ts {
		var raw []byte
		for _, v := range t.vals {
			if bf16 {
				raw = binary.LittleEndian.AppendUint16(raw, BF16(v))
			} else {
				raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(v))
			}
		}
		out[i] = Tensor{Name: t.name, DType: "F32", Shape: t.shape, Raw: raw}
		if bf16 {
			out[i].DType = "BF16"
		}
	}
	return WriteSafetensors(path, out)
}

// WriteSafetensors writes the format by hand: an 8-byte little-endian header length,
// the JSON header (padded with spaces to a multiple of 8, as the reference writer
// does) and the tensors' bytes back to back in the order given.
func WriteSafetensors(path string, ts []Tensor) error {
	header := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	var data []byte
	for _, t := range ts {
		header[t.Name] = map[string]any{"dtype": t.DType, "shape": t.Shape,
			"data_offsets": []int{len(data), len(data) + len(t.Raw)}}
		data = append(data, t.Raw...)
	}
	h, err := json.Marshal(header)
	if err != nil {
		return err
	}
	for len(h)%8 != 0 {
		h = append(h, ' ')
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	out = append(append(out, h...), data...)
	return os.WriteFile(path, out, 0o644)
}

// BF16 rounds v to bfloat16 (nearest even), returning its bits.
func BF16(v float32) uint16 {
	u := math.Float32bits(v)
	if v != v {
		return uint16(u>>16) | 0x40
	}
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}
