package model

//go:noescape
func dequantQ8AVX2(dst *float32, w *byte, nb int)

//go:noescape
func gemvQ8VNNI(x *int8, xd *float32, xc *int32, w *byte, nb int, c *float32, panels int)

// hasAVX512VNNI reports whether the CPU and OS support AVX-512 (F and VL, with ZMM and
// opmask state saved by the OS) and its VNNI extension (VPDPBUSD), which the q8
// kernel uses on 256-bit registers.
var hasAVX512VNNI = func() bool {
	if !hasAVX2FMA {
		return false
	}
	if lo, _ := xgetbv0(); lo&0xe6 != 0xe6 { // XMM, YMM, opmask, ZMM_Hi256, Hi16_ZMM
		return false
	}
	_, _, c1, _ := cpuid(1, 0)
	if c1&(1<<29) == 0 { // F16C (VCVTPH2PS)
		return false
	}
	_, b7, c7, _ := cpuid(7, 0)
	const avx512f, avx512vl, vnni = 1 << 16, 1 << 31, 1 << 11
	return b7&avx512f != 0 && b7&avx512vl != 0 && c7&vnni != 0
}()

// hasF16C reports whether the CPU has F16C (VCVTPH2PS) besides AVX2/FMA.
var hasF16C = func() bool {
	_, _, c1, _ := cpuid(1, 0)
	return hasAVX2FMA && c1&(1<<29) != 0
}()

// q8Kernels sets k's q8 kernels to assembly where the CPU has what they need: the
// widening for prefill with AVX2/FMA/F16C, the matrix-vector product with AVX512-VNNI
// (else k keeps the portable ones).
func q8Kernels(k *kernels) {
	if hasF16C {
		k.dequantQ8 = func(dst []float32, w []byte, cols int) {
			full := cols / q8Block
			if full > 0 {
				_ = dst[full*q8Block*panelW-1]
				_ = w[full*q8BlockBytes-1]
				dequantQ8AVX2(&dst[0], &w[0], full)
			}
			if cols > full*q8Block { // the last, partial block
				dequantQ8Tail(dst, w, full, cols)
			}
		}
	}
	if !hasAVX512VNNI {
		return
	}
	k.q8name = "avx512-vnni"
	k.gemvQ8 = func(x *q8Input, w []byte, c []float32, panels int) {
		nb := len(x.d)
		if nb == 0 || panels == 0 {
			clear(c[:panels*panelW])
			return
		}
		_ = x.q[nb*q8Block-1]
		_ = x.corr[nb-1]
		_ = w[panels*nb*q8BlockBytes-1]
		_ = c[panels*panelW-1]
		gemvQ8VNNI(&x.q[0], &x.d[0], &x.corr[0], &w[0], nb, &c[0], panels)
	}
}
