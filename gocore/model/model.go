package model

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"gorgonia.org/tensor"

	"github.com/tetherlm/tether/gocore/tokenmask"
)

// Model is a loaded Llama-family decoder: its config, its weights (handles held by an
// Engine) and the small vectors (norm weights, biases) the host-side code uses. It is
// immutable after Load; a State holds everything one sequence changes.
type Model struct {
	cfg    Config
	dir    string
	eng    Engine
	ownEng bool
	st     *SafeTensors
	embed  Weight // [vocab, hidden]
	lmHead Weight // [vocab, hidden]; the embedding when tied
	norm   Weight // [1, hidden]
	layers []layer
	rope   *RoPE
	// ropeLocal is the sliding layers' RoPE when it differs (Gemma3), else nil.
	ropeLocal  *RoPE
	embedScale float32 // the embedding's multiplier: 1, or √hidden_size for Gemma
}

// layer holds one decoder block's parameters (biases and the optional norms are nil
// when the architecture has none).
type layer struct {
	attnNorm, mlpNorm         Weight // [1, hidden]: input_layernorm, the MLP's input norm
	postAttnNorm, postMLPNorm Weight // [1, hidden]: Gemma3's sandwich norms
	qNorm, kNorm              Weight // [1, head_dim]: Qwen3's and Gemma3's q_norm, k_norm
	q, k, v, o                Linear
	gate, up, down            Linear
	attn                      AttentionOptions
	local                     bool // rotated by ropeLocal
}

// Option configures Load.
type Option func(*options)

type options struct {
	engine  Engine
	threads int
	bf16    int8 // 1 WithBF16Math, -1 WithExactBF16, 0 the default (bf16 math)
	int8    bool
}

// WithEngine runs the weight products on e (default: a CPU engine). The model does
// not close an engine it was given.
func WithEngine(e Engine) Option { return func(o *options) { o.engine = e } }

// WithThreads sets how many workers the default CPU engine uses (<= 0: GOMAXPROCS).
func WithThreads(n int) Option { return func(o *options) { o.threads = n } }

// WithBF16Math gives the default CPU engine WithBF16Products, which is the default: a
// bf16 checkpoint's prefill rounds its inputs to bf16 and multiplies in bf16, as
// PyTorch and llama.cpp do for bf16 models, where the CPU has AVX512-BF16 (about 1.6×
// the prefill speed there); decode (one token) multiplies the bf16 weights by float32
// inputs exactly either way. See WithExactBF16.
func WithBF16Math() Option { return func(o *options) { o.bf16 = 1 } }

// WithExactBF16 makes the default CPU engine multiply a bf16 checkpoint's weights by
// float32 inputs exactly in prefill too, instead of rounding the inputs to bf16
// (WithBF16Math, the default): the results then equal those of the checkpoint widened
// to float32, at about 0.6× the prefill speed on AVX512-BF16 CPUs.
func WithExactBF16() Option { return func(o *options) { o.bf16 = -1 } }

// WithInt8Weights gives the default CPU engine WithInt8Products: weight matrices are
// quantized at load to 8 bits in blocks of 32 with one scale each (a quarter of
// float32's memory, faster decode where decode is bound by memory). It is an
// approximation: logits differ from those of the weights as stored (on the test models
// of tests_py/test_int8_weights.py by 1.4-3% of the largest |logit|; see
// WithInt8Products). An engine given with WithEngine is not changed (make it with
// WithInt8Products instead).
func WithInt8Weights() Option { return func(o *options) { o.int8 = true } }

