#include "textflag.h"

// Vectorized float32 exp (Cephes expf: exp(x) = 2^n·p(r), x = n·ln2 + r, |r| <= ln2/2,
// a degree-7 polynomial; about 1 ulp over the clamped range [-88.38, 88.38]) and the
// elementwise loops built on it. Constants are 8-lane vectors for memory operands.

DATA expHi<>+0(SB)/8, $0x42b0c0a542b0c0a5
DATA expHi<>+8(SB)/8, $0x42b0c0a542b0c0a5
DATA expHi<>+16(SB)/8, $0x42b0c0a542b0c0a5
DATA expHi<>+24(SB)/8, $0x42b0c0a542b0c0a5
GLOBL expHi<>(SB), RODATA|NOPTR, $32

DATA expLo<>+0(SB)/8, $0xc2b0c0a5c2b0c0a5
DATA expLo<>+8(SB)/8, $0xc2b0c0a5c2b0c0a5
DATA expLo<>+16(SB)/8, $0xc2b0c0a5c2b0c0a5
DATA expLo<>+24(SB)/8, $0xc2b0c0a5c2b0c0a5
GLOBL expLo<>(SB), RODATA|NOPTR, $32

DATA expLog2e<>+0(SB)/8, $0x3fb8aa3b3fb8aa3b
DATA expLog2e<>+8(SB)/8, $0x3fb8aa3b3fb8aa3b
DATA expLog2e<>+16(SB)/8, $0x3fb8aa3b3fb8aa3b
DATA expLog2e<>+24(SB)/8, $0x3fb8aa3b3fb8aa3b
GLOBL expLog2e<>(SB), RODATA|NOPTR, $32

DATA expHalf<>+0(SB)/8, $0x3f0000003f000000
DATA expHalf<>+8(SB)/8, $0x3f0000003f000000
DATA expHalf<>+16(SB)/8, $0x3f0000003f000000
DATA expHalf<>+24(SB)/8, $0x3f0000003f000000
GLOBL expHalf<>(SB), RODATA|NOPTR, $32

DATA expC1<>+0(SB)/8, $0x3f3180003f318000
DATA expC1<>+8(SB)/8, $0x3f3180003f318000
DATA expC1<>+16(SB)/8, $0x3f3180003f318000
DATA expC1<>+24(SB)/8, $0x3f3180003f318000
GLOBL expC1<>(SB), RODATA|NOPTR, $32

DATA expC2<>+0(SB)/8, $0xb95e8083b95e8083
DATA expC2<>+8(SB)/8, $0xb95e8083b95e8083
DATA expC2<>+16(SB)/8, $0xb95e8083b95e8083
DATA expC2<>+24(SB)/8, $0xb95e8083b95e8083
GLOBL expC2<>(SB), RODATA|NOPTR, $32

DATA expP0<>+0(SB)/8, $0x3950696739506967
DATA expP0<>+8(SB)/8, $0x3950696739506967
DATA expP0<>+16(SB)/8, $0x3950696739506967
DATA expP0<>+24(SB)/8, $0x3950696739506967
GLOBL expP0<>(SB), RODATA|NOPTR, $32

DATA expP1<>+0(SB)/8, $0x3ab743ce3ab743ce
DATA expP1<>+8(SB)/8, $0x3ab743ce3ab743ce
DATA expP1<>+16(SB)/8, $0x3ab743ce3ab743ce
DATA expP1<>+24(SB)/8, $0x3ab743ce3ab743ce
GLOBL expP1<>(SB), RODATA|NOPTR, $32

DATA expP2<>+0(SB)/8, $0x3c0889083c088908
DATA expP2<>+8(SB)/8, $0x3c0889083c088908
DATA expP2<>+16(SB)/8, $0x3c0889083c088908
DATA expP2<>+24(SB)/8, $0x3c0889083c088908
GLOBL expP2<>(SB), RODATA|NOPTR, $32

DATA expP3<>+0(SB)/8, $0x3d2aa9c13d2aa9c1
DATA expP3<>+8(SB)/8, $0x3d2aa9c13d2aa9c1
DATA expP3<>+16(SB)/8, $0x3d2aa9c13d2aa9c1
DATA expP3<>+24(SB)/8, $0x3d2aa9c13d2aa9c1
GLOBL expP3<>(SB), RODATA|NOPTR, $32

DATA expP4<>+0(SB)/8, $0x3e2aaaaa3e2aaaaa
DATA expP4<>+8(SB)/8, $0x3e2aaaaa3e2aaaaa
DATA expP4<>+16(SB)/8, $0x3e2aaaaa3e2aaaaa
DATA expP4<>+24(SB)/8, $0x3e2aaaaa3e2aaaaa
GLOBL expP4<>(SB), RODATA|NOPTR, $32

