//go:build cuda

// Package modelcuda_test checks the CUDA engine (gocore/model/cuda) on a GPU against
// the CPU engine: every operation on random inputs, whole models token by token
// (prefill, eager and graph-replayed decode steps, a KV cache that grows past its first
// capacity), two interleaved sequences, and the errors of wrong shapes. It is compiled
// here (`make test` vets and links it with -tags cuda) and run on the GPU machine from
// the device-check bundle (`make cuda-check-bundle`, then bash build/cuda-check/run.sh).
package modelcuda_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"

	"github.com/tetherlm/tether/gocore/model"
	"github.com/tetherlm/tether/gocore/model/cuda"
	"github.com/tetherlm/tether/tests_go/internal/tinymodel"
)

func newGPU(t testing.TB, opts cuda.Options) *cuda.Engine {
	t.Helper()
	e, err := cuda.New(opts)
	require.NoError(t, err)
	t.Cleanup(func() { e.Close() })
	return e.(*cuda.Engine)
}

func randVals(r *rand.Rand, n int, scale float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = scale * float32(r.NormFloat64())
	}
	return v
}

// relErr is max |a-b| / max(|b|, tiny): the error relative to the reference's scale.
func relErr(a, b []float32) float64 {
	var diff, scale float64
	for i := range b {
		diff = math.Max(diff, math.Abs(float64(a[i])-float64(b[i])))
		scale = math.Max(scale, math.Abs(float64(b[i])))
	}
	return diff / math.Max(scale, 1e-30)
}

// both holds the same values on the CPU engine and on the GPU.
type both struct {
	h, d *tensor.Dense
}

type rig struct {
	t   *testing.T
	cpu *model.CPU
	gpu *cuda.Engine
}

func newRig(t *testing.T) *rig {
	c := model.NewCPU(2)
	t.Cleanup(func() { c.Close() })
	return &rig{t: t, cpu: c, gpu: newGPU(t, cuda.Options{})}
}

func (r *rig) act(rows, cols int, vals []float32) both {
	h, err := r.cpu.Alloc(rows, cols)
	require.NoError(r.t, err)
	d, err := r.gpu.Alloc(rows, cols)
	require.NoError(r.t, err)
	if vals != nil {
		copy(h.Float32s(), vals)
		require.NoError(r.t, r.gpu.Write(d, vals))
	}
	return both{h, d}
}

type wpair struct{ h, d model.Weight }

// weight uploads vals as f32, or as bf16 bits (both engines get the same bits).
func (r *rig) weight(name string, rows, cols int, vals []float32, bf16 bool) wpair {
	var mk func() *tensor.Dense
	if bf16 && rows > 1 {
		bits := make([]uint16, len(vals))
		for i, v := range vals {
			bits[i] = tinymodel.BF16(v)
		}
		mk = func() *tensor.Dense {
			return tensor.New(tensor.WithShape(rows, cols), tensor.WithBacking(append([]uint16(nil), bits...)))
		}
	} else {
		mk = func() *tensor.Dense {
			return tensor.New(tensor.WithShape(rows, cols), tensor.WithBacking(append([]float32(nil), vals...)))
		}
	}
	h, err := r.cpu.Upload(name, mk())
	require.NoError(r.t, err)
	d, err := r.gpu.Upload(name, mk())
	require.NoError(r.t, err)
	return wpair{h, d}
}

// check compares the GPU activation with the CPU one.
func (r *rig) check(what string, b both, tol float64) {
	r.t.Helper()
	got, err := r.gpu.Read(b.d)
	require.NoError(r.t, err)
	e := relErr(got, b.h.Float32s())
	require.LessOrEqualf(r.t, e, tol, "%s: relative error %.3g", what, e)
}

