package model

import "math"

//go:generate python3 packed_amd64_gen.py

//go:noescape
func gemvB12AVX512(x *float32, w *byte, kp int, c *float32, panels int, psize int)

//go:noescape
func decodeB12AVX512(dst *float32, w *byte, kp int)

//go:noescape
func decodeB12PairsAVX512(dst *uint16, w *byte, kp int)

//go:noescape
func gemvB28AVX512(x *float32, w *byte, kp int, c *float32, panels int, psize int)

//go:noescape
func decodeB28AVX512(dst *float32, w *byte, kp int)

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

// packedKernels sets k's packed-panel kernels to the AVX-512 assembly where the CPU
// has it, else to the portable Go ones (and the engine keeps weights unpacked unless
// asked: WithPackedPanels).
func packedKernels(k *kernels) {
	if !hasAVX512VBMI {
		k.gemvPacked, k.decodePacked, k.decodeB12Pairs = gemvPackedGo, decodePackedGo, decodeB12PairsGo
		return
	}
	k.packedNative = true
	k.gemvPacked = func(x []float32, w []byte, kk, low int, c []float32, panels int) {
		size := packedPanelBytes(kk, low)
		kp := kk / 2
		_ = x[kk-1]
		_ = w[:panels*size+packedPad] // the b28 loads read into the padding
		_ = c[panels*panelW-1]
		switch {
		case kp == 0:
			clear(c[:panels*panelW])
		case low == 1:
			gemvB12AVX512(&x[0], &w[0], kp, &c[0], panels, size)
		default:
			gemvB28AVX512(&x[0], &w[0], kp, &c[0], panels, size)
		}
		if kk%2 == 1 { // the last column has no partner: add it here
			xv := x[kk-1]
			for p := 0; p < panels; p++ {
				wp := w[p*size:]
				for j := 0; j < panelW; j++ {
					c[p*panelW+j] += xv * math.Float32frombits(packedBits(wp, low, kk-1, j))
				}
			}
		}
	}
	k.decodePacked = func(dst []float32, w []byte, kk, low int) {
		kp := (kk + 1) / 2
		_ = dst[kp*2*panelW-1]
		_ = w[:packedPanelBytes(kk, low)+packedPad]
		if low == 1 {
			decodeB12AVX512(&dst[0], &w[0], kp)
		} else {
			decodeB28AVX512(&dst[0], &w[0], kp)
		}
	}
	k.decodeB12Pairs = func(dst []uint16, w []byte, kk int) {
		kp := (kk + 1) / 2
		_ = dst[kp*2*panelW-1]
		_ = w[packedPanelBytes(kk, 1)-1]
		decodeB12PairsAVX512(&dst[0], &w[0], kp)
	}
}
