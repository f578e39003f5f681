package model

import (
	"fmt"

	"gorgonia.org/tensor"
)

// Weight is a read-only parameter held by an Engine: in host memory for the CPU
// engine, in device memory for an accelerator engine. The model only passes handles
// back to the engine that made them.
type Weight interface {
	// Name is the checkpoint's tensor name, for error messages.
	Name() string
	// Shape is [rows, cols] as in the checkpoint (Hugging Face's [out_features, in_features]);
	// vectors (norm weights, biases) are [1, n].
	Shape() tensor.Shape
}

// Linear is a projection: a weight matrix and an optional bias vector (nil when the
// architecture has none), both uploaded to the same engine.
type Linear struct {
	W Weight
	B Weight
}

// KV is one sequence's key/value cache, held by the engine that made it (NewKV): the
// CPU engine keeps it in host memory, an accelerator engine next to the activations.
type KV interface {
	// Cap returns how many positions the cache holds now; Attention grows it as needed.
	Cap() int
}

// Engine runs the forward pass's operations on activations: the weight products (with
// the fused forms the decoder uses), the norms, the rotary embedding and attention over
// a KV cache. Activations are *tensor.Dense float32 values made by Alloc; an
// accelerator engine may back them with device memory, so the model never reads them
// except the logits, whose buffer the model allocates in host memory (an engine writes
// a product's result there when dst is a host tensor). Weights and the KV cache are
// handles. Rows of an activation are tokens.
//
// An Engine is used by one forward pass at a time; its methods return errors for shape
// mismatches instead of panicking.
type Engine interface {
	// Name says what runs the products, e.g. "cpu (2 threads, avx2+fma)".
	Name() string
	// Upload takes a host tensor [rows, cols] and returns a handle to use in the other
	// methods. Its dtype is float32, or uint16 holding bfloat16 bit patterns (a BF16
	// checkpoint kept at half the size; products widen each weight exactly as they read
	// it). The engine may keep t's backing slice: the caller must not modify it afterwards.
	Upload(name string, t *tensor.Dense) (Weight, error)
	// Alloc returns a zeroed activation [rows, cols] of float32.
	Alloc(rows, cols int) (*tensor.Dense, error)
	// MatVec computes dst[o] = Σ_i w[o,i]·x[i]: x has cols elements, dst rows.
	MatVec(dst, x *tensor.Dense, w Weight) error
	// MatMul computes dst[t,o] = Σ_i x[t,i]·w[o,i], i.e. dst = x·wᵀ: x is [n, cols] and
	// dst [n, rows]. It is the batched MatVec of prefill.
	MatMul(dst, x *tensor.Dense, w Weight) error
	// NormMatMul normalizes every row of x with RMSNorm (weight norm, epsilon eps) and
	// multiplies the result by each projection: dsts[i] = h·ls[i].Wᵀ + ls[i].B. x is
	// left unchanged (the residual stream); the q, k and v projections of attention
	// share one call.
	NormMatMul(dsts []*tensor.Dense, x *tensor.Dense, norm Weight, eps float32, ls []Linear) error
	// NormGLU is the MLP's first half: h = RMSNorm(x), then
	// dst = act(h·gate.Wᵀ + gate.B) ⊙ (h·up.Wᵀ + up.B), without materializing the two
	// products. act is SiLU (SwiGLU: Llama, Qwen, Mistral, Phi-3) or GELUTanh (GeGLU:
	// Gemma); see Activation for the exact functions.
	NormGLU(dst, x *tensor.Dense, norm Weight, eps float32, gate, up Linear, act Activation) error
	// Residual adds a projection to the residual stream: x += in·l.Wᵀ + l.B.
	Residual(x, in *tensor.Dense, l Linear) error
	// ResidualNorm adds a normalized projection to the residual stream:
	// x += RMSNorm(in·l.Wᵀ + l.B) with weight norm ([1, x's width]) and epsilon eps, each row of the
	// projection normalized on its own (Gemma's post_attention_layernorm and
	// post_feedforward_layernorm, applied to the block's output before the residual add).
	ResidualNorm(x, in *tensor.Dense, l Linear, norm Weight, eps float32) error
	// RMSNorm normalizes rows of x into dst; when dst has fewer rows than x, the last
	// rows of x (the final norm before the output layer needs only the last token's).
	RMSNorm(dst, x *tensor.Dense, norm Weight, eps float32) error
	// HeadRMSNorm normalizes x in place in segments of norm's length d (one attention
	// head): every row of x holds cols/d heads, and each is replaced by
	// RMSNorm(head) with weight norm [1, d] and epsilon eps (Qwen3's and Gemma3's
	// q_norm and k_norm, applied before RoPE). cols must be a multiple of d.
	HeadRMSNorm(x *tensor.Dense, norm Weight, eps float32) error
	// RoPE rotates, in place, the first rotaryDim values of every head (headDim values)
	// of every row t of x, in the rotate_half pairing (value i with value i+rotaryDim/2),
	// by the angles whose cosines and sines are cos[t*rotaryDim/2:(t+1)*rotaryDim/2] and
	// the same of sin (RoPE.CosSin, host memory). The remaining headDim-rotaryDim values
	// of each head are left as they are (partial rotary embeddings, Phi-3's
	// partial_rotary_factor); rotaryDim == headDim rotates the whole head.
	RoPE(x *tensor.Dense, headDim, rotaryDim int, cos, sin []float32) error
	// NewKV returns an empty cache for layers layers of kvHeads heads of headDim values;
	// it grows on demand, never beyond maxPositions (<= 0: no limit).
	NewKV(layers, kvHeads, headDim, maxPositions int) (KV, error)
	// Attention writes k and v (rows for positions pos0, pos0+1, ...) into the layer's
	// cache, then, for each row t of q (position p = pos0+t) and each query head, the
	// softmax of the scores s_j = opt.Scale·(q·k_j) over the positions j it sees, weighting
	// the values v_j, into out (shaped as q). It sees j = 0..p (causal), or, with
	// opt.Window = w > 0, only j = max(0, p-w+1)..p: the last w positions including
	// itself, transformers' sliding_window. opt.Scale 0 means 1/√headDim. Query head i
	// reads key/value head i/(heads/kvHeads) (grouped-query attention).
	Attention(out, q, k, v *tensor.Dense, kv KV, layer, pos0 int, opt AttentionOptions) error
	// Rows copies the rows ids of w (an embedding table), each value multiplied by
	// scale in float32, into dst [len(ids), cols]. Scale 1 copies them exactly (Gemma
	// scales its embedding by √hidden_size).
	Rows(dst *tensor.Dense, w Weight, ids []int, scale float32) error
	// Close releases what the engine holds (device memory, worker goroutines).
	Close() error
}