// Load reads a Hugging Face model directory (config.json and safetensors weights in
// f32, bf16 or f16) and uploads the weights to the engine: f32 as they are, bf16 kept
// as bf16 (half the memory and the memory traffic; on the default CPU engine in b12
// panels where the CPU reads them, a quarter less again, see WithB12Panels; decode
// widens each weight exactly as it reads it, and prefill multiplies in bf16 as PyTorch
// does, see WithBF16Math and WithExactBF16), f16 widened to f32. Errors name the missing file, the unsupported architecture, or the tensor
// that is missing or has the wrong shape.
func Load(dir string, opts ...Option) (*Model, error) {
	o := options{}
	for _, f := range opts {
		f(&o)
	}
	cfg, err := LoadConfig(dir)
	if err != nil {
		return nil, err
	}
	if o.engine != nil && (o.int8 || o.bf16 != 0) {
		return nil, fmt.Errorf("model: WithInt8Weights, WithBF16Math and WithExactBF16 configure the default CPU engine, not the %s engine given with WithEngine", o.engine.Name())
	}
	st, err := OpenSafeTensorsDir(dir)
	if err != nil {
		return nil, err
	}
	m := &Model{cfg: *cfg, dir: dir, st: st, eng: o.engine}
	if m.eng == nil {
		var copts []CPUOption
		if o.bf16 >= 0 {
			copts = append(copts, WithBF16Products())
		}
		if o.int8 {
			copts = append(copts, WithInt8Products())
		}
		m.eng, m.ownEng = NewCPU(o.threads, copts...), true
	}
	if m.rope, err = NewRoPE(cfg.RotaryDim, cfg.RopeTheta, cfg.RopeScaling); err != nil {
		m.Close()
		return nil, err
	}
	if cfg.LocalRopeTheta > 0 {
		if m.ropeLocal, err = NewRoPE(cfg.RotaryDim, cfg.LocalRopeTheta, nil); err != nil {
			m.Close()
			return nil, err
		}
	}
	if err := m.loadWeights(); err != nil {
		m.Close()
		return nil, err
	}
	if _, ok := m.eng.(*CPU); ok {
		// The CPU engine copied every tensor into its panels: the file mappings can go.
		if err := m.st.Close(); err != nil {
			m.Close()
			return nil, err
		}
		m.st = nil
	}
	return m, nil
}

// loader reads tensors with shape checks, stopping at the first error.
type loader struct {
	m   *Model
	err error
}

// raw returns a tensor as an engine-ready host tensor: float32, or uint16 bfloat16
// bits for a BF16 checkpoint tensor; it checks the shape.
func (l *loader) raw(name string, shape ...int) *tensor.Dense {
	if l.err != nil {
		return nil
	}
	info, ok := l.m.st.Info(name)
	if !ok {
		l.err = &TensorError{Tensor: name, Source: l.m.dir, Missing: true}
		return nil
	}
	if !slices.Equal(info.Shape, shape) {
		l.err = &TensorError{Tensor: name, Source: info.File, Want: shape, Got: info.Shape}
		return nil
	}
	dims := shape
	if len(dims) == 1 {
		dims = []int{1, shape[0]}
	}
	if info.DType == BF16 {
		bits, _, err := l.m.st.BF16(name)
		if err != nil {
			l.err = err
			return nil
		}
		return tensor.New(tensor.WithShape(dims...), tensor.WithBacking(bits))
	}
	data, _, err := l.m.st.Float32(name)
	if err != nil {
		var te *TensorError
		if errors.As(err, &te) {
			te.Source = l.m.dir
		}
		l.err = err
		return nil
	}
	return tensor.New(tensor.WithShape(dims...), tensor.WithBacking(data))
}

// weight uploads a matrix [rows, cols] or, with one dimension, a vector as [1, n].
func (l *loader) weight(name string, shape ...int) Weight {
	t := l.raw(name, shape...)
	if l.err != nil {
		return nil
	}
	w, err := l.m.eng.Upload(name, t)
	if err != nil {
		l.err = err
	}
	return w
}

// norm uploads an RMSNorm weight [n] as [1, n]; with Config.NormPlusOne it uploads
// 1+w computed in float32 (transformers' x·(1+w.float())), as float32 even for a BF16
// checkpoint, since 1+w rounded back to bf16 would lose w's low bits.
func (l *loader) norm(name string, n int) Weight {
	if !l.m.cfg.NormPlusOne {
		return l.weight(name, n)
	}
	t := l.raw(name, n)
	if l.err != nil {
		return nil
	}
	v := make([]float32, n)
	switch d := t.Data().(type) {
	case []uint16:
		widenBF16Go(v, d)
	case []float32:
		copy(v, d)
	}
	for i := range v {
		v[i] += 1
	}
	w, err := l.m.eng.Upload(name, tensor.New(tensor.WithShape(1, n), tensor.WithBacking(v)))
	if err != nil {
		l.err = err
	}
	return w
}

