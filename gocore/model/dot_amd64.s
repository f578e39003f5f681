#include "textflag.h"

// func cpuid(leaf, sub uint32) (a, b, c, d uint32)
TEXT ·cpuid(SB), NOSPLIT, $0-24
	MOVL leaf+0(FP), AX
	MOVL sub+4(FP), CX
	CPUID
	MOVL AX, a+8(FP)
	MOVL BX, b+12(FP)
	MOVL CX, c+16(FP)
	MOVL DX, d+20(FP)
	RET

// func xgetbv0() (lo, hi uint32)
TEXT ·xgetbv0(SB), NOSPLIT, $0-8
	MOVL $0, CX
	XGETBV
	MOVL AX, lo+0(FP)
	MOVL DX, hi+4(FP)
	RET

// func dotAVX2(a, b *float32, n int) float32
// Σ_{i<n} a[i]·b[i]; n is a positive multiple of 16.
TEXT ·dotAVX2(SB), NOSPLIT, $0-28
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	SHRQ $4, CX

loop1:
	VMOVUPS (SI), Y2
	VMOVUPS 32(SI), Y3
	VFMADD231PS (DI), Y2, Y0
	VFMADD231PS 32(DI), Y3, Y1
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  loop1

	VADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func dot4AVX2(w *float32, stride int, x *float32, n int, out *float32)
// out[r] = Σ_{i<n} w[r*stride+i]·x[i] for r = 0..3; n is a positive multiple of 16.
TEXT ·dot4AVX2(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), SI
	MOVQ stride+8(FP), BX
	SHLQ $2, BX
	MOVQ x+16(FP), DI
	MOVQ n+24(FP), CX
	MOVQ out+32(FP), DX
	LEAQ (SI)(BX*1), R8
	LEAQ (SI)(BX*2), R9
	LEAQ (R8)(BX*2), R10
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	SHRQ $4, CX

loop4:
	VMOVUPS (DI), Y8
	VMOVUPS 32(DI), Y9
	VFMADD231PS (SI), Y8, Y0
	VFMADD231PS 32(SI), Y9, Y4
	VFMADD231PS (R8), Y8, Y1
	VFMADD231PS 32(R8), Y9, Y5
	VFMADD231PS (R9), Y8, Y2
	VFMADD231PS 32(R9), Y9, Y6
	VFMADD231PS (R10), Y8, Y3
	VFMADD231PS 32(R10), Y9, Y7
	ADDQ $64, DI
	ADDQ $64, SI
	ADDQ $64, R8
	ADDQ $64, R9
	ADDQ $64, R10
	DECQ CX
	JNZ  loop4

	VADDPS Y4, Y0, Y0
	VADDPS Y5, Y1, Y1
	VADDPS Y6, Y2, Y2
	VADDPS Y7, Y3, Y3
	VHADDPS Y1, Y0, Y0
	VHADDPS Y3, Y2, Y2
	VHADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVUPS X0, (DX)
	VZEROUPPER
	RET

// func pv16AVX2(s *float32, v *float32, stride int, n int, out *float32)
// out[j] = Σ_{p<n} s[p]·v[p*stride+j] for j < 16 (attention's weighted sum of values,
// 16 dimensions of a head at a time); n >= 1. Two positions per step into four
// accumulators.
TEXT ·pv16AVX2(SB), NOSPLIT, $0-40
	MOVQ s+0(FP), SI
	MOVQ v+8(FP), DI
	MOVQ stride+16(FP), BX
	SHLQ $2, BX
	MOVQ n+24(FP), CX
	MOVQ out+32(FP), DX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	CMPQ CX, $2
	JLT  pvtail

pvloop2:
	VBROADCASTSS (SI), Y8
	VBROADCASTSS 4(SI), Y9
	VFMADD231PS (DI), Y8, Y0
	VFMADD231PS 32(DI), Y8, Y1
	VFMADD231PS (DI)(BX*1), Y9, Y2
	VFMADD231PS 32(DI)(BX*1), Y9, Y3
	ADDQ $8, SI
	LEAQ (DI)(BX*2), DI
	SUBQ $2, CX
	CMPQ CX, $2
	JGE  pvloop2

pvtail:
	TESTQ CX, CX
	JZ    pvdone
	VBROADCASTSS (SI), Y8
	VFMADD231PS (DI), Y8, Y0
	VFMADD231PS 32(DI), Y8, Y1

pvdone:
	VADDPS Y2, Y0, Y0
	VADDPS Y3, Y1, Y1
	VMOVUPS Y0, (DX)
	VMOVUPS Y1, 32(DX)
	VZEROUPPER
	RET

