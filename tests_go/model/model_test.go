package model_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"

	"github.com/tetherlm/tether/gocore/model"
)

func TestRMSNormHandComputed(t *testing.T) {
	// mean(x²) = (1+4+9+16)/4 = 7.5; 1/√7.5 = 0.3651483716701107
	x := []float32{1, 2, 3, 4}
	w := []float32{1, 1, 2, 0.5}
	dst := make([]float32, 4)
	model.RMSNorm(dst, x, w, 0)
	r := 0.3651483716701107
	assert.InDeltaSlice(t, []float64{r, 2 * r, 2 * 3 * r, 0.5 * 4 * r}, f64(dst), 1e-6)
	// eps is added to the mean square: 1/√(7.5+2.5) = 1/√10
	model.RMSNorm(dst, x, []float32{1, 1, 1, 1}, 2.5)
	s := 1 / math.Sqrt(10)
	assert.InDeltaSlice(t, []float64{s, 2 * s, 3 * s, 4 * s}, f64(dst), 1e-6)
}

func TestSiLUMul(t *testing.T) {
	g := []float32{0, 1, -2}
	model.SiLUMul(g, []float32{5, 2, 3})
	// silu(1) = 1/(1+e^-1) = 0.7310585786; silu(-2) = -2/(1+e^2) = -0.2384058440
	assert.InDeltaSlice(t, []float64{0, 2 * 0.7310585786, 3 * -0.2384058440}, f64(g), 1e-6)
}

func TestRoPERotateHalfHandComputed(t *testing.T) {
	// head_dim 4, theta 10000: inv_freq = [10000^0, 10000^(-2/4)] = [1, 0.01].
	r, err := model.NewRoPE(4, 10000, nil)
	require.NoError(t, err)
	assert.InDeltaSlice(t, []float64{1, 0.01}, f64(r.InvFreq()), 1e-9)

	// rotate_half pairs dimension i with i+2: (x0, x2) turn by pos·1, (x1, x3) by pos·0.01.
	x := []float32{1, 2, 3, 4 /* second head */, -1, 0, 0, 1}
	r.Apply(x, 1)
	c1, s1, c2, s2 := math.Cos(1), math.Sin(1), math.Cos(0.01), math.Sin(0.01)
	want := []float64{
		1*c1 - 3*s1, 2*c2 - 4*s2, 3*c1 + 1*s1, 4*c2 + 2*s2,
		-1 * c1, -1 * s2, -1 * s1, 1 * c2,
	}
	assert.InDeltaSlice(t, want, f64(x), 1e-6)

	y := []float32{1, 2, 3, 4}
	r.Apply(y, 0)
	assert.Equal(t, []float32{1, 2, 3, 4}, y, "position 0 is the identity")
}

func TestRoPELlama3ScalingHandComputed(t *testing.T) {
	// head_dim 8, theta 10000: inv_freq = [1, 0.1, 0.01, 0.001], wavelengths 2π/f =
	// [6.28, 62.8, 628.3, 6283]. original context 1000, low 1, high 4, factor 8:
	// low-frequency wavelength 1000, high-frequency wavelength 250.
	r, err := model.NewRoPE(8, 10000, &model.RopeScaling{Type: "llama3", Factor: 8,
		LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositions: 1000})
	require.NoError(t, err)
	// 628.3 lies between 250 and 1000: smooth = (1000/628.3 − 1)/(4 − 1) = 0.197183,
	// f = (1 − smooth)·0.01/8 + smooth·0.01 = 0.00297535.
	smooth := (1000/(2*math.Pi/0.01) - 1) / 3
	want := []float64{1, 0.1, (1-smooth)*0.01/8 + smooth*0.01, 0.001 / 8}
	assert.InDeltaSlice(t, want, f64(r.InvFreq()), 1e-7)
	assert.InDelta(t, 0.00297535, want[2], 1e-7)

	lin, err := model.NewRoPE(4, 10000, &model.RopeScaling{Type: "linear", Factor: 4})
	require.NoError(t, err)
	assert.InDeltaSlice(t, []float64{0.25, 0.0025}, f64(lin.InvFreq()), 1e-9)

	_, err = model.NewRoPE(4, 10000, &model.RopeScaling{Type: "yarn", Factor: 4})
	require.ErrorContains(t, err, `"yarn"`)
	_, err = model.NewRoPE(5, 10000, nil)
	require.ErrorContains(t, err, "even head dimension")
}