// split reads a fused projection [Σ rows, cols] and uploads its row blocks as
// separate weights named name[a:b] (Phi-3's qkv_proj and gate_up_proj).
func (l *loader) split(name string, cols int, rows ...int) []Linear {
	total := 0
	for _, r := range rows {
		total += r
	}
	t := l.raw(name, total, cols)
	if l.err != nil {
		return make([]Linear, len(rows))
	}
	out := make([]Linear, len(rows))
	r0 := 0
	for i, r := range rows {
		var part *tensor.Dense
		switch d := t.Data().(type) {
		case []uint16:
			part = tensor.New(tensor.WithShape(r, cols), tensor.WithBacking(d[r0*cols:(r0+r)*cols]))
		case []float32:
			part = tensor.New(tensor.WithShape(r, cols), tensor.WithBacking(d[r0*cols:(r0+r)*cols]))
		}
		w, err := l.m.eng.Upload(fmt.Sprintf("%s[%d:%d]", name, r0, r0+r), part)
		if err != nil {
			l.err = err
			return out
		}
		out[i] = Linear{W: w}
		r0 += r
	}
	return out
}

func (l *loader) linear(name string, rows, cols int, bias bool) Linear {
	lin := Linear{W: l.weight(name+".weight", rows, cols)}
	if bias {
		lin.B = l.weight(name+".bias", rows)
	}
	return lin
}

func (m *Model) loadWeights() error {
	c := &m.cfg
	l := &loader{m: m}
	H, I, V := c.HiddenSize, c.IntermediateSize, c.VocabSize
	qDim, kvDim := c.NumHeads*c.HeadDim, c.NumKVHeads*c.HeadDim
	m.embed = l.weight("model.embed_tokens.weight", V, H)
	m.embedScale = 1
	if c.EmbedScale {
		// transformers multiplies by a tensor of √hidden_size in the embedding's dtype.
		info, _ := m.st.Info("model.embed_tokens.weight")
		m.embedScale = roundToDType(float32(math.Sqrt(float64(H))), info.DType)
	}
	for i := 0; i < c.NumLayers && l.err == nil; i++ {
		p := fmt.Sprintf("model.layers.%d.", i)
		ly := layer{
			attnNorm: l.norm(p+"input_layernorm.weight", H),
			attn:     AttentionOptions{Scale: float32(c.AttnScale), Window: c.Window(i)},
			local:    m.ropeLocal != nil && c.Window(i) > 0,
		}
		if c.SandwichNorms {
			ly.postAttnNorm = l.norm(p+"post_attention_layernorm.weight", H)
			ly.mlpNorm = l.norm(p+"pre_feedforward_layernorm.weight", H)
			ly.postMLPNorm = l.norm(p+"post_feedforward_layernorm.weight", H)
		} else {
			ly.mlpNorm = l.norm(p+"post_attention_layernorm.weight", H)
		}
		if c.FusedQKV {
			qkv := l.split(p+"self_attn.qkv_proj.weight", H, qDim, kvDim, kvDim)
			ly.q, ly.k, ly.v = qkv[0], qkv[1], qkv[2]
		} else {
			ly.q = l.linear(p+"self_attn.q_proj", qDim, H, c.QKVBias)
			ly.k = l.linear(p+"self_attn.k_proj", kvDim, H, c.QKVBias)
			ly.v = l.linear(p+"self_attn.v_proj", kvDim, H, c.QKVBias)
		}
		ly.o = l.linear(p+"self_attn.o_proj", H, qDim, c.OBias)
		if c.QKNorm {
			ly.qNorm = l.norm(p+"self_attn.q_norm.weight", c.HeadDim)
			ly.kNorm = l.norm(p+"self_attn.k_norm.weight", c.HeadDim)
		}
		if c.FusedGateUp {
			gu := l.split(p+"mlp.gate_up_proj.weight", H, I, I)
			ly.gate, ly.up = gu[0], gu[1]
		} else {
			ly.gate = l.linear(p+"mlp.gate_proj", I, H, c.MLPBias)
			ly.up = l.linear(p+"mlp.up_proj", I, H, c.MLPBias)
		}
		ly.down = l.linear(p+"mlp.down_proj", H, I, c.MLPBias)
		m.layers = append(m.layers, ly)
	}
	m.norm = l.norm("model.norm.weight", H)
	if c.TieEmbeddings {
		m.lmHead = m.embed
	} else {
		m.lmHead = l.weight("lm_head.weight", V, H)
		var te *TensorError
		if errors.As(l.err, &te) && te.Missing && te.Tensor == "lm_head.weight" {
			te.Hint = "config.json has tie_word_embeddings false (set it true if the output layer is the embedding)"
		}
	}
	return l.err
}

