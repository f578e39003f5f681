package model_test

import (
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"

	"github.com/tetherlm/tether/gocore/model"
)

// engines returns the CPU engine with its default kernels (AVX2/FMA assembly where the
// CPU has it) and with the portable Go kernels, so both paths are tested on amd64;
// opts apply to both.
func engines(threads int, opts ...model.CPUOption) map[string]*model.CPU {
	return map[string]*model.CPU{
		"default":  model.NewCPU(threads, opts...),
		"portable": model.NewCPU(threads, append(opts, model.WithPortableKernels())...),
	}
}

// bf16Round truncates v to bfloat16 bit patterns and returns them with their exact
// float32 values.
func bf16Round(v []float32) ([]uint16, []float32) {
	bits := make([]uint16, len(v))
	wide := make([]float32, len(v))
	for i, x := range v {
		bits[i] = uint16(math.Float32bits(x) >> 16)
		wide[i] = model.BF16ToFloat32(bits[i])
	}
	return bits, wide
}

func dense(rows, cols int, v []float32) *tensor.Dense {
	return tensor.New(tensor.WithShape(rows, cols), tensor.WithBacking(v))
}

// naiveProduct returns x·wᵀ in float64: x [n, cols], w [rows, cols].
func naiveProduct(x, w []float32, n, rows, cols int) []float64 {
	out := make([]float64, n*rows)
	for t := 0; t < n; t++ {
		for o := 0; o < rows; o++ {
			var s float64
			for i := 0; i < cols; i++ {
				s += float64(w[o*cols+i]) * float64(x[t*cols+i])
			}
			out[t*rows+o] = s
		}
	}
	return out
}

// upload uploads w as f32 or as bf16 bits and returns the values the engine multiplies by.
func upload(t *testing.T, e model.Engine, dtype string, rows, cols int, w []float32) (model.Weight, []float32) {
	t.Helper()
	if dtype == "bf16" {
		bits, wide := bf16Round(w)
		wt, err := e.Upload("w", tensor.New(tensor.WithShape(rows, cols), tensor.WithBacking(bits)))
		require.NoError(t, err)
		return wt, wide
	}
	wt, err := e.Upload("w", dense(rows, cols, w))
	require.NoError(t, err)
	return wt, w
}

func TestCPUKernelsMatchNaiveProducts(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 5))
	for _, tc := range []struct{ rows, cols, n int }{
		{1, 1, 1}, {1, 3, 7}, {16, 8, 6}, {17, 5, 12}, {40, 33, 13}, {32, 576, 1}, {192, 576, 128}, {48, 1536, 7},
	} {
		w := randSlice(r, tc.rows*tc.cols)
		x := randSlice(r, tc.n*tc.cols)
		for name, e := range engines(2) {
			for _, dtype := range []string{"f32", "bf16"} {
				wt, wv := upload(t, e, dtype, tc.rows, tc.cols, w)
				want := naiveProduct(x, wv, tc.n, tc.rows, tc.cols)
				dst := dense(tc.n, tc.rows, make([]float32, tc.n*tc.rows))
				require.NoError(t, e.MatMul(dst, dense(tc.n, tc.cols, x), wt))
				assert.InDeltaSlice(t, want, f64(dst.Float32s()), 2e-3, "matmul %v %s %s", tc, name, dtype)
				if tc.n == 1 {
					dv := tensor.New(tensor.WithShape(tc.rows), tensor.WithBacking(make([]float32, tc.rows)))
					require.NoError(t, e.MatVec(dv, tensor.New(tensor.WithShape(tc.cols), tensor.WithBacking(x)), wt))
					assert.InDeltaSlice(t, want, f64(dv.Float32s()), 2e-3, "matvec %v %s %s", tc, name, dtype)
				}
				// Rows reads the packed panels back.
				ids := []int{tc.rows - 1, 0, tc.rows / 2}
				rows := dense(len(ids), tc.cols, make([]float32, len(ids)*tc.cols))
				require.NoError(t, e.Rows(rows, wt, ids, 1))
				for i, id := range ids {
					assert.Equal(t, wv[id*tc.cols:(id+1)*tc.cols], rows.Float32s()[i*tc.cols:(i+1)*tc.cols], "rows %v %s %s", tc, name, dtype)
				}
			}
		}
	}
}

