#include "textflag.h"

// Kernels on packed weights: a panel holds 16 consecutive output rows of a weight
// matrix transposed, [k][16] (bf16: the same layout with uint16 elements), so that one
// step over k reads 64 contiguous bytes of weights (32 for bf16) and multiplies them
// by one broadcast input element. No horizontal sums are needed.

// func gemm6x16AVX2(x *float32, ldx int, w *float32, k int, c *float32)
// c[t*16+j] = Σ_{i<k} x[t*ldx+i]·w[i*16+j] for t = 0..5, j = 0..15; k >= 1.
// Twelve accumulators (Y0..Y11); per step two weight loads, six broadcasts, twelve
// FMAs, so the FMA units, not the loads, set the pace.
TEXT ·gemm6x16AVX2(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ ldx+8(FP), R8
	SHLQ $2, R8
	MOVQ w+16(FP), BX
	MOVQ k+24(FP), CX
	MOVQ c+32(FP), DX
	LEAQ (SI)(R8*2), DI
	ADDQ R8, DI             // DI = x + 3 rows
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11

gemm6loop:
	VMOVUPS (BX), Y12
	VMOVUPS 32(BX), Y13
	VBROADCASTSS (SI), Y14
	VBROADCASTSS (SI)(R8*1), Y15
	VFMADD231PS Y12, Y14, Y0
	VFMADD231PS Y13, Y14, Y1
	VFMADD231PS Y12, Y15, Y2
	VFMADD231PS Y13, Y15, Y3
	VBROADCASTSS (SI)(R8*2), Y14
	VBROADCASTSS (DI), Y15
	VFMADD231PS Y12, Y14, Y4
	VFMADD231PS Y13, Y14, Y5
	VFMADD231PS Y12, Y15, Y6
	VFMADD231PS Y13, Y15, Y7
	VBROADCASTSS (DI)(R8*1), Y14
	VBROADCASTSS (DI)(R8*2), Y15
	VFMADD231PS Y12, Y14, Y8
	VFMADD231PS Y13, Y14, Y9
	VFMADD231PS Y12, Y15, Y10
	VFMADD231PS Y13, Y15, Y11
	ADDQ $4, SI
	ADDQ $4, DI
	ADDQ $64, BX
	DECQ CX
	JNZ  gemm6loop

	VMOVUPS Y0, (DX)
	VMOVUPS Y1, 32(DX)
	VMOVUPS Y2, 64(DX)
	VMOVUPS Y3, 96(DX)
	VMOVUPS Y4, 128(DX)
	VMOVUPS Y5, 160(DX)
	VMOVUPS Y6, 192(DX)
	VMOVUPS Y7, 224(DX)
	VMOVUPS Y8, 256(DX)
	VMOVUPS Y9, 288(DX)
	VMOVUPS Y10, 320(DX)
	VMOVUPS Y11, 352(DX)
	VZEROUPPER
	RET

// func gemvF32AVX2(x *float32, w *float32, k int, c *float32, panels int)
// For each of panels consecutive panels p (each k*16 floats): c[p*16+j] =
// Σ_{i<k} x[i]·w[p*k*16+i*16+j]. Four steps of k per iteration into eight
// accumulators, so FMA latency never stalls the stream of weights.
TEXT ·gemvF32AVX2(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), R9
	MOVQ w+8(FP), BX
	MOVQ k+16(FP), R10
	MOVQ c+24(FP), DX
	MOVQ panels+32(FP), R11

gemvpanel:
	MOVQ R9, SI
	MOVQ R10, CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	CMPQ CX, $4
	JLT  gemvtail

gemvloop4:
	VBROADCASTSS (SI), Y8
	VBROADCASTSS 4(SI), Y9
	VBROADCASTSS 8(SI), Y10
	VBROADCASTSS 12(SI), Y11
	VFMADD231PS (BX), Y8, Y0
	VFMADD231PS 32(BX), Y8, Y1
	VFMADD231PS 64(BX), Y9, Y2
	VFMADD231PS 96(BX), Y9, Y3
	VFMADD231PS 128(BX), Y10, Y4
	VFMADD231PS 160(BX), Y10, Y5
	VFMADD231PS 192(BX), Y11, Y6
	VFMADD231PS 224(BX), Y11, Y7
	ADDQ $16, SI
	ADDQ $256, BX
	SUBQ $4, CX
	CMPQ CX, $4
	JGE  gemvloop4

gemvtail:
	TESTQ CX, CX
	JZ    gemvdone

gemvloop1:
	VBROADCASTSS (SI), Y8
	VFMADD231PS (BX), Y8, Y0
	VFMADD231PS 32(BX), Y8, Y1
	ADDQ $4, SI
	ADDQ $64, BX
	DECQ CX
	JNZ  gemvloop1

gemvdone:
	VADDPS Y2, Y0, Y0
	VADDPS Y3, Y1, Y1
	VADDPS Y6, Y4, Y4
	VADDPS Y7, Y5, Y5
	VADDPS Y4, Y0, Y0
	VADDPS Y5, Y1, Y1
	VMOVUPS Y0, (DX)
	VMOVUPS Y1, 32(DX)
	ADDQ $64, DX
	DECQ R11
	JNZ  gemvpanel
	VZEROUPPER
	RET

// func gemvBF16AVX2(x *float32, w *uint16, k int, c *float32, panels int)
// gemvF32AVX2 on bf16 panels: each weight is widened exactly (its 16 bits become the
// high half of a float32) in registers as it streams in, so bf16 weights move half the
// bytes and are never converted in memory.
TEXT ·gemvBF16AVX2(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), R9
	MOVQ w+8(FP), BX
	MOVQ k+16(FP), R10
	MOVQ c+24(FP), DX
	MOVQ panels+32(FP), R11

bgemvpanel:
	MOVQ R9, SI
	MOVQ R10, CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	CMPQ CX, $2
	JLT  bgemvtail

bgemvloop2:
	VPMOVZXWD (BX), Y12
	VPMOVZXWD 16(BX), Y13
	VPMOVZXWD 32(BX), Y14
	VPMOVZXWD 48(BX), Y15
	VPSLLD $16, Y12, Y12
	VPSLLD $16, Y13, Y13
	VPSLLD $16, Y14, Y14
	VPSLLD $16, Y15, Y15
	VBROADCASTSS (SI), Y8
	VBROADCASTSS 4(SI), Y9
	VFMADD231PS Y12, Y8, Y0
	VFMADD231PS Y13, Y8, Y1
	VFMADD231PS Y14, Y9, Y2
	VFMADD231PS Y15, Y9, Y3
	ADDQ $8, SI
	ADDQ $64, BX
	SUBQ $2, CX
	CMPQ CX, $2
	JGE  bgemvloop2

bgemvtail:
	TESTQ CX, CX
	JZ    bgemvdone
	VPMOVZXWD (BX), Y12
	VPMOVZXWD 16(BX), Y13
	VPSLLD $16, Y12, Y12
	VPSLLD $16, Y13, Y13
	VBROADCASTSS (SI), Y8
	VFMADD231PS Y12, Y8, Y0
	VFMADD231PS Y13, Y8, Y1
	ADDQ $32, BX

bgemvdone:
	VADDPS Y2, Y0, Y0
	VADDPS Y3, Y1, Y1
	VMOVUPS Y0, (DX)
	VMOVUPS Y1, 32(DX)
	ADDQ $64, DX
	DECQ R11
	JNZ  bgemvpanel
	VZEROUPPER
	RET

// func widenBF16AVX2(dst *float32, src *uint16, n int)
// dst[i] = float32 with bits src[i]<<16, for i < n; n is a positive multiple of 16.
TEXT ·widenBF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $4, CX

widenloop:
	VPMOVZXWD (SI), Y0
	VPMOVZXWD 16(SI), Y1
	VPSLLD $16, Y0, Y0
	VPSLLD $16, Y1, Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ $32, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  widenloop
	VZEROUPPER
	RET