DATA expP5<>+0(SB)/8, $0x3f0000003f000000
DATA expP5<>+8(SB)/8, $0x3f0000003f000000
DATA expP5<>+16(SB)/8, $0x3f0000003f000000
DATA expP5<>+24(SB)/8, $0x3f0000003f000000
GLOBL expP5<>(SB), RODATA|NOPTR, $32

DATA expOne<>+0(SB)/8, $0x3f8000003f800000
DATA expOne<>+8(SB)/8, $0x3f8000003f800000
DATA expOne<>+16(SB)/8, $0x3f8000003f800000
DATA expOne<>+24(SB)/8, $0x3f8000003f800000
GLOBL expOne<>(SB), RODATA|NOPTR, $32

DATA expBias<>+0(SB)/8, $0x0000007f0000007f
DATA expBias<>+8(SB)/8, $0x0000007f0000007f
DATA expBias<>+16(SB)/8, $0x0000007f0000007f
DATA expBias<>+24(SB)/8, $0x0000007f0000007f
GLOBL expBias<>(SB), RODATA|NOPTR, $32

// EXP8 sets Y0 = exp(Y0) lane by lane; it clobbers Y1, Y2, Y3.
#define EXP8 \
	VMINPS       expHi<>(SB), Y0, Y0 \
	VMAXPS       expLo<>(SB), Y0, Y0 \
	VMOVUPS      expLog2e<>(SB), Y1 \
	VFMADD213PS  expHalf<>(SB), Y0, Y1 \
	VROUNDPS     $1, Y1, Y1 \
	VFNMADD231PS expC1<>(SB), Y1, Y0 \
	VFNMADD231PS expC2<>(SB), Y1, Y0 \
	VMOVUPS      expP0<>(SB), Y3 \
	VFMADD213PS  expP1<>(SB), Y0, Y3 \
	VFMADD213PS  expP2<>(SB), Y0, Y3 \
	VFMADD213PS  expP3<>(SB), Y0, Y3 \
	VFMADD213PS  expP4<>(SB), Y0, Y3 \
	VFMADD213PS  expP5<>(SB), Y0, Y3 \
	VMULPS       Y0, Y0, Y2 \
	VFMADD213PS  Y0, Y2, Y3 \
	VADDPS       expOne<>(SB), Y3, Y3 \
	VCVTTPS2DQ   Y1, Y1 \
	VPADDD       expBias<>(SB), Y1, Y1 \
	VPSLLD       $23, Y1, Y1 \
	VMULPS       Y1, Y3, Y0

// func expAVX2(x *float32, n int)
// x[i] = exp(x[i]) for i < n; n is a positive multiple of 8.
TEXT ·expAVX2(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	SHRQ $3, CX

exploop:
	VMOVUPS (SI), Y0
	EXP8
	VMOVUPS Y0, (SI)
	ADDQ $32, SI
	DECQ CX
	JNZ  exploop
	VZEROUPPER
	RET

// func siluMulAVX2(gate, up *float32, n int)
// gate[i] = gate[i]/(1+exp(-gate[i])) · up[i] for i < n; n is a positive multiple of 8.
TEXT ·siluMulAVX2(SB), NOSPLIT, $0-24
	MOVQ gate+0(FP), SI
	MOVQ up+8(FP), DI
	MOVQ n+16(FP), CX
	SHRQ $3, CX

silueloop:
	VMOVUPS (SI), Y4
	VXORPS  Y0, Y0, Y0
	VSUBPS  Y4, Y0, Y0
	EXP8
	VADDPS  expOne<>(SB), Y0, Y0
	VDIVPS  Y0, Y4, Y4
	VMULPS  (DI), Y4, Y4
	VMOVUPS Y4, (SI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  silueloop
	VZEROUPPER
	RET

// func axpyAVX2(dst, x *float32, a float32, n int)
// dst[i] += a·x[i] for i < n; n is a positive multiple of 8.
TEXT ·axpyAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	VBROADCASTSS a+16(FP), Y1
	MOVQ n+24(FP), CX
	SHRQ $3, CX

axpyloop:
	VMOVUPS (DI), Y0
	VFMADD231PS (SI), Y1, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  axpyloop
	VZEROUPPER
	RET

// func expShiftSumAVX2(x *float32, n int, shift float32) float32
// x[i] = exp(x[i] - shift) for i < n, returning Σ x[i]; n is a positive multiple of 8.
TEXT ·expShiftSumAVX2(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS shift+16(FP), Y5
	VXORPS Y6, Y6, Y6
	SHRQ $3, CX

expsumloop:
	VMOVUPS (SI), Y0
	VSUBPS  Y5, Y0, Y0
	EXP8
	VMOVUPS Y0, (SI)
	VADDPS  Y0, Y6, Y6
	ADDQ $32, SI
	DECQ CX
	JNZ  expsumloop
	VEXTRACTF128 $1, Y6, X1
	VADDPS X1, X6, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET
