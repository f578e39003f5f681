package model

//go:noescape
func quantQ8AVX2(x *float32, q *int8, d *float32, corr *int32, stride int, nb int)

// quantQ8Asm is quantizeQ8Act with the AVX2 kernel over whole blocks.
func quantQ8Asm(q []int8, d []float32, corr []int32, stride int, x []float32) {
	full := len(x) / q8Block
	if full > 0 {
		_ = q[full*q8Block-1]
		_ = d[(full-1)*stride]
		_ = corr[(full-1)*stride]
		quantQ8AVX2(&x[0], &q[0], &d[0], &corr[0], stride, full)
	}
	if len(x) > full*q8Block {
		quantizeQ8Act(q[full*q8Block:], d[full*stride:], corr[full*stride:], stride, x[full*q8Block:])
	}
}

//go:noescape
func gemm6x16Q8VNNI(x *int8, ldx int, xs *float32, xc *int32, w *byte, nb int, c *float32)

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

// q8Kernels sets k's q8 kernels (the matrix-vector product for decode, the six-token
// GEMM for prefill) to the AVX512-VNNI assembly where the CPU has it; elsewhere k keeps
// the portable matrix-vector kernel and prefill widens q8 panels to float32.
func q8Kernels(k *kernels) {
	if !hasAVX512VNNI {
		return
	}
	k.q8name = "avx512-vnni"
	k.gemm6x16Q8 = func(x []int8, ldx int, xs []float32, xc []int32, w []byte, nb int, c *[gemmRows * panelW]float32) {
		_ = x[5*ldx+nb*q8Block-1]
		_ = xs[nb*gemmRows-1]
		_ = xc[nb*gemmRows-1]
		_ = w[nb*q8BlockBytes-1]
		gemm6x16Q8VNNI(&x[0], ldx, &xs[0], &xc[0], &w[0], nb, &c[0])
	}
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
