package model_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"

	"github.com/tetherlm/tether/gocore/model"
)

// roundBF16 rounds v to bfloat16 (nearest, ties to even) and returns its float32 value:
// the inputs bf16 math multiplies by.
func roundBF16(v float32) float32 {
	b := math.Float32bits(v)
	if b&0x7f800000 == 0 { // subnormal inputs become zeros (as VCVTNEPS2BF16 does)
		return math.Float32frombits(b & 0x80000000)
	}
	b += 0x7fff + (b>>16)&1
	return math.Float32frombits(b &^ 0xffff)
}

// bf16Engines are the engines with bf16 math: the portable Go kernels always, and the
// assembly where this CPU has AVX512-BF16 (its Name says "bf16 math").
func bf16Engines(t *testing.T, threads int) map[string]*model.CPU {
	es := map[string]*model.CPU{"portable": model.NewCPU(threads, model.WithPortableKernels(), model.WithBF16Products())}
	if e := model.NewCPU(threads, model.WithBF16Products()); strings.Contains(e.Name(), "bf16 math") {
		es["avx512-bf16"] = e
	} else {
		t.Logf("this CPU has no AVX512-BF16: %s computes bf16 weights exactly; only the portable bf16 kernels are checked", e.Name())
	}
	return es
}

// With bf16 math, a product of bf16 weights by several tokens equals the product by
// the inputs rounded to bf16 (computed in float64 here); one token stays exact. The
// assembly and the portable kernels agree to float32 rounding. Shapes cover an odd number of
// columns (a half pair), token counts that are not multiples of six, and one token
// (the decode kernel on the same panels of pairs); Rows reads the weights back.
func TestBF16ProductsMultiplyInputsRoundedToBF16(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 8))
	for _, tc := range []struct{ rows, cols, n int }{
		{16, 2, 6}, {1, 1, 2}, {17, 5, 7}, {40, 33, 13}, {48, 576, 128}, {32, 1536, 9}, {32, 576, 1}, {17, 5, 1}, {3, 1, 1},
	} {
		w := randSlice(r, tc.rows*tc.cols)
		x := randSlice(r, tc.n*tc.cols)
		xr := make([]float32, len(x))
		for i, v := range x {
			xr[i] = roundBF16(v)
		}
		got := map[string][]float32{}
		for name, e := range bf16Engines(t, 2) {
			wt, wv := upload(t, e, "bf16", tc.rows, tc.cols, w)
			want := naiveProduct(xr, wv, tc.n, tc.rows, tc.cols)
			if tc.n == 1 {
				want = naiveProduct(x, wv, tc.n, tc.rows, tc.cols) // decode: exact
			}
			dst := dense(tc.n, tc.rows, make([]float32, tc.n*tc.rows))
			require.NoError(t, e.MatMul(dst, dense(tc.n, tc.cols, x), wt))
			assert.InDeltaSlice(t, want, f64(dst.Float32s()), 1e-4*math.Sqrt(float64(tc.cols)), "%v %s", tc, name)
			got[name] = dst.Float32s()
			// the weights are stored as panels of pairs; Rows reads them back
			ids := []int{tc.rows - 1, 0, tc.rows / 2}
			rows := dense(len(ids), tc.cols, make([]float32, len(ids)*tc.cols))
			require.NoError(t, e.Rows(rows, wt, ids, 1))
			for i, id := range ids {
				assert.Equal(t, wv[id*tc.cols:(id+1)*tc.cols], rows.Float32s()[i*tc.cols:(i+1)*tc.cols], "rows %v %s", tc, name)
			}
			// f32 weights are never rounded, bf16 math or not
			wf, _ := upload(t, e, "f32", tc.rows, tc.cols, w)
			require.NoError(t, e.MatMul(dst, dense(tc.n, tc.cols, x), wf))
			assert.InDeltaSlice(t, naiveProduct(x, w, tc.n, tc.rows, tc.cols), f64(dst.Float32s()), 2e-3, "%v %s f32", tc, name)
			require.NoError(t, e.Close())
		}
		if asm, ok := got["avx512-bf16"]; ok { // VDPBF16PS may round its pair sums differently
			assert.InDeltaSlice(t, f64(got["portable"]), f64(asm), 1e-5*math.Sqrt(float64(tc.cols)), "%v: assembly and portable bf16 kernels", tc)
		}
	}
}

// A bf16 checkpoint with bf16 math (model.WithBF16Math, the default): the prefill's
// logits stay within bf16's rounding of the exact ones (model.WithExactBF16) and differ
// from them (the path is taken),
// assembly and portable kernels agree, and greedy decoding runs.
func TestBF16MathCheckpoint(t *testing.T) {
	cfg := tinyConfig{Arch: "Qwen2ForCausalLM", Hidden: 32, Inter: 48, Layers: 2, Heads: 4, KVHeads: 2, Vocab: 50, QKVBias: true, Tie: true}
	bf, _ := toBF16Tensors(tensorsFor(cfg, 4))
	dir := writeModel(t, cfg, bf, nil)
	ids := []int{4, 9, 1, 33, 2, 2, 17, 40, 8, 3, 11, 5, 6}
	logits := func(opts ...model.Option) []float32 {
		m, err := model.Load(dir, opts...)
		require.NoError(t, err)
		defer m.Close()
		all, err := m.ForwardAll(m.NewState(), ids)
		require.NoError(t, err)
		return all.Float32s()
	}
	exact := logits(model.WithThreads(2), model.WithExactBF16())
	// bf16 math is the default: Load without options equals WithBF16Math.
	assert.Equal(t, logits(model.WithThreads(2), model.WithBF16Math()), logits(model.WithThreads(2)), "the default is bf16 math")
	got := map[string][]float32{}
	for name, e := range bf16Engines(t, 2) {
		got[name] = logits(model.WithEngine(e))
		require.NoError(t, e.Close())
		diff, scale := 0.0, 0.0
		for i := range exact {
			diff = max(diff, math.Abs(float64(got[name][i]-exact[i])))
			scale = max(scale, math.Abs(float64(exact[i])))
		}
		assert.Greater(t, diff, 0.0, "%s: bf16 math gave the exact logits: the bf16 path was not taken", name)
		assert.Less(t, diff, 2e-2*max(scale, 1), "%s: max |logit diff| vs exact", name)
	}
	if asm, ok := got["avx512-bf16"]; ok {
		assert.InDeltaSlice(t, f64(got["portable"]), f64(asm), 1e-4, "assembly and portable bf16 kernels")
	}
	m, err := model.Load(dir, model.WithThreads(2), model.WithBF16Math())
	require.NoError(t, err)
	defer m.Close()
	st := m.NewState()
	out, err := m.ForwardAll(st, ids)
	require.NoError(t, err)
	require.Equal(t, tensor.Shape{len(ids), cfg.Vocab}, out.Shape())
}
