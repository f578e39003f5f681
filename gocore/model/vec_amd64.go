package model

import "unsafe"

//go:noescape
func expAVX2(x *float32, n int)

//go:noescape
func siluMulAVX2(gate, up *float32, n int)

//go:noescape
func expShiftSumAVX2(x *float32, n int, shift float32) float32

//go:noescape
func axpyAVX2(dst, x *float32, a float32, n int)

// expAsm sets x[i] = exp(x[i]): the AVX2 kernel over whole groups of 8, math.Exp for
// the rest.
func expAsm(x []float32) {
	m := len(x) &^ 7
	if m > 0 {
		expAVX2(unsafe.SliceData(x), m)
	} else {
		m = 0
	}
	expGo(x[m:])
}

// siluMulAsm sets gate[i] = silu(gate[i])·up[i].
func siluMulAsm(gate, up []float32) {
	up = up[:len(gate)]
	m := len(gate) &^ 7
	if m > 0 {
		siluMulAVX2(unsafe.SliceData(gate), unsafe.SliceData(up), m)
	} else {
		m = 0
	}
	SiLUMul(gate[m:], up[m:])
}

// axpyAsm sets dst[i] += a·x[i] over len(dst) elements.
func axpyAsm(dst, x []float32, a float32) {
	x = x[:len(dst)]
	m := len(dst) &^ 7
	if m > 0 {
		axpyAVX2(unsafe.SliceData(dst), unsafe.SliceData(x), a, m)
	} else {
		m = 0
	}
	axpyGo(dst[m:], x[m:], a)
}

// expSumAsm sets x[i] = exp(x[i]-shift) and returns their sum.
func expSumAsm(x []float32, shift float32) float32 {
	m := len(x) &^ 7
	var sum float32
	if m > 0 {
		sum = expShiftSumAVX2(unsafe.SliceData(x), m, shift)
	}
	return sum + expSumGo(x[m:], shift)
}