func TestCPUFusedOpsMatchStepByStep(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 9))
	const cols, rowsA, rowsB, inter = 40, 24, 8, 56
	for _, n := range []int{1, 5, 9} {
		x := randSlice(r, n*cols)
		g := randSlice(r, cols)
		wa, wb := randSlice(r, rowsA*cols), randSlice(r, rowsB*cols)
		ba := randSlice(r, rowsA)
		wg, wu, wd := randSlice(r, inter*cols), randSlice(r, inter*cols), randSlice(r, cols*inter)
		bg, bu := randSlice(r, inter), randSlice(r, inter)
		const eps = 1e-5
		// step by step, in float32 host code and float64 products
		h := make([]float32, n*cols)
		for t0 := 0; t0 < n; t0++ {
			model.RMSNorm(h[t0*cols:(t0+1)*cols], x[t0*cols:(t0+1)*cols], g, eps)
		}
		wantA := naiveProduct(h, wa, n, rowsA, cols)
		for i := range wantA {
			wantA[i] += float64(ba[i%rowsA])
		}
		wantB := naiveProduct(h, wb, n, rowsB, cols)
		gate := naiveProduct(h, wg, n, inter, cols)
		up := naiveProduct(h, wu, n, inter, cols)
		act := make([]float32, n*inter)
		for i := range act {
			gv, uv := float32(gate[i]+float64(bg[i%inter])), float32(up[i]+float64(bu[i%inter]))
			act[i] = gv
			model.SiLUMul(act[i:i+1], []float32{uv})
		}
		down := naiveProduct(act, wd, n, cols, inter)
		wantRes := make([]float64, n*cols)
		for i := range wantRes {
			wantRes[i] = float64(x[i]) + down[i]
		}

		for name, e := range engines(2) {
			vec := func(v []float32) model.Weight {
				w, err := e.Upload("v", dense(1, len(v), v))
				require.NoError(t, err)
				return w
			}
			mat := func(rows, c int, v []float32) model.Weight {
				w, err := e.Upload("m", dense(rows, c, v))
				require.NoError(t, err)
				return w
			}
			xd := dense(n, cols, append([]float32(nil), x...))
			da, db := dense(n, rowsA, make([]float32, n*rowsA)), dense(n, rowsB, make([]float32, n*rowsB))
			require.NoError(t, e.NormMatMul([]*tensor.Dense{da, db}, xd, vec(g), eps,
				[]model.Linear{{W: mat(rowsA, cols, wa), B: vec(ba)}, {W: mat(rowsB, cols, wb)}}))
			assert.InDeltaSlice(t, wantA, f64(da.Float32s()), 1e-4, "normmatmul a, n=%d %s", n, name)
			assert.InDeltaSlice(t, wantB, f64(db.Float32s()), 1e-4, "normmatmul b, n=%d %s", n, name)
			assert.Equal(t, x, xd.Float32s(), "x is left unchanged")

			dg := dense(n, inter, make([]float32, n*inter))
			require.NoError(t, e.NormGLU(dg, xd, vec(g), eps,
				model.Linear{W: mat(inter, cols, wg), B: vec(bg)}, model.Linear{W: mat(inter, cols, wu), B: vec(bu)}, model.SiLU))
			assert.InDeltaSlice(t, f64(act), f64(dg.Float32s()), 1e-4, "swiglu n=%d %s", n, name)

			require.NoError(t, e.Residual(xd, dense(n, inter, act), model.Linear{W: mat(cols, inter, wd)}))
			assert.InDeltaSlice(t, wantRes, f64(xd.Float32s()), 1e-3, "residual n=%d %s", n, name)

			last := dense(1, cols, make([]float32, cols))
			require.NoError(t, e.RMSNorm(last, dense(n, cols, x), vec(g), eps))
			assert.Equal(t, h[(n-1)*cols:], last.Float32s(), "rmsnorm of the last row, n=%d %s", n, name)
		}
	}
}

