package model

func cpuid(leaf, sub uint32) (a, b, c, d uint32)
func xgetbv0() (lo, hi uint32)

//go:noescape
func dotAVX2(a, b *float32, n int) float32

//go:noescape
func dot4AVX2(w *float32, stride int, x *float32, n int, out *float32)

//go:noescape
func pv16AVX2(s *float32, v *float32, stride int, n int, out *float32)

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

// scoresAsm writes out[p] = Σ_i q[i]·k[p*stride+i] for p < len(out), four rows of k
// per kernel call (len(q) a multiple of 16; otherwise dot per row).
func scoresAsm(out, q, k []float32, stride int) {
	hd := len(q)
	n := len(out)
	if n == 0 {
		return
	}
	_ = k[(n-1)*stride+hd-1]
	p := 0
	if hd%16 == 0 {
		var o [4]float32
		for ; p+4 <= n; p += 4 {
			dot4AVX2(&k[p*stride], stride, &q[0], hd, &o[0])
			out[p], out[p+1], out[p+2], out[p+3] = o[0], o[1], o[2], o[3]
		}
	}
	for ; p < n; p++ {
		out[p] = dot(q, k[p*stride:p*stride+hd])
	}
}

// weightedSumAsm writes out[j] = Σ_p s[p]·v[p*stride+j] for j < len(out), 16
// dimensions per kernel call.
func weightedSumAsm(out, s, v []float32, stride int) {
	hd, n := len(out), len(s)
	if n == 0 {
		clear(out)
		return
	}
	_ = v[(n-1)*stride+hd-1]
	j := 0
	for ; j+16 <= hd; j += 16 {
		pv16AVX2(&s[0], &v[j], stride, n, &out[j])
	}
	if j < hd {
		weightedSumGo(out[j:], s, v[j:], stride)
	}
}