func TestCPUEngineMatchesNaiveProducts(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for _, tc := range []struct{ rows, cols, n int }{
		{1, 1, 1}, {3, 5, 2}, {13, 37, 3}, {64, 64, 1}, {256, 576, 1}, {1536, 576, 5}, {577, 1536, 9},
	} {
		w := randSlice(r, tc.rows*tc.cols)
		x := randSlice(r, tc.n*tc.cols)
		want := make([]float64, tc.n*tc.rows)
		for t0 := 0; t0 < tc.n; t0++ {
			for o := 0; o < tc.rows; o++ {
				var s float64
				for i := 0; i < tc.cols; i++ {
					s += float64(w[o*tc.cols+i]) * float64(x[t0*tc.cols+i])
				}
				want[t0*tc.rows+o] = s
			}
		}
		for _, threads := range []int{1, 2, 3} {
			e := model.NewCPU(threads)
			wt, err := e.Upload("w", tensor.New(tensor.WithShape(tc.rows, tc.cols), tensor.WithBacking(w)))
			require.NoError(t, err)
			dst := tensor.New(tensor.WithShape(tc.n, tc.rows), tensor.WithBacking(make([]float32, tc.n*tc.rows)))
			xd := tensor.New(tensor.WithShape(tc.n, tc.cols), tensor.WithBacking(x))
			require.NoError(t, e.MatMul(dst, xd, wt))
			assert.InDeltaSlice(t, want, f64(dst.Float32s()), 1e-3, "matmul %v threads %d", tc, threads)
			if tc.n == 1 {
				dv := tensor.New(tensor.WithShape(tc.rows), tensor.WithBacking(make([]float32, tc.rows)))
				xv := tensor.New(tensor.WithShape(tc.cols), tensor.WithBacking(x))
				require.NoError(t, e.MatVec(dv, xv, wt))
				assert.InDeltaSlice(t, want, f64(dv.Float32s()), 1e-3, "matvec %v threads %d", tc, threads)
			}
		}
	}
	e := model.NewCPU(1)
	wt, _ := e.Upload("w", tensor.New(tensor.WithShape(2, 3), tensor.WithBacking(make([]float32, 6))))
	err := e.MatVec(tensor.New(tensor.WithShape(2), tensor.WithBacking(make([]float32, 2))),
		tensor.New(tensor.WithShape(4), tensor.WithBacking(make([]float32, 4))), wt)
	require.ErrorContains(t, err, `matvec "w" [2 3]: x has 4 elements`)
}

var tiny = tinyConfig{Arch: "LlamaForCausalLM", Hidden: 16, Inter: 24, Layers: 2, Heads: 4, KVHeads: 2, Vocab: 40}