// Config returns the model's configuration.
func (m *Model) Config() Config { return m.cfg }

// Dir returns the directory the model was loaded from.
func (m *Model) Dir() string { return m.dir }

// Engine returns the engine that runs the model's products.
func (m *Model) Engine() Engine { return m.eng }

// Close releases the weights (the file mappings) and an engine Load created. The model
// and its states must not be used afterwards.
func (m *Model) Close() error {
	var first error
	if m.ownEng && m.eng != nil {
		first = m.eng.Close()
	}
	m.eng = nil
	if m.st != nil {
		if err := m.st.Close(); err != nil && first == nil {
			first = err
		}
		m.st = nil
	}
	return first
}

// State is one sequence being decoded: its KV cache (held by the engine) and the
// activations of the forward pass, allocated once and reallocated only when a call has
// a different number of tokens than the last. A State belongs to one Model and one
// goroutine at a time.
type State struct {
	m        *Model
	pos      int // positions already in the cache
	kv       KV
	cos, sin []float32 // [n, headDim/2] for the positions of the current call
	n        int       // rows the activations below are shaped for
	// cosL, sinL: the same for the sliding layers' RoPE (Model.ropeLocal), if any
	cosL, sinL []float32
	bufs       struct {
		x, q, k, v, att, g, h *tensor.Dense
		logits                *tensor.Dense // host [n, vocab], ForwardAll
	}
	lastLogits *tensor.Dense // host [vocab], the last row, for Forward
	pending    []float32     // backing of lastLogits
	pick       [1]int32      // ForwardArgmax's result from an ArgmaxEngine
}

// NewState returns an empty sequence for m.
func (m *Model) NewState() *State { return &State{m: m} }

// Pos returns how many positions (prompt and generated tokens) the state holds.
func (s *State) Pos() int { return s.pos }

// Reset empties the KV cache (keeping its memory) to start a new sequence.
func (s *State) Reset() { s.pos = 0 }

// Warm runs a short sequence on s, a prefill of warmTokens tokens and two decode
// steps, then resets s. An accelerator engine pays its one-time costs there (loading
// kernels, initialising its libraries, sizing buffers and the cache, recording the
// decode step) instead of in the first prefill a caller times, as llama.cpp's warm-up
// run does; on the CPU engine it only sizes s. The tokens are id 0 repeated.
func (m *Model) Warm(s *State) error {
	n := warmTokens
	if mp := m.cfg.MaxPositions; mp > 0 {
		n = max(1, min(n, mp-2))
	}
	defer s.Reset()
	if _, err := m.Forward(s, make([]int, n)); err != nil {
		return fmt.Errorf("model: warm-up: %w", err)
	}
	for i := 0; i < 2 && (m.cfg.MaxPositions <= 0 || s.pos < m.cfg.MaxPositions); i++ {
		if _, err := m.Forward(s, []int{0}); err != nil {
			return fmt.Errorf("model: warm-up: %w", err)
		}
	}
	return nil
}