// TestOpsMatchCPU runs every Engine operation on both engines: single rows (the
// engine's own kernels) and several rows (cuBLAS), f32 and bf16 weights, with biases.
func TestOpsMatchCPU(t *testing.T) {
	r := newRig(t)
	rnd := rand.New(rand.NewPCG(7, 7))
	for _, bf16 := range []bool{false, true} {
		for _, n := range []int{1, 5, 37} {
			name := map[bool]string{false: "f32", true: "bf16"}[bf16]
			tol := 1e-5
			if bf16 && n > 1 {
				tol = 2e-2 // cuBLAS rounds the inputs to bf16 (as PyTorch does); the CPU does not
			}
			H, I, V := 96, 136, 300 // not multiples of 8 for I: the scalar paths run too
			x := r.act(n, H, randVals(rnd, n*H, 1))
			norm := r.weight("norm", 1, H, randVals(rnd, H, 0.1), bf16)
			q := r.weight("q", 64, H, randVals(rnd, 64*H, 0.2), bf16)
			qb := r.weight("qb", 1, 64, randVals(rnd, 64, 0.1), bf16)
			gate := r.weight("gate", I, H, randVals(rnd, I*H, 0.2), bf16)
			up := r.weight("up", I, H, randVals(rnd, I*H, 0.2), bf16)
			down := r.weight("down", H, I, randVals(rnd, H*I, 0.2), bf16)
			emb := r.weight("emb", V, H, randVals(rnd, V*H, 0.5), bf16)

			qo := r.act(n, 64, nil)
			require.NoError(t, r.cpu.NormMatMul([]*tensor.Dense{qo.h}, x.h, norm.h, 1e-5, []model.Linear{{W: q.h, B: qb.h}}))
			require.NoError(t, r.gpu.NormMatMul([]*tensor.Dense{qo.d}, x.d, norm.d, 1e-5, []model.Linear{{W: q.d, B: qb.d}}))
			r.check(name+" normmatmul", qo, tol)

			g := r.act(n, I, nil)
			for _, act := range []model.Activation{model.GELUTanh, model.SiLU} {
				require.NoError(t, r.cpu.NormGLU(g.h, x.h, norm.h, 1e-5, model.Linear{W: gate.h}, model.Linear{W: up.h}, act))
				require.NoError(t, r.gpu.NormGLU(g.d, x.d, norm.d, 1e-5, model.Linear{W: gate.d}, model.Linear{W: up.d}, act))
				r.check(name+" normglu "+act.String(), g, tol)
			}

			// Gemma's sandwich norm on a residual branch, then a per-head norm (Qwen3, Gemma).
			pnorm := r.weight("post", 1, H, randVals(rnd, H, 0.1), bf16)
			require.NoError(t, r.cpu.ResidualNorm(x.h, g.h, model.Linear{W: down.h}, pnorm.h, 1e-5))
			require.NoError(t, r.gpu.ResidualNorm(x.d, g.d, model.Linear{W: down.d}, pnorm.d, 1e-5))
			r.check(name+" residualnorm", x, tol)
			hnorm := r.weight("qnorm", 1, 16, randVals(rnd, 16, 0.1), bf16)
			require.NoError(t, r.cpu.HeadRMSNorm(qo.h, hnorm.h, 1e-5))
			require.NoError(t, r.gpu.HeadRMSNorm(qo.d, hnorm.d, 1e-5))
			r.check(name+" head rmsnorm", qo, tol)

			require.NoError(t, r.cpu.Residual(x.h, g.h, model.Linear{W: down.h}))
			require.NoError(t, r.gpu.Residual(x.d, g.d, model.Linear{W: down.d}))
			r.check(name+" residual", x, tol)

			mm := r.act(n, 64, nil)
			require.NoError(t, r.cpu.MatMul(mm.h, x.h, q.h))
			require.NoError(t, r.gpu.MatMul(mm.d, x.d, q.d))
			r.check(name+" matmul", mm, tol)

			// The norm of one row from the same input on both engines: x may differ by
			// cuBLAS's bf16 rounding after the products above.
			require.NoError(t, r.gpu.Write(x.d, x.h.Float32s()))
			last := r.act(1, H, nil)
			require.NoError(t, r.cpu.RMSNorm(last.h, x.h, norm.h, 1e-5))
			require.NoError(t, r.gpu.RMSNorm(last.d, x.d, norm.d, 1e-5))
			r.check(name+" rmsnorm of the last row", last, 1e-5)

			// MatVec into a host tensor (the logits path).
			hostOut := tensor.New(tensor.WithShape(V), tensor.WithBacking(make([]float32, V)))
			want := tensor.New(tensor.WithShape(V), tensor.WithBacking(make([]float32, V)))
			require.NoError(t, r.cpu.MatVec(want, last.h, emb.h))
			require.NoError(t, r.gpu.MatVec(hostOut, last.d, emb.d))
			require.LessOrEqual(t, relErr(hostOut.Float32s(), want.Float32s()), 1e-5, name+" matvec to host")

			ids := make([]int, n)
			for i := range ids {
				ids[i] = rnd.IntN(V)
			}
			rows := r.act(n, H, nil)
			for _, scale := range []float32{1, 9.8125} {
				require.NoError(t, r.cpu.Rows(rows.h, emb.h, ids, scale))
				require.NoError(t, r.gpu.Rows(rows.d, emb.d, ids, scale))
				r.check(name+" rows", rows, 0)
			}
		}
	}
}

