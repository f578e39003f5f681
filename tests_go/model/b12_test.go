package model_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"

	"github.com/tetherlm/tether/gocore/model"
)

// b12Matrix returns a [rows, cols] bf16 matrix of the given kind: "normal" (a trained
// layer's spread), "outliers" (normal with zeros, -0, subnormals, huge and tiny values,
// ±Inf and NaN, one weight in 89: most of them are weights b12 keeps outside its
// tables), "constant", "crowded" (15 equally frequent high bytes and the same
// outliers: each of them an exception), and "spread" (magnitudes over 2^±60, too many
// outliers for b12: the matrix stays in 16-bit panels).
func b12Matrix(r *rand.Rand, kind string, rows, cols int) []uint16 {
	bits := make([]uint16, rows*cols)
	for i := range bits {
		v := float32(r.NormFloat64() * 0.02)
		switch kind {
		case "crowded": // 15 high bytes, equally frequent, fill the table: every special is an exception
			hi := []uint32{0x38, 0x39, 0x3a, 0x3b, 0x3c, 0x3d, 0x3e, 0x3f, 0xb8, 0xb9, 0xba, 0xbb, 0xbc, 0xbd, 0xbe}[i%15]
			v = math.Float32frombits(hi<<24 | uint32(r.IntN(1<<24)))
			fallthrough
		case "outliers":
			if i%89 == 44 {
				switch i / 89 % 7 {
				case 0:
					v = float32(math.Copysign(0, -1))
				case 1:
					v = math.Float32frombits(uint32(r.IntN(1 << 22))) // subnormal
				case 2:
					v = float32(r.NormFloat64() * 1e30)
				case 3:
					v = float32(r.NormFloat64() * 1e-30)
				case 4:
					v = float32(math.Inf(1 - 2*r.IntN(2)))
				case 5:
					v = float32(math.NaN())
				case 6:
					v = 0
				}
			}
		case "constant":
			v = 0.25
		case "spread":
			v = float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(120)-60)))
		}
		bits[i] = uint16(math.Float32bits(v) >> 16)
	}
	return bits
}

func sameBits(t *testing.T, want, got []float32, msg string) {
	t.Helper()
	for i := range want {
		if math.Float32bits(want[i]) != math.Float32bits(got[i]) {
			require.Failf(t, "values differ", "%s: element %d: want %v (%08x), got %v (%08x)", msg, i, want[i], math.Float32bits(want[i]), got[i], math.Float32bits(got[i]))
		}
	}
}