// warmTokens is the prefill length of Warm.
const warmTokens = 32

// ensure makes the KV cache and shapes the activations for n rows.
func (s *State) ensure(n int, allLogits bool) error {
	c := &s.m.cfg
	e := s.m.eng
	if s.kv == nil {
		kv, err := e.NewKV(c.NumLayers, c.NumKVHeads, c.HeadDim, c.MaxPositions)
		if err != nil {
			return err
		}
		s.kv = kv
	}
	if s.n != n {
		H, I := c.HiddenSize, c.IntermediateSize
		qDim, kvDim := c.NumHeads*c.HeadDim, c.NumKVHeads*c.HeadDim
		b := &s.bufs
		var errs [7]error
		b.x, errs[0] = e.Alloc(n, H)
		b.q, errs[1] = e.Alloc(n, qDim)
		b.k, errs[2] = e.Alloc(n, kvDim)
		b.v, errs[3] = e.Alloc(n, kvDim)
		b.att, errs[4] = e.Alloc(n, qDim)
		b.g, errs[5] = e.Alloc(n, I)
		b.h, errs[6] = e.Alloc(1, H)
		if err := firstErr(errs[:]...); err != nil {
			s.n = 0
			return err
		}
		b.logits = nil
		half := c.RotaryDim / 2
		s.cos, s.sin = make([]float32, n*half), make([]float32, n*half)
		if s.m.ropeLocal != nil {
			s.cosL, s.sinL = make([]float32, n*half), make([]float32, n*half)
		}
		s.n = n
	}
	if allLogits && s.bufs.logits == nil {
		s.bufs.logits = tensor.New(tensor.WithShape(n, c.VocabSize), tensor.WithBacking(make([]float32, n*c.VocabSize)))
	}
	if s.lastLogits == nil {
		s.pending = make([]float32, c.VocabSize)
		s.lastLogits = tensor.New(tensor.WithShape(c.VocabSize), tensor.WithBacking(s.pending))
	}
	return nil
}

// Forward runs ids (the next len(ids) tokens of the sequence: the prompt at prefill,
// one token per decode step) through the model, appends them to the KV cache, and
// returns the logits of the last one ([vocab]). The result is a buffer of the state,
// overwritten by the next call.
func (m *Model) Forward(s *State, ids []int) (*tensor.Dense, error) {
	if err := m.forward(s, ids, false); err != nil {
		return nil, err
	}
	return s.lastLogits, nil
}

// ForwardAll is Forward returning the logits of every position ([len(ids), vocab]).
func (m *Model) ForwardAll(s *State, ids []int) (*tensor.Dense, error) {
	if err := m.forward(s, ids, true); err != nil {
		return nil, err
	}
	return s.bufs.logits, nil
}

// ForwardArgmax is Forward followed by the greedy pick: the lowest id of the highest
// logit among the tokens mask allows (bit i%32 of mask[i/32] set: token i allowed; nil
// allows every token), or -1 when it allows none. A NaN or +Inf logit is an error
// naming the first such token, whatever the mask. On an ArgmaxEngine (the CUDA engine)
// the pick is made where the logits are, and only the id comes back: the state's logits
// are then not updated (Forward's result is stale until the next Forward). Models with
// a final logit soft-cap (Gemma) pick on the host from the capped logits.
func (m *Model) ForwardArgmax(s *State, ids []int, mask []uint32) (int, error) {
	if mask != nil && len(mask) != (m.cfg.VocabSize+31)/32 {
		return 0, fmt.Errorf("model: argmax mask of %d words for a vocabulary of %d", len(mask), m.cfg.VocabSize)
	}
	if _, ok := m.eng.(ArgmaxEngine); ok && m.cfg.FinalLogitSoftcap == 0 {
		if err := m.run(s, ids, false, &argmaxCall{mask: mask}); err != nil {
			return 0, err
		}
		id := int(s.pick[0])
		if id <= -2 {
			bad := -2 - id
			return 0, fmt.Errorf("model: logit of token %d is not a number below +Inf", bad)
		}
		return id, nil
	}
	if err := m.forward(s, ids, false); err != nil {
		return 0, err
	}
	return argmaxAllowed(s.pending, mask)
}