func TestRoPEAndAttentionMatchCPU(t *testing.T) {
	r := newRig(t)
	rnd := rand.New(rand.NewPCG(3, 9))
	for _, tc := range []struct {
		hd, rotary int
		opt        model.AttentionOptions
	}{
		{64, 64, model.AttentionOptions{}},
		{80, 40, model.AttentionOptions{Window: 5}},
		{128, 128, model.AttentionOptions{Scale: 0.2, Window: 300}},
		{256, 256, model.AttentionOptions{Scale: 0.0625, Window: 7}},
	} {
		hd := tc.hd
		heads, kvHeads := 4, 2
		kvc, err := r.cpu.NewKV(1, kvHeads, hd, 0)
		require.NoError(t, err)
		kvg, err := r.gpu.NewKV(1, kvHeads, hd, 0)
		require.NoError(t, err)
		pos := 0
		// A prefill, decode steps, then a chunk that crosses the first capacity (256).
		for _, n := range []int{7, 1, 1, 1, 260, 1} {
			q := r.act(n, heads*hd, randVals(rnd, n*heads*hd, 1))
			k := r.act(n, kvHeads*hd, randVals(rnd, n*kvHeads*hd, 1))
			v := r.act(n, kvHeads*hd, randVals(rnd, n*kvHeads*hd, 1))
			half := tc.rotary / 2
			cos, sin := make([]float32, n*half), make([]float32, n*half)
			for i := range cos {
				a := rnd.Float64() * 2 * math.Pi
				cos[i], sin[i] = float32(math.Cos(a)), float32(math.Sin(a))
			}
			for _, x := range []both{q, k} {
				require.NoError(t, r.cpu.RoPE(x.h, hd, tc.rotary, cos, sin))
				require.NoError(t, r.gpu.RoPE(x.d, hd, tc.rotary, cos, sin))
				r.check("rope", x, 1e-6)
			}
			out := r.act(n, heads*hd, nil)
			require.NoError(t, r.cpu.Attention(out.h, q.h, k.h, v.h, kvc, 0, pos, tc.opt))
			require.NoError(t, r.gpu.Attention(out.d, q.d, k.d, v.d, kvg, 0, pos, tc.opt))
			r.check("attention", out, 1e-5)
			pos += n
		}
	}
}

