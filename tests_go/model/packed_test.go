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

// packedMatrix returns a [rows, cols] matrix of the given kind: "normal" (a trained
// layer's spread), "outliers" (normal with zeros, -0, subnormals, huge and tiny values,
// ±Inf and NaN, one weight in 89: most of them are weights packed panels keep outside
// their tables), "constant", "crowded" (15 equally frequent top bytes and the same
// outliers: each of them an exception), and "spread" (magnitudes over 2^±60, too many
// outliers: the matrix stays unpacked).
func packedMatrix(r *rand.Rand, kind string, rows, cols int) []float32 {
	w := make([]float32, rows*cols)
	for i := range w {
		v := float32(r.NormFloat64() * 0.02)
		switch kind {
		case "crowded":
			top := []uint32{0x38, 0x39, 0x3a, 0x3b, 0x3c, 0x3d, 0x3e, 0x3f, 0xb8, 0xb9, 0xba, 0xbb, 0xbc, 0xbd, 0xbe}[i%15]
			v = math.Float32frombits(top<<24 | uint32(r.IntN(1<<24)))
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
		w[i] = v
	}
	return w
}

func sameBits(t *testing.T, want, got []float32, msg string) {
	t.Helper()
	for i := range want {
		if math.Float32bits(want[i]) != math.Float32bits(got[i]) {
			require.Failf(t, "values differ", "%s: element %d: want %v (%08x), got %v (%08x)", msg, i, want[i], math.Float32bits(want[i]), got[i], math.Float32bits(got[i]))
		}
	}
}

// Packed panels hold weights exactly (b12 for bf16, b28 for float32): rows read back
// bit for bit, prefill products (and for bf16 those with bf16 math) equal those of
// unpacked panels bit for bit (the same values into the same GEMM), and decode
// products match a float64 reference, on the assembly (where the CPU has AVX512_VBMI)
// and on the portable kernels.
func TestPackedPanelsKeepWeightsExactly(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 12))
	if e := model.NewCPU(1); !strings.Contains(e.Name(), "packed") {
		t.Logf("this CPU has no AVX512_VBMI: %s keeps weights unpacked by default; only the portable packed kernels are checked", e.Name())
	}
	kernelSets := map[string][]model.CPUOption{"default": nil, "portable": {model.WithPortableKernels()}}
	for _, tc := range []struct {
		kind       string
		rows, cols int
	}{
		{"normal", 1, 2}, {"normal", 16, 1}, {"normal", 17, 5}, {"normal", 40, 33}, {"normal", 48, 576},
		{"outliers", 33, 64}, {"outliers", 64, 31}, {"outliers", 5, 200}, {"outliers", 64, 576}, {"crowded", 48, 100},
		{"constant", 20, 18}, {"spread", 32, 64},
	} {
		values := packedMatrix(r, tc.kind, tc.rows, tc.cols)
		for _, dtype := range []string{"bf16", "f32"} {
			var backing any = values
			wv, format := values, "b28"
			if dtype == "bf16" {
				var bits []uint16
				bits, wv = bf16Round(values)
				backing, format = bits, "b12"
			}
			finite := tc.kind != "outliers" && tc.kind != "crowded"
			for set, base := range kernelSets {
				for _, math16 := range []bool{false, true} {
					if math16 && dtype == "f32" {
						continue
					}
					opts := append([]model.CPUOption(nil), base...)
					if math16 {
						opts = append(opts, model.WithBF16Products())
					}
					packed := model.NewCPU(2, append(opts, model.WithPackedPanels(true))...)
					plain := model.NewCPU(2, append(opts, model.WithPackedPanels(false))...)
					msg := fmt.Sprintf("%s %s %dx%d, %s kernels, bf16 math %v", dtype, tc.kind, tc.rows, tc.cols, set, math16)
					require.Contains(t, packed.Name(), "packed panels", msg)
					require.NotContains(t, plain.Name(), "packed", msg)
					wk, err := packed.Upload("w", tensor.New(tensor.WithShape(tc.rows, tc.cols), tensor.WithBacking(backing)))
					require.NoError(t, err)
					wp, err := plain.Upload("w", tensor.New(tensor.WithShape(tc.rows, tc.cols), tensor.WithBacking(backing)))
					require.NoError(t, err)
					got, err := packed.WeightFormat(wk)
					require.NoError(t, err)
					switch {
					case tc.rows == 1: // norms and biases: kept as a vector too
						assert.Equal(t, "vector", got, msg)
					case tc.kind == "spread":
						assert.Contains(t, []string{"bf16", "bf16 pairs", "f32"}, got, msg)
					case tc.kind == "crowded": // the table is full: every outlier is an exception
						assert.Regexp(t, `^`+format+` \([1-9][0-9]* exceptions\)$`, got, msg)
					default: // outliers may find room in a table; a normal matrix's tiniest weights may not
						assert.Regexp(t, `^`+format+` \([0-9]+ exceptions\)$`, got, msg)
					}
					if got, err = plain.WeightFormat(wp); assert.NoError(t, err) {
						assert.NotRegexp(t, `^b[0-9]`, got, msg)
					}

					ids := make([]int, tc.rows)
					for i := range ids {
						ids[i] = tc.rows - 1 - i
					}
					rows := dense(tc.rows, tc.cols, make([]float32, tc.rows*tc.cols))
					require.NoError(t, packed.Rows(rows, wk, ids, 1))
					want := make([]float32, 0, len(wv))
					for _, id := range ids {
						want = append(want, wv[id*tc.cols:(id+1)*tc.cols]...)
					}
					sameBits(t, want, rows.Float32s(), "rows, "+msg)

					n := 7
					x := randSlice(r, n*tc.cols)
					pk := dense(n, tc.rows, make([]float32, n*tc.rows))
					pp := dense(n, tc.rows, make([]float32, n*tc.rows))
					require.NoError(t, packed.MatMul(pk, dense(n, tc.cols, x), wk))
					require.NoError(t, plain.MatMul(pp, dense(n, tc.cols, x), wp))
					sameBits(t, pp.Float32s(), pk.Float32s(), "prefill, "+msg)

					xv := x[:tc.cols]
					dv := tensor.New(tensor.WithShape(tc.rows), tensor.WithBacking(make([]float32, tc.rows)))
					require.NoError(t, packed.MatVec(dv, tensor.New(tensor.WithShape(tc.cols), tensor.WithBacking(xv)), wk))
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
					packed.Close()
					plain.Close()
				}
			}
		}
	}
}

// The fused decode products (gate and up, several matrices in one pass) read packed
// panels as they read unpacked ones: a tiny Llama's decode logits agree, from a bf16
// and from an f32 checkpoint.
func TestPackedCheckpointDecodesAsUnpacked(t *testing.T) {
	cfg := tinyConfig{Arch: "LlamaForCausalLM", Hidden: 64, Inter: 96, Layers: 2, Heads: 4, KVHeads: 2, Vocab: 80, Tie: true}
	f32 := tensorsFor(cfg, 4)
	bf, _ := toBF16Tensors(f32)
	for dtype, tensors := range map[string][]stTensor{"bf16": bf, "f32": f32} {
		dir := writeModel(t, cfg, tensors, nil)
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
			want := run(model.NewCPU(2, append(opts, model.WithPackedPanels(false))...))
			got := run(model.NewCPU(2, append(opts, model.WithPackedPanels(true))...))
			assert.InDeltaSlice(t, want, got, 1e-4, "%s checkpoint, %s kernels", dtype, name)
		}
	}
}