func TestCPURoPEMatchesRotate(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	rope, err := model.NewRoPE(8, 10000, nil)
	require.NoError(t, err)
	const n, cols = 3, 24
	x := randSlice(r, n*cols)
	cos, sin := make([]float32, n*4), make([]float32, n*4)
	want := append([]float32(nil), x...)
	for t0 := 0; t0 < n; t0++ {
		rope.CosSin(7+t0, cos[t0*4:(t0+1)*4], sin[t0*4:(t0+1)*4])
		rope.Apply(want[t0*cols:(t0+1)*cols], 7+t0)
	}
	e := model.NewCPU(1)
	xd := dense(n, cols, x)
	require.NoError(t, e.RoPE(xd, 8, 8, cos, sin))
	assert.Equal(t, want, xd.Float32s())
	require.ErrorContains(t, e.RoPE(dense(2, 10, make([]float32, 20)), 8, 8, cos, sin), "not rows of heads of 8")
}

func TestCPUAttentionMatchesNaive(t *testing.T) {
	// head dimensions: below the kernels' 16, a multiple of 8 only, and 64 and 80
	for _, hd := range []int{8, 24, 64, 80} {
		testAttention(t, hd)
	}
}

func testAttention(t *testing.T, hd int) {
	r := rand.New(rand.NewPCG(8, uint64(hd)))
	const heads, kvHeads, total = 4, 2, 11
	qDim, kvDim := heads*hd, kvHeads*hd
	q, k, v := randSlice(r, total*qDim), randSlice(r, total*kvDim), randSlice(r, total*kvDim)
	want := naiveAttention(q, k, v, heads, kvHeads, hd, total, model.AttentionOptions{})
	for name, e := range engines(2) {
		kv, err := e.NewKV(2, kvHeads, hd, 0)
		require.NoError(t, err)
		// a 5-position prefill, then one position at a time (the cache grows past 64 never
		// here; Cap reports what it holds)
		got := attentionAlong(t, e, kv, 1, q, k, v, qDim, kvDim, total, 5, model.AttentionOptions{})
		assert.GreaterOrEqual(t, kv.Cap(), total)
		assert.InDeltaSlice(t, want, got, 1e-5, "%s, head dim %d", name, hd)
		err = e.Attention(dense(1, qDim, make([]float32, qDim)), dense(1, qDim, q[:qDim]),
			dense(1, kvDim, k[:kvDim]), dense(1, kvDim, v[:kvDim]), kv, 2, 0, model.AttentionOptions{})
		require.ErrorContains(t, err, "layer 2 of 2")
	}
}

func TestCPUUploadErrors(t *testing.T) {
	e := model.NewCPU(1)
	_, err := e.Upload("w", tensor.New(tensor.WithShape(2, 2), tensor.WithBacking([]float64{1, 2, 3, 4})))
	require.ErrorContains(t, err, `weight "w" has dtype float64, want float32 or uint16 (bfloat16 bits)`)
	_, err = e.Upload("w", tensor.New(tensor.WithShape(4), tensor.WithBacking([]float32{1, 2, 3, 4})))
	require.ErrorContains(t, err, "want a matrix")
	other, err := model.NewCPU(1).Upload("theirs", dense(2, 2, make([]float32, 4)))
	require.NoError(t, err)
	_ = other
	mine, err := e.Upload("mine", dense(2, 2, make([]float32, 4)))
	require.NoError(t, err)
	x := dense(1, 2, make([]float32, 2))
	err = e.NormMatMul([]*tensor.Dense{dense(1, 2, make([]float32, 2))}, x, mine, 1e-5, []model.Linear{{W: mine}})
	require.ErrorContains(t, err, `"mine" has shape [2 2], want a vector of 2`)
	require.NoError(t, e.Close())
	// after Close the engine still computes, on the caller's goroutine
	require.NoError(t, e.MatMul(dense(1, 2, make([]float32, 2)), x, mine))
}

// A BF16 checkpoint stays bf16 in memory; its logits equal those of the same weights
// widened and stored as F32, with both kernel sets.
func TestBF16CheckpointMatchesWidenedF32(t *testing.T) {
	cfg := tinyConfig{Arch: "Qwen2ForCausalLM", Hidden: 32, Inter: 48, Layers: 2, Heads: 4, KVHeads: 2, Vocab: 50, QKVBias: true, Tie: true}
	bf, wide := toBF16Tensors(tensorsFor(cfg, 4))
	ids := []int{4, 9, 1, 33, 2, 2, 17, 40}
	logits := func(dir string, e model.Engine) []float64 {
		m, err := model.Load(dir, model.WithEngine(e))
		require.NoError(t, err)
		defer m.Close()
		all, err := m.ForwardAll(m.NewState(), ids)
		require.NoError(t, err)
		return f64(all.Float32s())
	}
	bfDir, wideDir := writeModel(t, cfg, bf, nil), writeModel(t, cfg, wide, nil)
	want := logits(wideDir, model.NewCPU(2))
	for name, e := range engines(2) {
		assert.InDeltaSlice(t, want, logits(bfDir, e), 1e-5, "bf16 checkpoint, %s kernels", name)
		assert.InDeltaSlice(t, want, logits(wideDir, e), 1e-5, "f32 checkpoint, %s kernels", name)
	}
}