// TestFusedAttentionMatchesCPU: RoPEAttention of single tokens inside a Step (the
// fused rope_store and attn_fused kernels) against the CPU engine's RoPE, RoPE and
// Attention, for head sizes 64 to 256, partial rotary, windows, grouped heads, and
// positions past the cache's first capacity (256); q and k must come back rotated too.
// The last case's cache holds more positions than attn_fused keeps in shared memory
// (8192), so its scores go through the global buffer.
func TestFusedAttentionMatchesCPU(t *testing.T) {
	r := newRig(t)
	rnd := rand.New(rand.NewPCG(5, 11))
	for _, tc := range []struct {
		hd, rotary, heads, kvHeads int
		opt                        model.AttentionOptions
		prefill, steps             int
	}{
		{64, 64, 4, 2, model.AttentionOptions{}, 9, 299},
		{80, 40, 6, 2, model.AttentionOptions{Window: 5}, 9, 299},
		{128, 128, 4, 4, model.AttentionOptions{Scale: 0.2, Window: 300}, 9, 299},
		{256, 256, 8, 1, model.AttentionOptions{Scale: 0.0625, Window: 7}, 9, 299},
		{32, 16, 2, 1, model.AttentionOptions{Window: 1}, 9, 299},
		{32, 32, 2, 1, model.AttentionOptions{}, 8300, 4},
	} {
		hd, heads, kvHeads := tc.hd, tc.heads, tc.kvHeads
		kvc, err := r.cpu.NewKV(1, kvHeads, hd, 0)
		require.NoError(t, err)
		kvg, err := r.gpu.NewKV(1, kvHeads, hd, 0)
		require.NoError(t, err)
		half := tc.rotary / 2
		angles := func(n int) ([]float32, []float32) {
			cos, sin := make([]float32, n*half), make([]float32, n*half)
			for i := range cos {
				a := rnd.Float64() * 2 * math.Pi
				cos[i], sin[i] = float32(math.Cos(a)), float32(math.Sin(a))
			}
			return cos, sin
		}
		pos := 0
		for step := 0; step <= tc.steps; step++ {
			n := 1
			if step == 0 {
				n = tc.prefill // a prefill first: the separate operations
			}
			q := r.act(n, heads*hd, randVals(rnd, n*heads*hd, 1))
			k := r.act(n, kvHeads*hd, randVals(rnd, n*kvHeads*hd, 1))
			v := r.act(n, kvHeads*hd, randVals(rnd, n*kvHeads*hd, 1))
			out := r.act(n, heads*hd, nil)
			cos, sin := angles(n)
			require.NoError(t, r.cpu.RoPE(q.h, hd, tc.rotary, cos, sin))
			require.NoError(t, r.cpu.RoPE(k.h, hd, tc.rotary, cos, sin))
			require.NoError(t, r.cpu.Attention(out.h, q.h, k.h, v.h, kvc, 0, pos, tc.opt))
			st := &model.Step{Seq: kvg, IDs: make([]int, n), Pos0: pos, Cos: cos, Sin: sin, KV: kvg}
			require.NoError(t, r.gpu.Step(st, func() error {
				return r.gpu.RoPEAttention(out.d, q.d, k.d, v.d, kvg, 0, pos, hd, tc.rotary, cos, sin, tc.opt)
			}))
			what := fmt.Sprintf("hd %d rotary %d window %d, position %d", hd, tc.rotary, tc.opt.Window, pos)
			r.check(what+": q", q, 1e-6)
			r.check(what+": k", k, 1e-6)
			r.check(what+": attention", out, 1e-5)
			pos += n
		}
		require.Equal(t, tc.prefill+tc.steps, pos)
		require.GreaterOrEqual(t, kvg.Cap(), pos)
	}
}

// TestSplitProductsMatchCPU: single-row products of few rows and wide columns, which
// the engine splits across several warps a row (matvec_split: 2, 4 or 8 parts), stored
// and added to a residual stream, f32 and bf16, vector and scalar column counts.
func TestSplitProductsMatchCPU(t *testing.T) {
	r := newRig(t)
	rnd := rand.New(rand.NewPCG(8, 1))
	for _, bf16 := range []bool{false, true} {
		for _, sh := range []struct{ rows, cols int }{{8, 4096}, {37, 1032}, {5, 1030}, {3, 600}, {576, 1536}} {
			what := fmt.Sprintf("bf16=%v %dx%d", bf16, sh.rows, sh.cols)
			x := r.act(1, sh.cols, randVals(rnd, sh.cols, 1))
			w := r.weight("w", sh.rows, sh.cols, randVals(rnd, sh.rows*sh.cols, 0.1), bf16)
			b := r.weight("b", 1, sh.rows, randVals(rnd, sh.rows, 0.1), false)
			y := r.act(1, sh.rows, nil)
			require.NoError(t, r.cpu.MatVec(y.h, x.h, w.h))
			require.NoError(t, r.gpu.MatVec(y.d, x.d, w.d))
			r.check(what+" matvec", y, 1e-5)
			stream := r.act(1, sh.rows, randVals(rnd, sh.rows, 1))
			require.NoError(t, r.cpu.Residual(stream.h, x.h, model.Linear{W: w.h, B: b.h}))
			require.NoError(t, r.gpu.Residual(stream.d, x.d, model.Linear{W: w.d, B: b.d}))
			r.check(what+" residual", stream, 1e-5)
		}
	}
}

