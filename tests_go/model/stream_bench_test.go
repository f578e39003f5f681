package model_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tetherlm/tether/gocore/model"
)

// BenchmarkMatVecStream is one lm_head-sized product (49152×576, SmolLM-135M's tied
// embedding: 113 MB in f32, far larger than the caches), with 1 and 2 workers: the
// rate at which the decode kernel streams weights from memory (GB/s via SetBytes),
// for f32, bf16 and 8-bit weights (WithInt8Products).
func BenchmarkMatVecStream(b *testing.B) {
	const rows, cols = 49152, 576
	r := rand.New(rand.NewPCG(1, 2))
	for _, dtype := range []string{"f32", "bf16", "int8"} {
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/threads=%d", dtype, threads), func(b *testing.B) {
				var opts []model.CPUOption
				if dtype == "int8" {
					opts = append(opts, model.WithInt8Products())
				}
				e := model.NewCPU(threads, opts...)
				defer e.Close()
				v := randSlice(r, rows*cols)
				var t *tensor.Dense
				size := 4
				if dtype == "bf16" {
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
				if dtype == "int8" {
					size = 0 // 34 bytes per 32 weights
					b.SetBytes(int64(rows * cols / 32 * 34))
				} else {
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
