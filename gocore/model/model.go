package model

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"gorgonia.org/tensor"
)

// Model is a loaded Llama-family decoder: its config, its weights (handles held by an
// Engine) and the small vectors (norm weights, biases) the host-side code uses. It is
// immutable after Load; a State holds everything one sequence changes.
type Model struct {
	cfg     Config
	dir     string
	eng     Engine
	ownEng  bool
	st      *SafeTensors
	embed   Weight // [vocab, hidden]
	lmHead  Weight // [vocab, hidden]; the embedding when tied
	norm    []float32
	layers  []layer
	rope    *RoPE
	threads int
}

// layer holds one decoder block's parameters.
type layer struct {
	attnNorm, mlpNorm []float32
	wq, wk, wv, wo    Weight
	wg, wu, wd        Weight
	bq, bk, bv, bo    []float32 // nil when the architecture has no such bias
	bg, bu, bd        []float32
}

// Option configures Load.
type Option func(*options)

type options struct {
	engine  Engine
	threads int
}

// WithEngine runs the weight products on e (default: a CPU engine). The model does
// not close an engine it was given.
func WithEngine(e Engine) Option { return func(o *options) { o.engine = e } }

// WithThreads sets how many goroutines the default CPU engine and the attention use
// (<= 0: GOMAXPROCS).
func WithThreads(n int) Option { return func(o *options) { o.threads = n } }

// Load reads a Hugging Face model directory (config.json and safetensors weights in
// f32, bf16 or f16; bf16 and f16 are widened to f32) and uploads the weights to the
// engine. Errors name the missing file, the unsupported architecture, or the tensor
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
	st, err := OpenSafeTensorsDir(dir)
	if err != nil {
		return nil, err
	}
	m := &Model{cfg: *cfg, dir: dir, st: st, eng: o.engine}
	if m.eng == nil {
		m.eng, m.ownEng = NewCPU(o.threads), true
	}
	m.threads = o.threads
	if c, ok := m.eng.(*CPU); ok && m.threads <= 0 {
		m.threads = c.Threads()
	}
	if m.threads <= 0 {
		m.threads = 1
	}
	if m.rope, err = NewRoPE(cfg.HeadDim, cfg.RopeTheta, cfg.RopeScaling); err != nil {
		m.Close()
		return nil, err
	}
	if err := m.loadWeights(); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// loader reads tensors with shape checks, stopping at the first error.
type loader struct {
	m   *Model
	err error
}

func (l *loader) host(name string, shape ...int) []float32 {
	if l.err != nil {
		return nil
	}
	data, got, err := l.m.st.Float32(name)
	if err != nil {
		var te *TensorError
		if errors.As(err, &te) {
			te.Source = l.m.dir
		}
		l.err = err
		return nil
	}
	if !slices.Equal(got, shape) {
		src := l.m.dir
		if info, ok := l.m.st.Info(name); ok {
			src = info.File
		}
		l.err = &TensorError{Tensor: name, Source: src, Want: shape, Got: got}
		return nil
	}
	return data
}

func (l *loader) weight(name string, rows, cols int) Weight {
	data := l.host(name, rows, cols)
	if l.err != nil {
		return nil
	}
	w, err := l.m.eng.Upload(name, tensor.New(tensor.WithShape(rows, cols), tensor.WithBacking(data)))
	if err != nil {
		l.err = err
	}
	return w
}

func (l *loader) bias(on bool, name string, n int) []float32 {
	if !on {
		return nil
	}
	return l.host(name, n)
}