// BenchmarkPrefillGEMM is the gate/up product of a 128-token prefill on SmolLM-135M's
// shape (x [128, 576] · w[1536, 576]ᵀ).
func BenchmarkPrefillGEMM(b *testing.B) {
	for _, dtype := range []string{"f32", "bf16", "bf16-math"} {
		b.Run(dtype, func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			var opts []model.CPUOption
			if dtype == "bf16-math" {
				opts = append(opts, model.WithBF16Products())
			}
			e := model.NewCPU(0, opts...)
			defer e.Close()
			b.Log(e.Name())
			const n, rows, cols = 128, 1536, 576
			var w model.Weight
			var err error
			if dtype != "f32" {
				bits, _ := bf16Round(randSlice(r, rows*cols))
				w, err = e.Upload("w", tensor.New(tensor.WithShape(rows, cols), tensor.WithBacking(bits)))
			} else {
				w, err = e.Upload("w", dense(rows, cols, randSlice(r, rows*cols)))
			}
			if err != nil {
				b.Fatal(err)
			}
			x := dense(n, cols, randSlice(r, n*cols))
			dst := dense(n, rows, make([]float32, n*rows))
			for b.Loop() {
				if err := e.MatMul(dst, x, w); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(2*n*rows*cols)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// modelGoroutines counts the goroutines that code of package model started on behalf of
// the calling goroutine (the CPU engine's workers, and anything a product might start).
// Counting only those keeps the check exact while workers of engines that earlier tests
// closed are still on their way out: runtime.NumGoroutine saw one leave mid-test in CI.
func modelGoroutines(t *testing.T) int {
	t.Helper()
	self := make([]byte, 64)
	self = self[:runtime.Stack(self, false)]
	id, _, ok := strings.Cut(strings.TrimPrefix(string(self), "goroutine "), " ")
	require.True(t, ok, "goroutine header %q", self)
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, line := range strings.Split(string(buf), "\n") {
		if strings.HasPrefix(line, "created by github.com/tetherlm/tether/gocore/model.") &&
			strings.HasSuffix(line, " in goroutine "+id) {
			count++
		}
	}
	return count
}

// The CPU engine's workers are started once, not per product, and stop at Close.
func TestCPUWorkerPoolIsPersistent(t *testing.T) {
	require.Equal(t, 0, modelGoroutines(t))
	e := model.NewCPU(3)
	require.Equal(t, 2, modelGoroutines(t), "two workers beside the caller")
	r := rand.New(rand.NewPCG(2, 2))
	w, err := e.Upload("w", dense(1536, 576, randSlice(r, 1536*576)))
	require.NoError(t, err)
	x := tensor.New(tensor.WithShape(576), tensor.WithBacking(randSlice(r, 576)))
	dst := tensor.New(tensor.WithShape(1536), tensor.WithBacking(make([]float32, 1536)))
	want := make([]float32, 1536)
	require.NoError(t, e.MatVec(tensor.New(tensor.WithShape(1536), tensor.WithBacking(want)), x, w))
	for i := 0; i < 50; i++ {
		if i%10 == 0 {
			// Idle for longer than the workers spin: they park, and the next product
			// must wake them (and still be right).
			time.Sleep(5 * time.Millisecond)
		}
		require.NoError(t, e.MatVec(dst, x, w))
		require.Equal(t, want, dst.Float32s(), "product %d", i)
	}
	assert.Equal(t, 2, modelGoroutines(t), "products start no goroutines")
	time.Sleep(5 * time.Millisecond) // Close reaches parked workers too
	require.NoError(t, e.Close())
	deadline := time.Now().Add(5 * time.Second)
	for modelGoroutines(t) > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	assert.Equal(t, 0, modelGoroutines(t), "workers stop at Close")
}