// StepEngine is an Engine that runs the operations of one forward call as a unit, so
// that an accelerator engine can record a decode step once and replay it (a CUDA
// graph) instead of launching each operation from the host. The forward pass calls
// Step with a closure that issues the call's operations; everything else about the
// operations is as in Engine.
type StepEngine interface {
	Engine
	// Step runs ops, the engine calls of one forward call, and returns once their host
	// outputs (the logits) are written. Within ops, Rows receives st.IDs, RoPE st.Cos
	// and st.Sin (or st.LocalCos and st.LocalSin), Attention st.Pos0 and st.KV, and
	// ArgmaxMatVec st.Mask; an engine may replay a recording of
	// an earlier call with the same st.Seq and len(st.IDs) instead of running ops,
	// with only these inputs changed.
	Step(st *Step, ops func() error) error
}

// RoPEAttentionEngine is an Engine that rotates q and k and attends in one call, so
// that an accelerator engine can fuse the launches of a decode step. RoPEAttention
// computes what RoPE(q, ...), RoPE(k, ...) then Attention(out, q, k, v, ...) compute,
// leaving q and k rotated as those would; the forward pass calls it instead of them
// when the engine has it.
type RoPEAttentionEngine interface {
	Engine
	RoPEAttention(out, q, k, v *tensor.Dense, kv KV, layer, pos0, headDim, rotaryDim int, cos, sin []float32, opt AttentionOptions) error
}

// ArgmaxEngine is an Engine that can end a forward call with the greedy pick where the
// logits are (Model.ForwardArgmax), so that one id comes back instead of a row of
// logits.
type ArgmaxEngine interface {
	Engine
	// ArgmaxMatVec computes the logits x·wᵀ of one row x and writes into dst[0] the
	// lowest index of the highest logit among the tokens mask allows (bit i%32 of
	// mask[i/32]; nil: all), -1 when it allows none, or -2-i when logit i is the first
	// NaN or +Inf one (allowed or not). len(dst) must be 1; inside a Step, mask is
	// st.Mask.
	ArgmaxMatVec(dst []int32, x *tensor.Dense, w Weight, mask []uint32) error
}

// Step describes one forward call to a StepEngine.
type Step struct {
	// Seq identifies the sequence and the kind of call: calls with equal Seq (a
	// comparable value) and equal len(IDs) issue the same operations on the same
	// activations and host outputs.
	Seq      any
	IDs      []int     // the call's tokens
	Pos0     int       // the position of IDs[0] in the cache
	Cos, Sin []float32 // the rotary angles of the call's positions, as RoPE takes them
	// LocalCos and LocalSin are the angles of the sliding-window layers when they have
	// their own RoPE base (Gemma 3), else nil.
	LocalCos, LocalSin []float32
	KV                 KV // the sequence's cache
	// Mask is the allowed-token mask of a call that ends with ArgmaxMatVec (nil: none
	// or no mask); a replay takes the new call's mask.
	Mask []uint32
}

// Activation is the gate's activation in NormGLU.
type Activation int

const (
	// SiLU is silu(g) = g/(1+e^-g) (hidden_act "silu").
	SiLU Activation = iota
	// GELUTanh is gelu(g) = g/2·(1+tanh(√(2/π)·(g+0.044715·g³))), PyTorch's
	// gelu(approximate="tanh") (hidden_act "gelu_pytorch_tanh").
	GELUTanh
)

// String returns the config.json name of the activation.
func (a Activation) String() string {
	switch a {
	case SiLU:
		return "silu"
	case GELUTanh:
		return "gelu_pytorch_tanh"
	}
	return fmt.Sprintf("Activation(%d)", int(a))
}

// AttentionOptions are the per-layer parameters of Engine.Attention.
type AttentionOptions struct {
	// Scale multiplies q·k before the softmax; 0 means 1/√headDim (Gemma uses
	// query_pre_attn_scalar^-1/2).
	Scale float32
	// Window > 0 limits a query at position p to the keys at positions p-Window+1..p
	// (sliding-window attention); 0 means every earlier position.
	Window int
}