// argmaxCall asks forward to end with ArgmaxEngine.ArgmaxMatVec instead of the logits.
type argmaxCall struct {
	mask []uint32
}

// argmaxAllowed is ForwardArgmax's pick on the host: the sampler's (tokenmask.Argmax,
// ArgmaxIn), so greedy decoding picks the same token whichever way it goes.
func argmaxAllowed(logits []float32, mask []uint32) (int, error) {
	best, bad := tokenmask.Argmax(logits)
	if bad >= 0 {
		return 0, fmt.Errorf("model: logit of token %d is not a number below +Inf", bad)
	}
	if mask != nil {
		best = tokenmask.ArgmaxIn(logits, mask)
	}
	return best, nil
}

// forward runs the decoder on the engine: the embedding (scaled for Gemma); per layer,
// RMSNorm fused with the q/k/v projections, the per-head q/k norms (Qwen3, Gemma3),
// RoPE (the layer's own for Gemma3's sliding layers), attention over the cache (with
// the layer's window and scale), o_proj added to the residual stream (normalized
// first with Gemma3's sandwich norms), RMSNorm fused with gate/up and the gated
// activation, down_proj added to the residual stream (normalized first, likewise);
// the final RMSNorm, lm_head, and the logits' softcap (Gemma3) on the host.
func (m *Model) forward(s *State, ids []int, allLogits bool) error {
	return m.run(s, ids, allLogits, nil)
}