func TestShapeErrors(t *testing.T) {
	r := newRig(t)
	w := r.weight("w", 8, 16, make([]float32, 128), false)
	x := r.act(1, 16, nil)
	bad := r.act(1, 15, nil)
	dst := r.act(1, 8, nil)
	require.ErrorContains(t, r.gpu.MatVec(dst.d, bad.d, w.d), "cuda: matvec")
	require.ErrorContains(t, r.gpu.MatVec(dst.d, x.h, w.d), "host tensor")
	require.ErrorContains(t, r.gpu.MatVec(dst.d, x.d, w.h), "not uploaded to this engine")
	require.ErrorContains(t, r.gpu.Rows(dst.d, w.d, []int{1}, 1), "dst (1, 8) for 1 ids of 16 columns")
	require.ErrorContains(t, r.gpu.Rows(x.d, w.d, []int{9}, 1), "token id 9 at position 0 is outside")
	_, err := r.gpu.NewKV(1, 1, 512, 0)
	require.ErrorContains(t, err, "head_dim 512")
	_, err = r.gpu.Upload("v", tensor.New(tensor.WithShape(2, 2), tensor.WithBacking([]float64{1, 2, 3, 4})))
	require.ErrorContains(t, err, "dtype")
}

// loadBoth loads the checkpoint in dir on the CPU engine and on a new GPU engine; both
// models are closed when the test ends.
func loadBoth(t *testing.T, dir string) (cpuM, gpuM *model.Model, gpu *cuda.Engine) {
	t.Helper()
	cpuM, err := model.Load(dir, model.WithThreads(2))
	require.NoError(t, err)
	t.Cleanup(func() { cpuM.Close() })
	gpu = newGPU(t, cuda.Options{})
	gpuM, err = model.Load(dir, model.WithEngine(gpu))
	require.NoError(t, err)
	t.Cleanup(func() { gpuM.Close() })
	return cpuM, gpuM, gpu
}

func writeModel(t *testing.T, c tinymodel.Config) string {
	dir := t.TempDir()
	require.NoError(t, tinymodel.Write(dir, c, 11))
	return dir
}

// decodeBoth runs a prompt then steps token by token on a CPU and a GPU model and
// compares the logits of every call; the next token is the CPU's argmax.
func decodeBoth(t *testing.T, cpuM, gpuM *model.Model, prompt []int, steps int, tol float64) {
	cs, gs := cpuM.NewState(), gpuM.NewState()
	ids := prompt
	for s := 0; s <= steps; s++ {
		want, err := cpuM.Forward(cs, ids)
		require.NoError(t, err)
		got, err := gpuM.Forward(gs, ids)
		require.NoError(t, err)
		e := relErr(got.Float32s(), want.Float32s())
		require.LessOrEqualf(t, e, tol, "call %d (position %d): relative error %.3g", s, cs.Pos(), e)
		best := 0
		for i, v := range want.Float32s() {
			if v > want.Float32s()[best] {
				best = i
			}
		}
		ids = []int{best}
	}
}

