package model

//go:noescape
func gemvB12AVX512(x *float32, w *byte, kp int, c *float32, panels int, psize int)

//go:noescape
func decodeB12AVX512(dst *float32, w *byte, kp int)

//go:noescape
func decodeB12PairsAVX512(dst *uint16, w *byte, kp int)

// hasAVX512VBMI reports whether the CPU and OS support AVX-512 (F, with ZMM and
// opmask state saved by the OS) and AVX512_VBMI (VPERMT2B on bytes).
var hasAVX512VBMI = func() bool {
	if !hasAVX2FMA {
		return false
	}
	if lo, _ := xgetbv0(); lo&0xe6 != 0xe6 { // XMM, YMM, opmask, ZMM_Hi256, Hi16_ZMM
		return false
	}
	_, b7, c7, _ := cpuid(7, 0)
	return b7&(1<<16) != 0 && c7&(1<<1) != 0 // AVX512F, AVX512_VBMI
}()

// b12Kernels sets k's b12 kernels to the AVX-512 assembly where the CPU has it, else
// to the portable Go ones (and the engine keeps bf16 weights in 16-bit panels unless
// asked: WithB12Panels).
func b12Kernels(k *kernels) {
	if !hasAVX512VBMI {
		k.gemvB12, k.decodeB12, k.decodeB12Pairs = gemvB12Go, decodeB12Go, decodeB12PairsGo
		return
	}
	k.b12Native = true
	k.gemvB12 = func(x []float32, w []byte, kk int, c []float32, panels int) {
		size := b12PanelBytes(kk)
		kp := kk / 2
		_ = x[kk-1]
		_ = w[panels*size-1]
		_ = c[panels*panelW-1]
		if kp > 0 {
			gemvB12AVX512(&x[0], &w[0], kp, &c[0], panels, size)
		} else {
			clear(c[:panels*panelW])
		}
		if kk%2 == 1 { // the last column has no partner: add it here
			xv := x[kk-1]
			for p := 0; p < panels; p++ {
				wp := w[p*size:]
				for j := 0; j < panelW; j++ {
					c[p*panelW+j] += xv * bf16Float(b12Bits(wp, kk-1, j))
				}
			}
		}
	}
	k.decodeB12 = func(dst []float32, w []byte, kk int) {
		kp := (kk + 1) / 2
		_ = dst[kp*2*panelW-1]
		_ = w[b12PanelBytes(kk)-1]
		decodeB12AVX512(&dst[0], &w[0], kp)
	}
	k.decodeB12Pairs = func(dst []uint16, w []byte, kk int) {
		kp := (kk + 1) / 2
		_ = dst[kp*2*panelW-1]
		_ = w[b12PanelBytes(kk)-1]
		decodeB12PairsAVX512(&dst[0], &w[0], kp)
	}
}
