package model

func cpuid(leaf, sub uint32) (a, b, c, d uint32)
func xgetbv0() (lo, hi uint32)

//go:noescape
func dot4AVX2(w *float32, stride int, x *float32, n int, out *float32)

//go:noescape
func dotAVX2(a, b *float32, n int) float32

// hasAVX2FMA reports whether the CPU and OS support AVX2 and FMA3 (YMM state enabled).
var hasAVX2FMA = func() bool {
	maxLeaf, _, _, _ := cpuid(0, 0)
	if maxLeaf < 7 {
		return false
	}
	_, _, c1, _ := cpuid(1, 0)
	const fma, osxsave, avx = 1 << 12, 1 << 27, 1 << 28
	if c1&fma == 0 || c1&osxsave == 0 || c1&avx == 0 {
		return false
	}
	if lo, _ := xgetbv0(); lo&6 != 6 { // XMM and YMM state saved by the OS
		return false
	}
	_, b7, _, _ := cpuid(7, 0)
	return b7&(1<<5) != 0 // AVX2
}()

// dot returns Σ a[i]·b[i] over len(a) elements (len(b) >= len(a)).
func dot(a, b []float32) float32 {
	n := len(a)
	b = b[:n]
	var s float32
	m := n &^ 15
	if hasAVX2FMA && m > 0 {
		s = dotAVX2(&a[0], &b[0], m)
	} else {
		m = 0
	}
	return s + dotGo(a[m:], b[m:])
}

// dot4 writes out[r] = Σ_i w[r*stride+i]·x[i] for the four rows r = 0..3 of length
// len(x) starting at w[0].
func dot4(w []float32, stride int, x []float32, out *[4]float32) {
	n := len(x)
	_ = w[3*stride+n-1]
	m := n &^ 15
	if hasAVX2FMA && m > 0 {
		dot4AVX2(&w[0], stride, &x[0], m, &out[0])
	} else {
		m = 0
		*out = [4]float32{}
	}
	if m < n {
		for r := 0; r < 4; r++ {
			out[r] += dotGo(w[r*stride+m:r*stride+n], x[m:])
		}
	}
}

func kernelAVX2() bool { return hasAVX2FMA }

//go:noescape
func dot4x2AVX2(w *float32, stride int, x *float32, xstride int, n int, out *float32)

// dot4x2 writes out[t*4+r] = Σ_i w[r*stride+i]·x[t*xstride+i] for four rows r of w and
// two rows t of x, each of length n.
func dot4x2(w []float32, stride int, x []float32, xstride, n int, out *[8]float32) {
	_ = w[3*stride+n-1]
	_ = x[xstride+n-1]
	m := n &^ 7
	if hasAVX2FMA && m > 0 {
		dot4x2AVX2(&w[0], stride, &x[0], xstride, m, &out[0])
	} else {
		m = 0
		*out = [8]float32{}
	}
	if m < n {
		for t := 0; t < 2; t++ {
			for r := 0; r < 4; r++ {
				out[t*4+r] += dotGo(w[r*stride+m:r*stride+n], x[t*xstride+m:t*xstride+n])
			}
		}
	}
}