func TestLoadErrorsNameTheProblem(t *testing.T) {
	good := tensorsFor(tiny, 1)
	without := func(name string) []stTensor {
		var out []stTensor
		for _, ts := range good {
			if ts.name != name {
				out = append(out, ts)
			}
		}
		return out
	}
	reshaped := func(name string, shape ...int) []stTensor {
		out := append([]stTensor(nil), good...)
		for i := range out {
			if out[i].name == name {
				n := 1
				for _, d := range shape {
					n *= d
				}
				out[i] = stTensor{name, "F32", shape, make([]byte, 4*n)}
			}
		}
		return out
	}
	tests := []struct {
		name     string
		tensors  []stTensor
		override map[string]any
		want     []string
		check    func(t *testing.T, err error)
	}{
		{"unsupported architecture", good, map[string]any{"architectures": []string{"MambaForCausalLM"}},
			[]string{`unsupported architecture "MambaForCausalLM"`, "config.json", "LlamaForCausalLM", "Qwen2ForCausalLM"},
			func(t *testing.T, err error) {
				var ae *model.ArchitectureError
				require.ErrorAs(t, err, &ae)
				assert.Equal(t, "MambaForCausalLM", ae.Architecture)
			}},
		{"no architecture", good, map[string]any{"architectures": nil}, []string{"names no architecture"}, nil},
		{"missing tensor", without("model.layers.1.mlp.up_proj.weight"), nil,
			[]string{`tensor "model.layers.1.mlp.up_proj.weight" not found`},
			func(t *testing.T, err error) {
				var te *model.TensorError
				require.ErrorAs(t, err, &te)
				assert.True(t, te.Missing)
			}},
		{"missing lm_head", without("lm_head.weight"), nil,
			[]string{`tensor "lm_head.weight" not found`, "tie_word_embeddings"}, nil},
		{"wrong shape", reshaped("model.layers.0.self_attn.k_proj.weight", 16, 16), nil,
			[]string{`tensor "model.layers.0.self_attn.k_proj.weight"`, "has shape [16 16], want [8 16]"},
			func(t *testing.T, err error) {
				var te *model.TensorError
				require.ErrorAs(t, err, &te)
				assert.Equal(t, []int{8, 16}, te.Want)
				assert.Equal(t, []int{16, 16}, te.Got)
			}},
		{"config disagrees", good, map[string]any{"intermediate_size": 32},
			[]string{`tensor "model.layers.0.mlp.gate_proj.weight"`, "has shape [24 16], want [32 16]"}, nil},
		{"qwen2 needs biases", good, map[string]any{"architectures": []string{"Qwen2ForCausalLM"}},
			[]string{`tensor "model.layers.0.self_attn.q_proj.bias" not found`}, nil},
		{"bad gqa", good, map[string]any{"num_key_value_heads": 3}, []string{"num_key_value_heads", "does not divide"}, nil},
		{"bad rope type", good, map[string]any{"rope_scaling": map[string]any{"rope_type": "yarn", "factor": 2.0}},
			[]string{"rope_scaling", `"yarn"`}, nil},
		{"bad activation", good, map[string]any{"hidden_act": "gelu"}, []string{"hidden_act", "silu"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeModel(t, tiny, tc.tensors, tc.override)
			m, err := model.Load(dir)
			require.Error(t, err)
			assert.Nil(t, m)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
			if tc.check != nil {
				tc.check(t, err)
			}
		})
	}
	t.Run("missing config", func(t *testing.T) {
		_, err := model.Load(t.TempDir())
		require.ErrorContains(t, err, "config.json")
		require.ErrorContains(t, err, "needs config.json")
	})
}

func TestParseConfigDefaultsAndRopeSpellings(t *testing.T) {
	c, err := model.ParseConfig([]byte(`{"model_type":"qwen2","hidden_size":64,"intermediate_size":128,
		"num_hidden_layers":2,"num_attention_heads":4,"vocab_size":100}`), "config.json")
	require.NoError(t, err)
	assert.Equal(t, "Qwen2ForCausalLM", c.Architecture)
	assert.Equal(t, 4, c.NumKVHeads, "defaults to num_attention_heads")
	assert.Equal(t, 16, c.HeadDim)
	assert.Equal(t, 1e-6, c.RMSNormEps)
	assert.Equal(t, 10000.0, c.RopeTheta)
	assert.True(t, c.QKVBias)
	assert.False(t, c.TieEmbeddings)

	// transformers 4: rope_theta + rope_scaling; transformers 5: rope_parameters.
	for _, raw := range []string{
		`"rope_theta":500000,"rope_scaling":{"rope_type":"llama3","factor":8,"low_freq_factor":1,"high_freq_factor":4,"original_max_position_embeddings":8192}`,
		`"rope_parameters":{"rope_type":"llama3","rope_theta":500000,"factor":8,"low_freq_factor":1,"high_freq_factor":4,"original_max_position_embeddings":8192}`,
	} {
		c, err := model.ParseConfig([]byte(`{"architectures":["LlamaForCausalLM"],"hidden_size":64,"intermediate_size":128,
			"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"head_dim":32,"vocab_size":100,`+raw+`}`), "config.json")
		require.NoError(t, err)
		assert.Equal(t, 500000.0, c.RopeTheta)
		assert.Equal(t, 32, c.HeadDim, "head_dim wins over hidden/heads")
		require.NotNil(t, c.RopeScaling)
		assert.Equal(t, model.RopeScaling{Type: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositions: 8192}, *c.RopeScaling)
	}
}

