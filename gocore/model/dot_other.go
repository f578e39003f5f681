//go:build !amd64

package model

// dot returns Σ a[i]·b[i] over len(a) elements (len(b) >= len(a)).
func dot(a, b []float32) float32 { return dotGo(a, b[:len(a)]) }

// dot4 writes out[r] = Σ_i w[r*stride+i]·x[i] for the four rows r = 0..3 of length
// len(x) starting at w[0].
func dot4(w []float32, stride int, x []float32, out *[4]float32) {
	n := len(x)
	for r := 0; r < 4; r++ {
		out[r] = dotGo(w[r*stride:r*stride+n], x)
	}
}

func kernelAVX2() bool { return false }

// dot4x2 writes out[t*4+r] = Σ_i w[r*stride+i]·x[t*xstride+i] for four rows r of w and
// two rows t of x, each of length n.
func dot4x2(w []float32, stride int, x []float32, xstride, n int, out *[8]float32) {
	for t := 0; t < 2; t++ {
		for r := 0; r < 4; r++ {
			out[t*4+r] = dotGo(w[r*stride:r*stride+n], x[t*xstride:t*xstride+n])
		}
	}
}
