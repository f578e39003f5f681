package model

import "unsafe"

//go:noescape
func gemm6x16AVX2(x *float32, ldx int, w *float32, k int, c *float32)

//go:noescape
func gemvF32AVX2(x, w *float32, k int, c *float32, panels int)

//go:noescape
func gemvBF16AVX2(x *float32, w *uint16, k int, c *float32, panels int)

//go:noescape
func widenBF16AVX2(dst *float32, src *uint16, n int)

// asmKernels returns the AVX2/FMA kernels when the CPU and OS support them.
func asmKernels() (kernels, bool) {
	if !hasAVX2FMA {
		return kernels{}, false
	}
	k := kernels{
		name: "avx2+fma",
		gemm6x16: func(x []float32, ldx int, w []float32, k int, c *[6 * panelW]float32) {
			_ = x[5*ldx+k-1]
			_ = w[k*panelW-1]
			gemm6x16AVX2(&x[0], ldx, &w[0], k, &c[0])
		},
		gemvF32: func(x, w []float32, k int, c []float32, panels int) {
			_ = x[k-1]
			_ = w[panels*k*panelW-1]
			_ = c[panels*panelW-1]
			gemvF32AVX2(&x[0], &w[0], k, &c[0], panels)
		},
		gemvBF16: func(x []float32, w []uint16, k int, c []float32, panels int) {
			_ = x[k-1]
			_ = w[panels*k*panelW-1]
			_ = c[panels*panelW-1]
			gemvBF16AVX2(&x[0], &w[0], k, &c[0], panels)
		},
		widenBF16: func(dst []float32, src []uint16) {
			inBlocks16(dst, src, widenBF16AVX2, widenBF16Go)
		},
		exp:         expAsm,
		expSum:      expSumAsm,
		siluMul:     siluMulAsm,
		axpy:        axpyAsm,
		scores:      scoresAsm,
		weightedSum: weightedSumAsm,
		gemvQ8:      gemvQ8Go,
		q8name:      "go",
		dequantQ8:   dequantQ8Panel,
		quantQ8:     quantQ8Asm,
	}
	bf16Kernels(&k)
	q8Kernels(&k)
	packedKernels(&k)
	return k, true
}

// inBlocks16 converts src into dst (len(dst) >= len(src)): vec, a kernel that
// takes whole blocks of 16, over the first len(src)&^15 elements, and tail over
// the rest.
func inBlocks16[D, S any](dst []D, src []S, vec func(dst *D, src *S, n int), tail func(dst []D, src []S)) {
	n := len(src)
	dst = dst[:n]
	m := n &^ 15
	if m > 0 {
		vec(unsafe.SliceData(dst), unsafe.SliceData(src), m)
	}
	tail(dst[m:], src[m:])
}