// The KV cache is right when decoding token by token gives the logits that one
// prefill over the whole sequence gives at every position.
func TestIncrementalDecodeMatchesPrefill(t *testing.T) {
	for _, cfg := range []tinyConfig{
		tiny,
		{Arch: "Qwen2ForCausalLM", Hidden: 32, Inter: 40, Layers: 2, Heads: 8, KVHeads: 2, Vocab: 50, QKVBias: true, Tie: true},
	} {
		t.Run(cfg.Arch, func(t *testing.T) {
			m, err := model.Load(writeModel(t, cfg, tensorsFor(cfg, 3), nil), model.WithThreads(2))
			require.NoError(t, err)
			defer m.Close()
			ids := []int{1, 7, 3, 3, 0, cfg.Vocab - 1, 12, 5, 9}
			all, err := m.ForwardAll(m.NewState(), ids)
			require.NoError(t, err)
			require.Equal(t, tensor.Shape{len(ids), cfg.Vocab}, all.Shape())
			full := append([]float32(nil), all.Float32s()...)

			st := m.NewState()
			// a 3-token prefill, then one token at a time
			last, err := m.Forward(st, ids[:3])
			require.NoError(t, err)
			assert.InDeltaSlice(t, f64(full[2*cfg.Vocab:3*cfg.Vocab]), f64(last.Float32s()), 1e-5)
			for p := 3; p < len(ids); p++ {
				last, err = m.Forward(st, ids[p:p+1])
				require.NoError(t, err)
				assert.InDeltaSlice(t, f64(full[p*cfg.Vocab:(p+1)*cfg.Vocab]), f64(last.Float32s()), 1e-5, "position %d", p)
			}
			assert.Equal(t, len(ids), st.Pos())
			// logits vary with the position: a cache that were ignored would not
			assert.NotEqual(t, full[3*cfg.Vocab:4*cfg.Vocab], full[2*cfg.Vocab:3*cfg.Vocab])

			_, err = m.Forward(st, []int{cfg.Vocab})
			require.ErrorContains(t, err, "outside the vocabulary")
			st.Reset()
			again, err := m.Forward(st, ids[:1])
			require.NoError(t, err)
			assert.InDeltaSlice(t, f64(full[:cfg.Vocab]), f64(again.Float32s()), 1e-5, "Reset starts over")
		})
	}
}

// Warm leaves the state empty: a sequence run after it computes what it computes on a
// fresh state, bit for bit; with a tiny context it stays inside max_position_embeddings.
func TestWarmResetsTheState(t *testing.T) {
	for _, maxPos := range []int{0, 3, 1} {
		t.Run(fmt.Sprintf("max_positions=%d", maxPos), func(t *testing.T) {
			cfg := tiny
			var extra map[string]any
			if maxPos > 0 {
				extra = map[string]any{"max_position_embeddings": maxPos}
			}
			m, err := model.Load(writeModel(t, cfg, tensorsFor(cfg, 3), extra), model.WithThreads(2))
			require.NoError(t, err)
			defer m.Close()
			ids := []int{1, 7, 3}
			if maxPos > 0 {
				ids = ids[:maxPos]
			}
			fresh, err := m.Forward(m.NewState(), ids)
			require.NoError(t, err)
			want := append([]float32(nil), fresh.Float32s()...)

			st := m.NewState()
			require.NoError(t, m.Warm(st))
			require.Zero(t, st.Pos())
			got, err := m.Forward(st, ids)
			require.NoError(t, err)
			require.Equal(t, want, got.Float32s())
		})
	}
}