// run is forward, ending with the device-side greedy pick when pick is not nil.
func (m *Model) run(s *State, ids []int, allLogits bool, pick *argmaxCall) error {
	if m.eng == nil {
		return errors.New("model: forward on a closed model")
	}
	if s.m != m {
		return errors.New("model: state belongs to another model")
	}
	n := len(ids)
	if n == 0 {
		return errors.New("model: forward with no tokens")
	}
	c := &m.cfg
	if c.MaxPositions > 0 && s.pos+n > c.MaxPositions {
		return fmt.Errorf("model: %d positions exceed max_position_embeddings %d", s.pos+n, c.MaxPositions)
	}
	for i, id := range ids {
		if id < 0 || id >= c.VocabSize {
			return fmt.Errorf("model: token id %d at index %d is outside the vocabulary (%d)", id, i, c.VocabSize)
		}
	}
	if err := s.ensure(n, allLogits); err != nil {
		return err
	}
	e, b := m.eng, &s.bufs
	hd, rd := c.HeadDim, c.RotaryDim
	half := rd / 2
	eps := float32(c.RMSNormEps)
	pos0 := s.pos
	for t := 0; t < n; t++ {
		m.rope.CosSinAt(pos0+t, pos0+n, s.cos[t*half:(t+1)*half], s.sin[t*half:(t+1)*half])
		if m.ropeLocal != nil {
			m.ropeLocal.CosSinAt(pos0+t, pos0+n, s.cosL[t*half:(t+1)*half], s.sinL[t*half:(t+1)*half])
		}
	}
	ops := func() error {
		if err := e.Rows(b.x, m.embed, ids, m.embedScale); err != nil {
			return err
		}
		for li := range m.layers {
			ly := &m.layers[li]
			cos, sin := s.cos, s.sin
			if ly.local {
				cos, sin = s.cosL, s.sinL
			}
			steps := [...]func() error{
				func() error {
					return e.NormMatMul([]*tensor.Dense{b.q, b.k, b.v}, b.x, ly.attnNorm, eps, []Linear{ly.q, ly.k, ly.v})
				},
				func() error {
					if ly.qNorm == nil {
						return nil
					}
					if err := e.HeadRMSNorm(b.q, ly.qNorm, eps); err != nil {
						return err
					}
					return e.HeadRMSNorm(b.k, ly.kNorm, eps)
				},
				func() error {
					if fe, ok := e.(RoPEAttentionEngine); ok {
						return fe.RoPEAttention(b.att, b.q, b.k, b.v, s.kv, li, pos0, hd, rd, cos, sin, ly.attn)
					}
					if err := e.RoPE(b.q, hd, rd, cos, sin); err != nil {
						return err
					}
					if err := e.RoPE(b.k, hd, rd, cos, sin); err != nil {
						return err
					}
					return e.Attention(b.att, b.q, b.k, b.v, s.kv, li, pos0, ly.attn)
				},
				func() error {
					if ly.postAttnNorm != nil {
						return e.ResidualNorm(b.x, b.att, ly.o, ly.postAttnNorm, eps)
					}
					return e.Residual(b.x, b.att, ly.o)
				},
				func() error { return e.NormGLU(b.g, b.x, ly.mlpNorm, eps, ly.gate, ly.up, c.Activation) },
				func() error {
					if ly.postMLPNorm != nil {
						return e.ResidualNorm(b.x, b.g, ly.down, ly.postMLPNorm, eps)
					}
					return e.Residual(b.x, b.g, ly.down)
				},
			}
			for _, step := range steps {
				if err := step(); err != nil {
					return err
				}
			}
		}
		if allLogits {
			return e.NormMatMul([]*tensor.Dense{b.logits}, b.x, m.norm, eps, []Linear{{W: m.lmHead}})
		}
		if err := e.RMSNorm(b.h, b.x, m.norm, eps); err != nil {
			return err
		}
		if pick != nil {
			return e.(ArgmaxEngine).ArgmaxMatVec(s.pick[:], b.h, m.lmHead, pick.mask)
		}
		return e.MatVec(s.lastLogits, b.h, m.lmHead)
	}
	var err error
	if se, ok := e.(StepEngine); ok {
		st := &Step{Seq: stepKey{s, allLogits, pick != nil, pick != nil && pick.mask != nil}, IDs: ids, Pos0: pos0, Cos: s.cos[:n*half], Sin: s.sin[:n*half], KV: s.kv}
		if pick != nil {
			st.Mask = pick.mask
		}
		if m.ropeLocal != nil {
			st.LocalCos, st.LocalSin = s.cosL[:n*half], s.sinL[:n*half]
		}
		err = se.Step(st, ops)
	} else {
		err = ops()
	}
	if err != nil {
		return err
	}
	s.pos += n
	if allLogits {
		softcap(b.logits.Float32s(), c.FinalLogitSoftcap)
		copy(s.pending, b.logits.Float32s()[(n-1)*c.VocabSize:])
		return nil
	}
	softcap(s.pending, c.FinalLogitSoftcap)
	return nil
}

// stepKey is a State's StepEngine sequence key: the operations of a call depend on
// whether it returns every position's logits, or the greedy pick, with or without a
// mask (a recording reads the mask from where the step's inputs put it, or reads none).
type stepKey struct {
	s      *State
	all    bool
	argmax bool
	masked bool
}

// softcap sets x[i] = cap·tanh(x[i]/cap) in float32 steps as transformers does (cap 0:
// nothing).
func softcap(x []float32, cap float64) {
	if cap == 0 {
		return
	}
	c := float32(cap)
	for i, v := range x {
		x[i] = float32(math.Tanh(float64(v/c))) * c
	}
}

// roundToDType rounds v to the nearest value of a checkpoint dtype (ties to even), as
// PyTorch's conversion does: BF16 keeps 8 significant bits, F16 11 (v must be in F16's
// normal range), F32 all.
func roundToDType(v float32, d DType) float32 {
	drop := 0
	switch d {
	case BF16:
		drop = 16
	case F16:
		drop = 13
	default:
		return v
	}
	b := math.Float32bits(v)
	half := uint32(1) << (drop - 1)
	lsb := (b >> drop) & 1
	b = (b + half - 1 + lsb) &^ (uint32(1)<<drop - 1)
	return math.Float32frombits(b)
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