// TestModelMatchesCPU: a whole f32 model, prompt then 40 decode steps (the first
// eager, the second recorded as a graph, the rest replayed), with a prompt long enough
// that the cache grows past 256 positions during decode (a graph recorded before the
// growth is dropped and recorded again).
func TestModelMatchesCPU(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  tinymodel.Config
	}{ // bf16 checkpoints: the prefill rounds its inputs to bf16 (cuBLAS, as PyTorch; the CPU engine too where it has AVX512-BF16, exact products elsewhere)
		{"llama-f32", tinymodel.Config{Hidden: 128, Inter: 352, Layers: 3, Heads: 4, KVHeads: 2, Vocab: 1000}},
		{"qwen2-tied-f32", tinymodel.Config{Hidden: 128, Inter: 256, Layers: 2, Heads: 2, KVHeads: 1, Vocab: 999, Tie: true, QKVBias: true}},
		{"qwen3-window-f32", tinymodel.Config{Arch: "Qwen3ForCausalLM", Hidden: 64, Inter: 96, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 32, Vocab: 300,
			Extra: map[string]any{"use_sliding_window": true, "sliding_window": 16, "max_window_layers": 1}}},
		{"mistral-window-bf16", tinymodel.Config{Arch: "MistralForCausalLM", Hidden: 64, Inter: 96, Layers: 2, Heads: 4, KVHeads: 2, Vocab: 300, BF16: true,
			Extra: map[string]any{"sliding_window": 20}}},
		{"phi3-partial-rotary-f32", tinymodel.Config{Arch: "Phi3ForCausalLM", Hidden: 64, Inter: 96, Layers: 2, Heads: 4, KVHeads: 2, Vocab: 300,
			Extra: map[string]any{"partial_rotary_factor": 0.5}}},
		{"gemma3-f32", tinymodel.Config{Arch: "Gemma3ForCausalLM", Hidden: 64, Inter: 96, Layers: 3, Heads: 4, KVHeads: 2, HeadDim: 32, Vocab: 300,
			Extra: map[string]any{"sliding_window": 12, "sliding_window_pattern": 2, "query_pre_attn_scalar": 24,
				"rope_scaling": map[string]any{"rope_type": "linear", "factor": 2}, "final_logit_softcapping": 2.5}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cpuM, gpuM, gpu := loadBoth(t, writeModel(t, tc.cfg))
			prompt := make([]int, 240)
			for i := range prompt {
				prompt[i] = (i*37 + 5) % tc.cfg.Vocab
			}
			tol := 1e-4
			if tc.cfg.BF16 {
				tol = 3e-2
			}
			decodeBoth(t, cpuM, gpuM, prompt, 40, tol)
			require.NoError(t, gpu.GraphError(), "decode steps were not replayed as a graph")

			// Every position's logits (ForwardAll) of a fresh sequence.
			want, err := cpuM.ForwardAll(cpuM.NewState(), prompt[:33])
			require.NoError(t, err)
			got, err := gpuM.ForwardAll(gpuM.NewState(), prompt[:33])
			require.NoError(t, err)
			require.LessOrEqual(t, relErr(got.Float32s(), want.Float32s()), tol)
		})
	}
}

// TestGraphReplayEqualsEager: the replayed graph computes bit for bit what the same
// kernels launched one by one compute, and two interleaved sequences keep their own
// graphs and caches.
func TestGraphReplayEqualsEager(t *testing.T) {
	dir := writeModel(t, tinymodel.Config{Hidden: 128, Inter: 256, Layers: 2, Heads: 4, KVHeads: 4, Vocab: 500, BF16: true})
	eager := newGPU(t, cuda.Options{NoGraphs: true})
	graphed := newGPU(t, cuda.Options{})
	em, err := model.Load(dir, model.WithEngine(eager))
	require.NoError(t, err)
	defer em.Close()
	gm, err := model.Load(dir, model.WithEngine(graphed))
	require.NoError(t, err)
	defer gm.Close()
	es := []*model.State{em.NewState(), em.NewState()}
	gs := []*model.State{gm.NewState(), gm.NewState()}
	next := [][]int{{1, 2, 3, 4, 5}, {9, 8, 7}}
	for step := 0; step < 30; step++ {
		for i := range es {
			want, err := em.Forward(es[i], next[i])
			require.NoError(t, err)
			got, err := gm.Forward(gs[i], next[i])
			require.NoError(t, err)
			require.Equalf(t, want.Float32s(), got.Float32s(), "sequence %d step %d", i, step)
			next[i] = []int{(step*31 + i*7) % 500}
		}
	}
	require.NoError(t, graphed.GraphError())
	// bf16 weights, decode (own kernels, exact widening) against the CPU engine.
	cpuM, err := model.Load(dir, model.WithThreads(2))
	require.NoError(t, err)
	defer cpuM.Close()
	decodeBoth(t, cpuM, gm, []int{3}, 20, 1e-4)
}

