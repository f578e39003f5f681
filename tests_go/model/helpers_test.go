package model_test

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/model"
	"github.com/tetherlm/tether/tests_go/internal/tinymodel"
)

// stTensor is one tensor to write into a hand-made safetensors file.
type stTensor struct {
	name  string
	dtype string // "F32", "BF16", "F16"
	shape []int
	raw   []byte // little-endian element bytes
}

func f32Bytes(v ...float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func u16Bytes(v ...uint16) []byte {
	b := make([]byte, 2*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint16(b[2*i:], x)
	}
	return b
}

// toBF16Tensors rounds f32 tensors to bf16 (truncating, as bf16Round) and returns them
// with the same values widened back to f32.
func toBF16Tensors(f32 []stTensor) (bf, wide []stTensor) {
	for _, ts := range f32 {
		v := make([]float32, len(ts.raw)/4)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(ts.raw[4*i:]))
		}
		bits, w := bf16Round(v)
		bf = append(bf, stTensor{ts.name, "BF16", ts.shape, u16Bytes(bits...)})
		wide = append(wide, stTensor{ts.name, "F32", ts.shape, f32Bytes(w...)})
	}
	return bf, wide
}

// writeSafetensors writes a safetensors file of tensors (tinymodel.WriteSafetensors).
func writeSafetensors(t testing.TB, path string, tensors []stTensor) {
	t.Helper()
	ts := make([]tinymodel.Tensor, len(tensors))
	for i, x := range tensors {
		ts[i] = tinymodel.Tensor{Name: x.name, DType: x.dtype, Shape: x.shape, Raw: x.raw}
	}
	require.NoError(t, tinymodel.WriteSafetensors(path, ts))
}

// tinyConfig is a Llama config small enough to write by hand.
type tinyConfig struct {
	Arch                                  string
	Hidden, Inter, Layers, Heads, KVHeads int
	Vocab                                 int
	Tie, QKVBias                          bool
}

func (c tinyConfig) json() map[string]any {
	m := map[string]any{
		"architectures": []string{c.Arch}, "hidden_size": c.Hidden, "intermediate_size": c.Inter,
		"num_hidden_layers": c.Layers, "num_attention_heads": c.Heads, "num_key_value_heads": c.KVHeads,
		"vocab_size": c.Vocab, "max_position_embeddings": 128, "rms_norm_eps": 1e-5,
		"rope_theta": 10000.0, "tie_word_embeddings": c.Tie, "hidden_act": "silu",
	}
	return m
}

// tensorsFor returns random f32 weights of the right shapes for c.
func tensorsFor(c tinyConfig, seed uint64) []stTensor {
	return fromTiny(tinymodel.Tensors(tinymodel.Config{Arch: c.Arch, Hidden: c.Hidden, Inter: c.Inter, Layers: c.Layers,
		Heads: c.Heads, KVHeads: c.KVHeads, Vocab: c.Vocab, Tie: c.Tie, QKVBias: c.QKVBias}, seed))
}

// fromTiny converts tinymodel's tensors (the generator the CUDA engine's tests share).
func fromTiny(ts []tinymodel.Tensor) []stTensor {
	out := make([]stTensor, len(ts))
	for i, t := range ts {
		out[i] = stTensor{t.Name, t.DType, t.Shape, t.Raw}
	}
	return out
}

// writeModel writes config.json (with overrides) and model.safetensors into a new dir.
func writeModel(t testing.TB, c tinyConfig, tensors []stTensor, override map[string]any) string {
	t.Helper()
	dir := t.TempDir()
	cfg := c.json()
	for k, v := range override {
		if v == nil {
			delete(cfg, k)
		} else {
			cfg[k] = v
		}
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644))
	sort.Slice(tensors, func(i, j int) bool { return tensors[i].name < tensors[j].name })
	writeSafetensors(t, filepath.Join(dir, "model.safetensors"), tensors)
	return dir
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// naiveAttention is causal grouped-query attention in float64, for rows q [total,
// heads*hd] over k, v [total, kvHeads*hd], with opt's window and scale (default
// 1/sqrt(hd)): the reference the engines' Attention is checked against.
func naiveAttention(q, k, v []float32, heads, kvHeads, hd, total int, opt model.AttentionOptions) []float64 {
	qDim, kvDim := heads*hd, kvHeads*hd
	scale := float64(opt.Scale)
	if scale == 0 {
		scale = 1 / math.Sqrt(float64(hd))
	}
	want := make([]float64, total*qDim)
	for t0 := 0; t0 < total; t0++ {
		lo := 0
		if opt.Window > 0 {
			lo = max(0, t0-opt.Window+1)
		}
		for h := 0; h < heads; h++ {
			kh := h / (heads / kvHeads)
			sc := make([]float64, t0+1-lo)
			mx := math.Inf(-1)
			for j := range sc {
				var s float64
				for i := 0; i < hd; i++ {
					s += float64(q[t0*qDim+h*hd+i]) * float64(k[(lo+j)*kvDim+kh*hd+i])
				}
				sc[j] = s * scale
				mx = max(mx, sc[j])
			}
			var sum float64
			for j := range sc {
				sc[j] = math.Exp(sc[j] - mx)
				sum += sc[j]
			}
			for j := range sc {
				for i := 0; i < hd; i++ {
					want[t0*qDim+h*hd+i] += sc[j] / sum * float64(v[(lo+j)*kvDim+kh*hd+i])
				}
			}
		}
	}
	return want
}

// attentionAlong runs e's Attention over the total positions of q, k, v at layer: a
// prefill of the first positions, then one position at a time; it returns the outputs.
func attentionAlong(t *testing.T, e *model.CPU, kv model.KV, layer int, q, k, v []float32, qDim, kvDim, total, first int, opt model.AttentionOptions) []float64 {
	t.Helper()
	got := make([]float64, 0, total*qDim)
	for pos := 0; pos < total; {
		n := first
		if pos > 0 {
			n = 1
		}
		out := dense(n, qDim, make([]float32, n*qDim))
		require.NoError(t, e.Attention(out, dense(n, qDim, q[pos*qDim:(pos+n)*qDim]),
			dense(n, kvDim, k[pos*kvDim:(pos+n)*kvDim]), dense(n, kvDim, v[pos*kvDim:(pos+n)*kvDim]), kv, layer, pos, opt))
		got = append(got, f64(out.Float32s())...)
		pos += n
	}
	return got
}