func (m *Model) loadWeights() error {
	c := &m.cfg
	l := &loader{m: m}
	H, I, V := c.HiddenSize, c.IntermediateSize, c.VocabSize
	qDim, kvDim := c.NumHeads*c.HeadDim, c.NumKVHeads*c.HeadDim
	m.embed = l.weight("model.embed_tokens.weight", V, H)
	for i := 0; i < c.NumLayers && l.err == nil; i++ {
		p := fmt.Sprintf("model.layers.%d.", i)
		ly := layer{
			attnNorm: l.host(p+"input_layernorm.weight", H),
			mlpNorm:  l.host(p+"post_attention_layernorm.weight", H),
			wq:       l.weight(p+"self_attn.q_proj.weight", qDim, H),
			wk:       l.weight(p+"self_attn.k_proj.weight", kvDim, H),
			wv:       l.weight(p+"self_attn.v_proj.weight", kvDim, H),
			wo:       l.weight(p+"self_attn.o_proj.weight", H, qDim),
			wg:       l.weight(p+"mlp.gate_proj.weight", I, H),
			wu:       l.weight(p+"mlp.up_proj.weight", I, H),
			wd:       l.weight(p+"mlp.down_proj.weight", H, I),
			bq:       l.bias(c.QKVBias, p+"self_attn.q_proj.bias", qDim),
			bk:       l.bias(c.QKVBias, p+"self_attn.k_proj.bias", kvDim),
			bv:       l.bias(c.QKVBias, p+"self_attn.v_proj.bias", kvDim),
			bo:       l.bias(c.OBias, p+"self_attn.o_proj.bias", H),
			bg:       l.bias(c.MLPBias, p+"mlp.gate_proj.bias", I),
			bu:       l.bias(c.MLPBias, p+"mlp.up_proj.bias", I),
			bd:       l.bias(c.MLPBias, p+"mlp.down_proj.bias", H),
		}
		m.layers = append(m.layers, ly)
	}
	m.norm = l.host("model.norm.weight", H)
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

// State is one sequence being decoded: its KV cache and the scratch buffers of the
// forward pass, allocated once and grown only when a longer prompt or context needs it.
// A State belongs to one Model and one goroutine at a time.
type State struct {
	m      *Model
	pos    int         // positions already in the cache
	capPos int         // positions the cache holds
	k, v   [][]float32 // per layer: [capPos, kvDim]
	scores []float32   // [numHeads, capPos] attention scores
	cos    []float32   // [n, headDim/2] for the positions of the current call
	sin    []float32
	n      int // rows the buffers below are shaped for
	bufs   struct {
		x, h, q, k, v, att, o, g, u, d *tensor.Dense
		logits                         *tensor.Dense
	}
	lastLogits *tensor.Dense // [vocab], the last row, for Forward
	pending    []float32     // backing of lastLogits
}

// NewState returns an empty sequence for m.
func (m *Model) NewState() *State {
	s := &State{m: m}
	s.k = make([][]float32, m.cfg.NumLayers)
	s.v = make([][]float32, m.cfg.NumLayers)
	return s
}

// Pos returns how many positions (prompt and generated tokens) the state holds.
func (s *State) Pos() int { return s.pos }

// Reset empties the KV cache (keeping its memory) to start a new sequence.
func (s *State) Reset() { s.pos = 0 }

// ensureCache grows the KV cache to hold need positions.
func (s *State) ensureCache(need int) {
	if need <= s.capPos {
		return
	}
	c := &s.m.cfg
	kvDim := c.NumKVHeads * c.HeadDim
	newCap := max(need, 2*s.capPos, 64)
	if c.MaxPositions > 0 {
		newCap = max(need, min(newCap, c.MaxPositions))
	}
	for l := range s.k {
		k := make([]float32, newCap*kvDim)
		v := make([]float32, newCap*kvDim)
		copy(k, s.k[l][:s.pos*kvDim])
		copy(v, s.v[l][:s.pos*kvDim])
		s.k[l], s.v[l] = k, v
	}
	s.scores = make([]float32, c.NumHeads*newCap)
	s.capPos = newCap
}

// ensureBufs shapes the scratch buffers for n rows.
func (s *State) ensureBufs(n int, allLogits bool) {
	c := &s.m.cfg
	if s.n != n {
		H, I := c.HiddenSize, c.IntermediateSize
		qDim, kvDim := c.NumHeads*c.HeadDim, c.NumKVHeads*c.HeadDim
		mk := func(cols int) *tensor.Dense {
			return tensor.New(tensor.WithShape(n, cols), tensor.WithBacking(make([]float32, n*cols)))
		}
		b := &s.bufs
		b.x, b.h, b.o, b.d = mk(H), mk(H), mk(H), mk(H)
		b.q, b.att = mk(qDim), mk(qDim)
		b.k, b.v = mk(kvDim), mk(kvDim)
		b.g, b.u = mk(I), mk(I)
		b.logits = nil
		half := c.HeadDim / 2
		s.cos, s.sin = make([]float32, n*half), make([]float32, n*half)
		s.n = n
	}
	if allLogits && s.bufs.logits == nil {
		s.bufs.logits = tensor.New(tensor.WithShape(n, c.VocabSize), tensor.WithBacking(make([]float32, n*c.VocabSize)))
	}
	if s.lastLogits == nil {
		s.pending = make([]float32, c.VocabSize)
		s.lastLogits = tensor.New(tensor.WithShape(c.VocabSize), tensor.WithBacking(s.pending))
	}
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

func (m *Model) forward(s *State, ids []int, allLogits bool) error {
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
	s.ensureCache(s.pos + n)
	s.ensureBufs(n, allLogits)
	e, b := m.eng, &s.bufs
	H, hd := c.HiddenSize, c.HeadDim
	half := hd / 2
	qDim, kvDim := c.NumHeads*hd, c.NumKVHeads*hd
	eps := float32(c.RMSNormEps)
	pos0 := s.pos
	for t := 0; t < n; t++ {
		m.rope.CosSin(pos0+t, s.cos[t*half:(t+1)*half], s.sin[t*half:(t+1)*half])
	}
	x, h := b.x.Float32s(), b.h.Float32s()
	if err := e.Rows(b.x, m.embed, ids); err != nil {
		return err
	}
	mul := func(dst, src *tensor.Dense, w Weight, bias []float32) error {
		var err error
		if n == 1 {
			err = e.MatVec(dst, src, w)
		} else {
			err = e.MatMul(dst, src, w)
		}
		if err == nil && bias != nil {
			addRows(dst.Float32s(), bias)
		}
		return err
	}
	for li := range m.layers {
		ly := &m.layers[li]
		for t := 0; t < n; t++ {
			RMSNorm(h[t*H:(t+1)*H], x[t*H:(t+1)*H], ly.attnNorm, eps)
		}
		if err := firstErr(mul(b.q, b.h, ly.wq, ly.bq), mul(b.k, b.h, ly.wk, ly.bk), mul(b.v, b.h, ly.wv, ly.bv)); err != nil {
			return err
		}
		q, k, v := b.q.Float32s(), b.k.Float32s(), b.v.Float32s()
		kc, vc := s.k[li], s.v[li]
		for t := 0; t < n; t++ {
			cos, sin := s.cos[t*half:(t+1)*half], s.sin[t*half:(t+1)*half]
			m.rope.Rotate(q[t*qDim:(t+1)*qDim], cos, sin)
			m.rope.Rotate(k[t*kvDim:(t+1)*kvDim], cos, sin)
			copy(kc[(pos0+t)*kvDim:], k[t*kvDim:(t+1)*kvDim])
			copy(vc[(pos0+t)*kvDim:], v[t*kvDim:(t+1)*kvDim])
		}
		m.attention(s, li, n, pos0)
		if err := mul(b.o, b.att, ly.wo, ly.bo); err != nil {
			return err
		}
		addInto(x, b.o.Float32s())
		for t := 0; t < n; t++ {
			RMSNorm(h[t*H:(t+1)*H], x[t*H:(t+1)*H], ly.mlpNorm, eps)
		}
		if err := firstErr(mul(b.g, b.h, ly.wg, ly.bg), mul(b.u, b.h, ly.wu, ly.bu)); err != nil {
			return err
		}
		SiLUMul(b.g.Float32s(), b.u.Float32s())
		if err := mul(b.d, b.g, ly.wd, ly.bd); err != nil {
			return err
		}
		addInto(x, b.d.Float32s())
	}
	s.pos += n
	if allLogits {
		for t := 0; t < n; t++ {
			RMSNorm(h[t*H:(t+1)*H], x[t*H:(t+1)*H], m.norm, eps)
		}
		if err := mul(b.logits, b.h, m.lmHead, nil); err != nil {
			return err
		}
		copy(s.pending, b.logits.Float32s()[(n-1)*c.VocabSize:])
		return nil
	}
	last := h[:H]
	RMSNorm(last, x[(n-1)*H:n*H], m.norm, eps)
	hv := tensor.New(tensor.WithShape(H), tensor.WithBacking(last))
	return e.MatVec(s.lastLogits, hv, m.lmHead)
}

// attention computes, for each of the n new positions and each head, the softmax of
// q·k/√headDim over positions 0..pos0+t (causal) and the weighted sum of the values,
// into bufs.att. Query head j reads key/value head j / (numHeads/numKVHeads) (GQA).
// Heads are spread over goroutines.
func (m *Model) attention(s *State, li, n, pos0 int) {
	c := &m.cfg
	hd := c.HeadDim
	qDim, kvDim := c.NumHeads*hd, c.NumKVHeads*hd
	group := c.NumHeads / c.NumKVHeads
	scale := float32(1 / math.Sqrt(float64(hd)))
	q, att := s.bufs.q.Float32s(), s.bufs.att.Float32s()
	kc, vc := s.k[li], s.v[li]
	work := c.NumHeads * n * (pos0 + n) * hd
	parallelHeads(m.threads, c.NumHeads, work, func(lo, hi int) {
		for head := lo; head < hi; head++ {
			kvOff := (head / group) * hd
			sc := s.scores[head*s.capPos : (head+1)*s.capPos]
			for t := 0; t < n; t++ {
				qh := q[t*qDim+head*hd : t*qDim+(head+1)*hd]
				span := pos0 + t + 1
				for p := 0; p < span; p++ {
					sc[p] = dot(qh, kc[p*kvDim+kvOff:p*kvDim+kvOff+hd]) * scale
				}
				softmax(sc[:span])
				out := att[t*qDim+head*hd : t*qDim+(head+1)*hd]
				clear(out)
				for p := 0; p < span; p++ {
					w := sc[p]
					vr := vc[p*kvDim+kvOff : p*kvDim+kvOff+hd]
					for i := range out {
						out[i] += w * vr[i]
					}
				}
			}
		}
	})
}

// parallelHeads splits [0, heads) evenly over up to threads goroutines.
func parallelHeads(threads, heads, work int, f func(lo, hi int)) {
	parts := min(threads, heads, max(1, work/(1<<14)))
	if parts <= 1 {
		f(0, heads)
		return
	}
	done := make(chan struct{}, parts)
	for p := 1; p < parts; p++ {
		go func(lo, hi int) {
			f(lo, hi)
			done <- struct{}{}
		}(p*heads/parts, (p+1)*heads/parts)
	}
	f(0, heads/parts)
	for p := 1; p < parts; p++ {
		<-done
	}
}

// addRows adds bias to every row of a row-major matrix whose rows have len(bias) columns.
func addRows(m, bias []float32) {
	for off := 0; off < len(m); off += len(bias) {
		row := m[off : off+len(bias)]
		for i, b := range bias {
			row[i] += b
		}
	}
}

// addInto adds src to dst elementwise (the residual connection).
func addInto(dst, src []float32) {
	src = src[:len(dst)]
	for i, v := range src {
		dst[i] += v
	}
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