// TestArgmaxMatchesCPU: the greedy pick on the device (ArgmaxMatVec, and
// Model.ForwardArgmax through recorded and replayed decode graphs whose mask changes
// every step) against the CPU engine's logits: the pick is an allowed token whose CPU
// logit is the allowed maximum up to the engines' rounding; equal rows give the lower
// index; a NaN logit is reported by its index; a mask allowing nothing gives -1.
func TestArgmaxMatchesCPU(t *testing.T) {
	r := newRig(t)
	rnd := rand.New(rand.NewPCG(21, 2))
	const V, H = 1000, 64
	wv := randVals(rnd, V*H, 0.3)
	for i := range H {
		wv[3*H+i] = float32(math.Abs(float64(wv[3*H+i]))) * 4 // row 3 the largest for x = 1
	}
	copy(wv[9*H:10*H], wv[3*H:4*H]) // and row 9 equal to it
	w := r.weight("w", V, H, wv, false)
	ones := make([]float32, H)
	for i := range ones {
		ones[i] = 1
	}
	x := r.act(1, H, ones)
	dst := []int32{0}
	require.NoError(t, r.gpu.ArgmaxMatVec(dst, x.d, w.d, nil))
	require.Equal(t, int32(3), dst[0], "equal maxima: the lower index")
	mask := make([]uint32, (V+31)/32)
	mask[0] = 1<<9 | 1<<5
	require.NoError(t, r.gpu.ArgmaxMatVec(dst, x.d, w.d, mask))
	require.Equal(t, int32(9), dst[0])
	require.NoError(t, r.gpu.ArgmaxMatVec(dst, x.d, w.d, make([]uint32, len(mask))))
	require.Equal(t, int32(-1), dst[0])
	wv[7*H+3] = float32(math.NaN())
	wn := r.weight("wn", V, H, wv, false)
	require.NoError(t, r.gpu.ArgmaxMatVec(dst, x.d, wn.d, mask))
	require.Equal(t, int32(-2-7), dst[0], "a NaN logit, even a masked one, is reported")
	require.ErrorContains(t, r.gpu.ArgmaxMatVec(dst, x.d, w.d, mask[:3]), "mask of 3 words")

	for _, bf16 := range []bool{false, true} {
		cpuM, gpuM, gpu := loadBoth(t, writeModel(t, tinymodel.Config{Hidden: 128, Inter: 256, Layers: 2, Heads: 4, KVHeads: 2, Vocab: 999, BF16: bf16}))
		cs, gs := cpuM.NewState(), gpuM.NewState()
		ids := []int{1, 5, 9, 200, 17}
		words := (999 + 31) / 32
		for step := 0; step < 40; step++ {
			var m []uint32
			if step%2 == 1 {
				m = make([]uint32, words)
				for i := range m {
					m[i] = rnd.Uint32()
				}
				m[words-1] &= 1<<(999%32) - 1
			}
			want, err := cpuM.Forward(cs, ids)
			require.NoError(t, err)
			got, err := gpuM.ForwardArgmax(gs, ids, m)
			require.NoError(t, err)
			row := want.Float32s()
			best, scale := -1, 0.0
			for i, l := range row {
				scale = math.Max(scale, math.Abs(float64(l)))
				if m == nil || m[i/32]>>(i%32)&1 == 1 {
					if best < 0 || l > row[best] {
						best = i
					}
				}
			}
			require.GreaterOrEqual(t, got, 0)
			require.True(t, m == nil || m[got/32]>>(got%32)&1 == 1, "step %d: token %d is not allowed", step, got)
			tol := 1e-5
			if bf16 {
				tol = 3e-2 // the prefill's bf16 products (see TestModelMatchesCPU)
			}
			require.LessOrEqualf(t, float64(row[best]-row[got]), tol*scale, "step %d: picked %d (%g), best %d (%g)", step, got, row[got], best, row[best])
			ids = []int{best}
		}
		require.NoError(t, gpu.GraphError())
	}
}
