package model_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tetherlm/tether/gocore/model"
)

// BenchmarkMatVecStream is one lm_head-sized product (49152×576, SmolLM-135M's tied
// embedding: 113 MB in f32, far larger than the caches), with 1 and 2 workers: the
// rate at which the decode kernel streams weights from memory (GB/s via SetBytes: the
// bytes of the weights as stored, so packed panels read fewer for the same product),
// for f32 and bf16 weights unpacked and in packed panels (WithPackedPanels), and 8-bit
// weights (WithInt8Products).
func BenchmarkMatVecStream(b *testing.B) {
	const rows, cols = 49152, 576
	r := rand.New(rand.NewPCG(1, 2))
	for _, dtype := range []string{"f32", "f32-packed", "bf16", "bf16-packed", "int8"} {
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/threads=%d", dtype, threads), func(b *testing.B) {
				opts := []model.CPUOption{model.WithPackedPanels(strings.HasSuffix(dtype, "-packed"))}
				if dtype == "int8" {
					opts = append(opts, model.WithInt8Products())
				}
				e := model.NewCPU(threads, opts...)
				defer e.Close()
				v := randSlice(r, rows*cols)
				var t *tensor.Dense
				size := 4
				if strings.HasPrefix(dtype, "bf16") {
					bits, _ := bf16Round(v)
					t = tensor.New(tensor.WithShape(rows, cols), tensor.WithBacking(bits))
					size = 2
				} else {
					t = tensor.New(tensor.WithShape(rows, cols), tensor.WithBacking(v))
				}
				w, err := e.Upload("w", t)
				if err != nil {
					b.Fatal(err)
				}
				x := tensor.New(tensor.WithShape(cols), tensor.WithBacking(randSlice(r, cols)))
				dst := tensor.New(tensor.WithShape(rows), tensor.WithBacking(make([]float32, rows)))
				switch dtype {
				case "int8":
					size = 0 // 34 bytes per 32 weights
					b.SetBytes(int64(rows * cols / 32 * 34))
				case "f32-packed", "bf16-packed": // 16 + 32·low bytes per 32 weights, and a table per panel
					low := map[string]int{"f32-packed": 3, "bf16-packed": 1}[dtype]
					b.SetBytes(int64(rows / 16 * (16 + cols/2*(16+32*low))))
				default:
					b.SetBytes(int64(rows * cols * size))
				}
				for b.Loop() {
					if err := e.MatVec(dst, x, w); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