// b12 panels hold bf16 weights exactly: rows read back bit for bit, prefill products
// (exact and bf16 math) equal those of 16-bit panels bit for bit (the same values into
// the same GEMM), and decode products match a float64 reference, on the assembly
// (where the CPU has AVX512_VBMI) and on the portable kernels.
func TestB12PanelsKeepBF16Exactly(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 12))
	if e := model.NewCPU(1); !strings.Contains(e.Name(), "b12") {
		t.Logf("this CPU has no AVX512_VBMI: %s keeps 16-bit panels by default; only the portable b12 kernels are checked", e.Name())
	}
	type eng struct{ b12, plain *model.CPU }
	kernelSets := map[string][]model.CPUOption{"default": nil, "portable": {model.WithPortableKernels()}}
	for _, tc := range []struct {
		kind       string
		rows, cols int
	}{
		{"normal", 1, 2}, {"normal", 16, 1}, {"normal", 17, 5}, {"normal", 40, 33}, {"normal", 48, 576},
		{"outliers", 33, 64}, {"outliers", 64, 31}, {"outliers", 5, 200}, {"outliers", 64, 576}, {"crowded", 48, 100},
		{"constant", 20, 18}, {"spread", 32, 64},
	} {
		bits := b12Matrix(r, tc.kind, tc.rows, tc.cols)
		wv := make([]float32, len(bits))
		for i, b := range bits {
			wv[i] = model.BF16ToFloat32(b)
		}
		finite := tc.kind != "outliers" && tc.kind != "crowded"
		for set, base := range kernelSets {
			for _, math16 := range []bool{false, true} {
				opts := append([]model.CPUOption(nil), base...)
				if math16 {
					opts = append(opts, model.WithBF16Products())
				}
				e := eng{model.NewCPU(2, append(opts, model.WithB12Panels(true))...), model.NewCPU(2, append(opts, model.WithB12Panels(false))...)}
				msg := fmt.Sprintf("%s %dx%d, %s kernels, bf16 math %v", tc.kind, tc.rows, tc.cols, set, math16)
				require.Contains(t, e.b12.Name(), "b12", msg)
				require.NotContains(t, e.plain.Name(), "b12", msg)
				wb, err := e.b12.Upload("w", tensor.New(tensor.WithShape(tc.rows, tc.cols), tensor.WithBacking(bits)))
				require.NoError(t, err)
				wp, err := e.plain.Upload("w", tensor.New(tensor.WithShape(tc.rows, tc.cols), tensor.WithBacking(bits)))
				require.NoError(t, err)
				format, err := e.b12.WeightFormat(wb)
				require.NoError(t, err)
				switch {
				case tc.rows == 1: // norms and biases: kept as a vector too
					assert.Equal(t, "vector", format, msg)
				case tc.kind == "spread":
					assert.Contains(t, []string{"bf16", "bf16 pairs"}, format, msg)
				case tc.kind == "outliers" || tc.kind == "crowded":
					assert.Regexp(t, `^b12 \([1-9][0-9]* exceptions\)$`, format, msg)
				default: // a normal matrix has a few exceptions too: its tiniest weights
					assert.Regexp(t, `^b12 \([0-9]+ exceptions\)$`, format, msg)
				}
				if format, err = e.plain.WeightFormat(wp); assert.NoError(t, err) {
					assert.NotContains(t, format, "b12", msg)
				}

				ids := make([]int, tc.rows)
				for i := range ids {
					ids[i] = tc.rows - 1 - i
				}
				got := dense(tc.rows, tc.cols, make([]float32, tc.rows*tc.cols))
				require.NoError(t, e.b12.Rows(got, wb, ids, 1))
				want := make([]float32, 0, len(wv))
				for _, id := range ids {
					want = append(want, wv[id*tc.cols:(id+1)*tc.cols]...)
				}
				sameBits(t, want, got.Float32s(), "rows, "+msg)

				n := 7
				x := randSlice(r, n*tc.cols)
				pb := dense(n, tc.rows, make([]float32, n*tc.rows))
				pp := dense(n, tc.rows, make([]float32, n*tc.rows))
				require.NoError(t, e.b12.MatMul(pb, dense(n, tc.cols, x), wb))
				require.NoError(t, e.plain.MatMul(pp, dense(n, tc.cols, x), wp))
				sameBits(t, pp.Float32s(), pb.Float32s(), "prefill, "+msg)

				xv := x[:tc.cols]
				dv := tensor.New(tensor.WithShape(tc.rows), tensor.WithBacking(make([]float32, tc.rows)))
				require.NoError(t, e.b12.MatVec(dv, tensor.New(tensor.WithShape(tc.cols), tensor.WithBacking(xv)), wb))
				ref := naiveProduct(xv, wv, 1, tc.rows, tc.cols)
				for o, g := range dv.Float32s() {
					w := ref[o]
					switch {
					case math.IsNaN(w):
						assert.True(t, math.IsNaN(float64(g)), "decode row %d: want NaN, got %v, %s", o, g, msg)
					case math.IsInf(w, 0) || finite:
						assert.InDelta(t, w, float64(g), 1e-5*(1+math.Abs(w)), "decode row %d, %s", o, msg)
					default: // huge weights: float32 sums in another order
						assert.InEpsilon(t, w, float64(g), 1e-4, "decode row %d, %s", o, msg)
					}
				}
				e.b12.Close()
				e.plain.Close()
			}
		}
	}
}

// The fused decode products (gate and up, several matrices in one pass) read b12
// panels as they read 16-bit ones: a tiny Llama's greedy decode and its logits agree.
func TestB12CheckpointDecodesAsBF16(t *testing.T) {
	cfg := tinyConfig{Arch: "LlamaForCausalLM", Hidden: 64, Inter: 96, Layers: 2, Heads: 4, KVHeads: 2, Vocab: 80, Tie: true}
	var bf []stTensor
	for _, ts := range tensorsFor(cfg, 4) {
		v := make([]float32, len(ts.raw)/4)
		for i := range v {
			v[i] = math.Float32frombits(uint32(ts.raw[4*i]) | uint32(ts.raw[4*i+1])<<8 | uint32(ts.raw[4*i+2])<<16 | uint32(ts.raw[4*i+3])<<24)
		}
		bits, _ := bf16Round(v)
		bf = append(bf, stTensor{ts.name, "BF16", ts.shape, u16Bytes(bits...)})
	}
	dir := writeModel(t, cfg, bf, nil)
	run := func(e *model.CPU) []float64 {
		m, err := model.Load(dir, model.WithEngine(e))
		require.NoError(t, err)
		defer m.Close()
		st := m.NewState()
		_, err = m.Forward(st, []int{3, 14, 15, 9, 2, 6})
		require.NoError(t, err)
		var out []float64
		for i := 0; i < 12; i++ {
			l, err := m.Forward(st, []int{(7 * i) % cfg.Vocab})
			require.NoError(t, err)
			out = append(out, f64(l.Float32s())...)
		}
		return out
	}
	for name, opts := range map[string][]model.CPUOption{"default": nil, "portable": {model.WithPortableKernels()}} {
		want := run(model.NewCPU(2, append(opts, model.WithB12Panels(false))...))
		got := run(model.NewCPU(2, append(opts, model.WithB12Panels(true))...))
		assert.InDeltaSlice(t, want, got, 1e-4, "%s kernels", name)
	}
}
