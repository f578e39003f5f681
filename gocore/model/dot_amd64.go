package model

func cpuid(leaf, sub uint32) (a, b, c, d uint32)
func xgetbv0() (lo, hi uint32)

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
