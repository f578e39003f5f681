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

// int8Engines returns CPU engines with 8-bit weights: default kernels (AVX512-VNNI
// assembly where the CPU has it) and the portable Go ones.
func int8Engines(threads int) map[string]*model.CPU {
	return engines(threads, model.WithInt8Products())
}

// nearestF16 rounds v to the nearest float16 value (ties to even), by search: the
// float16 candidates around v compared through the exact widening.
func nearestF16(v float32) float32 {
	if v == 0 {
		return 0
	}
	best := float32(math.Inf(1))
	var bestBits uint16
	for h := 0; h < 0x7c00; h++ { // finite non-negative float16 values, in order
		f := model.F16ToFloat32(uint16(h))
		d := float32(math.Abs(float64(f - v)))
		if d < best || (d == best && h&1 == 0 && bestBits&1 == 1) {
			best, bestBits = d, uint16(h)
		}
		if f > v {
			break
		}
	}
	return model.F16ToFloat32(bestBits)
}

func amax(v []float32) float32 {
	var m float32
	for _, x := range v {
		m = max(m, float32(math.Abs(float64(x))))
	}
	return m
}

func roundHalfAway(v float64) float64 {
	if v < 0 {
		return -math.Floor(-v + 0.5)
	}
	return math.Floor(v + 0.5)
}

// q8Ref quantizes v per block of 32: scale = max|v|/127 (rounded to float16 for
// weights), q = v/scale rounded (halves away from zero), clamped to ±127.
func q8Ref(v []float32, f16 bool) (q []int, scales []float32) {
	for b := 0; b < len(v); b += 32 {
		blk := v[b:min(len(v), b+32)]
		var amax float32
		for _, x := range blk {
			amax = max(amax, float32(math.Abs(float64(x))))
		}
		d := amax / 127
		if f16 {
			d = nearestF16(d)
		}
		scales = append(scales, d)
		for i := 0; i < 32; i++ {
			qi := 0
			if i < len(blk) && d != 0 {
				qi = int(max(-127, min(127, roundHalfAway(float64(blk[i]*(1/d))))))
			}
			q = append(q, qi)
		}
	}
	return q, scales
}

// q8Product is the reference 8-bit product of the vector x with the [rows, cols]
// matrix w: per row and block of 32 the exact integer sum of the quantized values
// times the product of the two scales, summed in float64; bound is Σ|terms| (the
// scale of the float32 rounding of the kernels' sums).
func q8Product(x, w []float32, rows, cols int) (want, bound []float64) {
	xq, xd := q8Ref(x, false)
	want, bound = make([]float64, rows), make([]float64, rows)
	for o := 0; o < rows; o++ {
		wq, wd := q8Ref(w[o*cols:(o+1)*cols], true)
		for b := range wd {
			var isum int
			for i := b * 32; i < (b+1)*32; i++ {
				isum += wq[i] * xq[i]
			}
			s := float64(float32(wd[b] * xd[b]))
			want[o] += float64(isum) * s
			bound[o] += math.Abs(float64(isum) * s)
		}
	}
	return want, bound
}

func TestInt8MatVecMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	for _, tc := range []struct{ rows, cols int }{
		{1 + 1, 1}, {16, 32}, {17, 33}, {40, 100}, {32, 576}, {48, 1536}, {5, 64},
	} {
		w := randSlice(r, tc.rows*tc.cols)
		x := randSlice(r, tc.cols)
		if tc.cols >= 64 { // a block of zeros, and a block with one large value
			clear(x[:32])
			x[40] = 30
		}
		want, bound := q8Product(x, w, tc.rows, tc.cols)
		exact := naiveProduct(x, w, 1, tc.rows, tc.cols)
		got := map[string][]float32{}
		for name, e := range int8Engines(2) {
			wt, err := e.Upload("w", dense(tc.rows, tc.cols, w))
			require.NoError(t, err)
			dv := tensor.New(tensor.WithShape(tc.rows), tensor.WithBacking(make([]float32, tc.rows)))
			require.NoError(t, e.MatVec(dv, tensor.New(tensor.WithShape(tc.cols), tensor.WithBacking(x)), wt))
			got[name] = dv.Float32s()
			for o, g := range dv.Float32s() {
				assert.InDelta(t, want[o], float64(g), 1e-5*bound[o]+1e-6, "%v %s row %d", tc, name, o)
				// and near the float product: each weight and each input off by at most
				// half a step of its block (max|block|/254)
				var tol float64
				for i := 0; i < tc.cols; i++ {
					b := i / 32
					ew := float64(amax(w[o*tc.cols+b*32:o*tc.cols+min(tc.cols, b*32+32)])) / 254 * 1.001 // f16 scale
					ex := float64(amax(x[b*32:min(tc.cols, b*32+32)])) / 254
					tol += math.Abs(float64(w[o*tc.cols+i]))*ex + math.Abs(float64(x[i]))*ew + ew*ex
				}
				assert.InDelta(t, exact[o], float64(g), tol+1e-6, "%v %s row %d vs float32", tc, name, o)
			}
			require.NoError(t, e.Close())
		}
		for o := range got["default"] {
			assert.InDelta(t, got["portable"][o], got["default"][o], 1e-6*bound[o]+1e-7, "%v: assembly vs portable row %d", tc, o)
		}
	}
}

