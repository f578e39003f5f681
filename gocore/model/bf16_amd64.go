package model

//go:generate python3 bf16_amd64_gen.py

//go:noescape
func gemm6x16BF16AVX512(x *uint16, ldx int, w *uint16, kp int, c *float32)

//go:noescape
func toBF16AVX512(dst *uint16, src *float32, n int)

//go:noescape
func gemvPairsAVX512(x *float32, w *uint16, kp int, c *float32)

// hasAVX512BF16 reports whether the CPU and OS support AVX-512 (F, with ZMM and opmask
// state saved by the OS) and its BF16 extension (VDPBF16PS, VCVTNEPS2BF16).
var hasAVX512BF16 = func() bool {
	if !hasAVX2FMA {
		return false
	}
	if lo, _ := xgetbv0(); lo&0xe6 != 0xe6 { // XMM, YMM, opmask, ZMM_Hi256, Hi16_ZMM
		return false
	}
	maxLeaf, _, _, _ := cpuid(0, 0)
	if maxLeaf < 7 {
		return false
	}
	_, b7, _, _ := cpuid(7, 0)
	if b7&(1<<16) == 0 { // AVX512F
		return false
	}
	a71, _, _, _ := cpuid(7, 1)
	return a71&(1<<5) != 0 // AVX512_BF16
}()

// bf16Kernels sets k's bf16-math kernels to the AVX512-BF16 assembly where the CPU has
// it, else leaves them nil (WithBF16Products then has no effect).
func bf16Kernels(k *kernels) {
	if !hasAVX512BF16 {
		k.gemm6x16BF16, k.toBF16, k.gemvPairs = nil, nil, nil
		return
	}
	k.gemvPairs = func(x []float32, w []uint16, k int, c []float32) {
		kp := k / 2
		_ = x[k-1]
		_ = w[pairPanelSize(k)-1]
		_ = c[panelW-1]
		if kp == 0 {
			clear(c[:panelW])
		} else {
			gemvPairsAVX512(&x[0], &w[0], kp, &c[0])
		}
		if k%2 == 1 { // the last input has no partner: its weights are the pair's first halves
			xv, wl := x[k-1], w[kp*2*panelW:]
			for j := 0; j < panelW; j++ {
				c[j] += xv * bf16Float(wl[2*j])
			}
		}
	}
	k.gemm6x16BF16 = func(x []uint16, ldx int, w []uint16, kp int, c *[gemmRows * panelW]float32) {
		_ = x[5*ldx+2*kp-1]
		_ = w[kp*2*panelW-1]
		gemm6x16BF16AVX512(&x[0], ldx/2, &w[0], kp, &c[0])
	}
	k.toBF16 = func(dst []uint16, src []float32) {
		inBlocks16(dst, src, toBF16AVX512, toBF16Go)
	}

}