// ForwardArgmax picks what an argmax of Forward's logits picks (the lowest id among
// equal maxima) among the tokens its mask allows, step by step on two states fed the
// same ids; a mask allowing nothing gives -1, and a mask of the wrong size is an error.
func TestForwardArgmaxPicksTheAllowedMaximum(t *testing.T) {
	cfg := tiny
	m, err := model.Load(writeModel(t, cfg, tensorsFor(cfg, 5), nil), model.WithThreads(2))
	require.NoError(t, err)
	defer m.Close()
	words := (cfg.Vocab + 31) / 32
	a, b := m.NewState(), m.NewState()
	ids := []int{1, 7, 3}
	rnd := rand.New(rand.NewPCG(4, 4))
	for step := 0; step < 12; step++ {
		var mask []uint32
		switch step % 3 {
		case 1:
			mask = make([]uint32, words)
			for i := range mask {
				mask[i] = rnd.Uint32() & rnd.Uint32()
			}
		case 2:
			mask = make([]uint32, words)
			mask[0] = 1 << 5
		}
		logits, err := m.Forward(a, ids)
		require.NoError(t, err)
		want := -1
		for i, l := range logits.Float32s() {
			if mask != nil && mask[i/32]>>(i%32)&1 == 0 {
				continue
			}
			if want < 0 || l > logits.Float32s()[want] {
				want = i
			}
		}
		got, err := m.ForwardArgmax(b, ids, mask)
		require.NoError(t, err)
		require.Equalf(t, want, got, "step %d", step)
		require.Equal(t, a.Pos(), b.Pos())
		if step%3 == 2 {
			require.Equal(t, 5, got)
		}
		ids = []int{(got + step) % cfg.Vocab}
	}
	got, err := m.ForwardArgmax(b, ids, make([]uint32, words))
	require.NoError(t, err)
	require.Equal(t, -1, got)
	_, err = m.ForwardArgmax(b, ids, make([]uint32, words+1))
	require.ErrorContains(t, err, "argmax mask of")
}

func BenchmarkMatVec576x1536(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	e := model.NewCPU(0)
	w, _ := e.Upload("w", tensor.New(tensor.WithShape(1536, 576), tensor.WithBacking(randSlice(r, 1536*576))))
	x := tensor.New(tensor.WithShape(576), tensor.WithBacking(randSlice(r, 576)))
	dst := tensor.New(tensor.WithShape(1536), tensor.WithBacking(make([]float32, 1536)))
	b.ReportAllocs()
	b.SetBytes(1536 * 576 * 4)
	for b.Loop() {
		if err := e.MatVec(dst, x, w); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMatMul64x576x1536(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	e := model.NewCPU(0)
	w, _ := e.Upload("w", tensor.New(tensor.WithShape(1536, 576), tensor.WithBacking(randSlice(r, 1536*576))))
	x := tensor.New(tensor.WithShape(64, 576), tensor.WithBacking(randSlice(r, 64*576)))
	dst := tensor.New(tensor.WithShape(64, 1536), tensor.WithBacking(make([]float32, 64*1536)))
	b.ReportAllocs()
	for b.Loop() {
		if err := e.MatMul(dst, x, w); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(2*64*576*1536)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

func randSlice(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

func f64(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// The engine options of the default CPU engine do not apply to an engine given with
// WithEngine: combining them is an error, not a silent full-precision run.
func TestEngineOptionsNeedTheDefaultEngine(t *testing.T) {
	dir := writeModel(t, tiny, tensorsFor(tiny, 1), nil)
	e := model.NewCPU(1)
	defer e.Close()
	for _, opt := range []model.Option{model.WithInt8Weights(), model.WithBF16Math()} {
		_, err := model.Load(dir, model.WithEngine(e), opt)
		require.ErrorContains(t, err, "configure the default CPU engine")
	}
	m, err := model.Load(dir, model.WithEngine(e))
	require.NoError(t, err)
	require.NoError(t, m.Close())
}