func TestInt8MatMulAndRowsUseTheQuantizedWeights(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 2))
	for _, tc := range []struct{ rows, cols, n int }{{17, 33, 7}, {48, 576, 13}, {32, 64, 6}, {20, 100, 3}, {16, 64, 12}} {
		w := randSlice(r, tc.rows*tc.cols)
		x := randSlice(r, tc.n*tc.cols)
		for name, e := range int8Engines(2) {
			for _, dtype := range []string{"f32", "bf16"} {
				wt, wv := upload(t, e, dtype, tc.rows, tc.cols, w)
				ids := make([]int, tc.rows)
				for i := range ids {
					ids[i] = i
				}
				deq := dense(tc.rows, tc.cols, make([]float32, tc.rows*tc.cols))
				require.NoError(t, e.Rows(deq, wt, ids, 1))
				dq := deq.Float32s()
				for o := 0; o < tc.rows; o++ {
					wq, wd := q8Ref(wv[o*tc.cols:(o+1)*tc.cols], true)
					for i := 0; i < tc.cols; i++ {
						require.Equal(t, float32(wq[i])*wd[i/32], dq[o*tc.cols+i], "%v %s %s: weight [%d %d]", tc, name, dtype, o, i)
					}
				}
				dst := dense(tc.n, tc.rows, make([]float32, tc.n*tc.rows))
				require.NoError(t, e.MatMul(dst, dense(tc.n, tc.cols, x), wt))
				if strings.Contains(e.Name(), "vnni") {
					// prefill with the integer GEMM: every token as the 8-bit product
					for tok := 0; tok < tc.n; tok++ {
						want, bound := q8Product(x[tok*tc.cols:(tok+1)*tc.cols], wv, tc.rows, tc.cols)
						for o := range want {
							assert.InDelta(t, want[o], float64(dst.Float32s()[tok*tc.rows+o]), 1e-5*bound[o]+1e-6, "matmul %v %s %s token %d row %d", tc, name, dtype, tok, o)
						}
					}
					continue
				}
				// prefill elsewhere: the widened 8-bit weights times float32 inputs
				assert.InDeltaSlice(t, naiveProduct(x, dq, tc.n, tc.rows, tc.cols), f64(dst.Float32s()), 2e-3, "matmul %v %s %s", tc, name, dtype)
				// unit-vector inputs read the widened panels back exactly (prefill's
				// dequantization, assembly or portable, against Rows')
				eye := make([]float32, tc.cols*tc.cols)
				for i := 0; i < tc.cols; i++ {
					eye[i*tc.cols+i] = 1
				}
				got := dense(tc.cols, tc.rows, make([]float32, tc.cols*tc.rows))
				require.NoError(t, e.MatMul(got, dense(tc.cols, tc.cols, eye), wt))
				for i := 0; i < tc.cols; i++ {
					for o := 0; o < tc.rows; o++ {
						require.Equal(t, dq[o*tc.cols+i], got.Float32s()[i*tc.rows+o], "%v %s %s: widened weight [%d %d]", tc, name, dtype, o, i)
					}
				}
			}
			require.NoError(t, e.Close())
		}
	}
}

// TestInt8DecodeLogitsNearStoredWeights runs a tiny model one token at a time (the q8
// decode kernels) with 8-bit weights and with its float32 weights: logits within 10%
// of the largest |logit| (measured: up to 7% on this model, whose large random
// weights, std 0.2 at hidden size 64, make attention sharp and errors grow; 1.4-3% on
// the transformers-built test models of tests_py/test_int8_weights.py).
func TestInt8DecodeLogitsNearStoredWeights(t *testing.T) {
	cfg := tinyConfig{Arch: "LlamaForCausalLM", Hidden: 64, Inter: 96, Layers: 2, Heads: 4, KVHeads: 2, Vocab: 300}
	dir := writeModel(t, cfg, tensorsFor(cfg, 5), nil)
	ref, err := model.Load(dir, model.WithThreads(2))
	require.NoError(t, err)
	defer ref.Close()
	q8, err := model.Load(dir, model.WithThreads(2), model.WithInt8Weights())
	require.NoError(t, err)
	defer q8.Close()
	assert.Contains(t, q8.Engine().Name(), "int8 weights")
	sr, sq := ref.NewState(), q8.NewState()
	ids := []int{1, 7, 3, 250, 0, 299, 12, 5, 9, 40, 41, 42}
	var worst float64
	for p, id := range ids { // one token at a time: the decode kernels
		lr, err := ref.Forward(sr, []int{id})
		require.NoError(t, err)
		lq, err := q8.Forward(sq, []int{id})
		require.NoError(t, err)
		var scale, diff float64
		for i, v := range lr.Float32s() {
			scale = max(scale, math.Abs(float64(v)))
			diff = max(diff, math.Abs(float64(v-lq.Float32s()[i])))
		}
		require.Greater(t, scale, 0.5)
		worst = max(worst, diff/scale)
		assert.Greater(t, diff, 0.0, "position %d: int8 logits equal the float32 ones exactly", p)
		assert.LessOrEqual(t, diff, 0.1*scale, "position %d: max |int8 - f32| %.3g of max |logit| %.3g", p, diff, scale)
	}
	t.Logf("int8 decode logits: worst max|diff| = %.2f%% of max|logit|", 100*worst)
}
