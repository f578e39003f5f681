package model

import (
	"math"
)

// 8-bit weights (WithInt8Products, WithInt8Weights): a weight matrix is quantized at
// Upload in blocks of q8Block consecutive values of a row, each block with one scale d
// (its largest magnitude / 127, stored as float16) and 32 integers q in [-127, 127]
// with value ≈ q·d: the layout idea of llama.cpp's Q8_0, 34 bytes per 32 weights, a
// quarter of float32's. Products quantize their input the same way (per block of 32,
// a float32 scale) and multiply integers: per block, row and token an exact int32 sum
// of q_w·q_x, then one float32 multiply-add by d_w·d_x. The result is
// an approximation of the float32 product (relative error of order 1/127 per block,
// averaging out over a row's blocks).
//
// A panel of 16 rows is stored block by block, each block q8BlockBytes bytes:
//
//	[8 groups of 4 columns][16 rows][4 bytes]  q_w + 128 as unsigned bytes (512 bytes)
//	[16 rows] float16 scale                                                 (32 bytes)
//
// so that one 32-bit lane holds four consecutive weights of one row: an instruction
// that multiplies unsigned by signed bytes and sums each four into an int32 lane
// (VPDPBUSD) takes eight rows' four weights times the same four broadcast inputs, and
// no horizontal sums are needed. The +128 makes the weights unsigned; its share,
// 128·Σq_x per block, is subtracted from every row's sum (q8Input.corr).
const (
	q8Block      = 32
	q8BlockBytes = q8Block*panelW + 2*panelW
)

// q8Blocks is the number of blocks of a row of cols values (the last zero-padded).
func q8Blocks(cols int) int { return (cols + q8Block - 1) / q8Block }

// q8PanelBytes is the size of one panel of 16 rows of cols values.
func q8PanelBytes(cols int) int { return q8Blocks(cols) * q8BlockBytes }

// q8Input is one input vector quantized per block: q (blocks·32 values, zero-padded),
// d the float32 scale of each block and corr = 128·Σq of each block.
type q8Input struct {
	q    []int8
	d    []float32
	corr []int32
}

// quantizeQ8Input quantizes x into in (its slices grown as needed): per block of 32,
// d = max|x|/127 and q = x/d rounded to nearest (halves away from zero), as llama.cpp
// quantizes activations for Q8_0 products (it keeps d as float16; here it stays
// float32).
func quantizeQ8Input(quant func(q []int8, d []float32, corr []int32, stride int, x []float32), in *q8Input, x []float32) {
	nb := q8Blocks(len(x))
	if cap(in.q) < nb*q8Block {
		in.q = make([]int8, nb*q8Block)
		in.d = make([]float32, nb)
		in.corr = make([]int32, nb)
	}
	in.q, in.d, in.corr = in.q[:nb*q8Block], in.d[:nb], in.corr[:nb]
	quant(in.q, in.d, in.corr, 1, x)
}

// quantizeQ8Act quantizes one row x into q (q8Blocks(len(x))·32 values, zero-padded)
// and the scale and correction of block b into d[b*stride] and corr[b*stride].
func quantizeQ8Act(q []int8, d []float32, corr []int32, stride int, x []float32) {
	nb := q8Blocks(len(x))
	for b := 0; b < nb; b++ {
		xb := x[b*q8Block : min(len(x), (b+1)*q8Block)]
		qb := q[b*q8Block : (b+1)*q8Block]
		var amax float32
		for _, v := range xb {
			amax = max(amax, abs32(v))
		}
		db := amax / 127
		var inv float32
		if db != 0 {
			inv = 1 / db
		}
		var sum int32
		for i, v := range xb {
			qi := roundAwayInt(v * inv)
			qb[i] = int8(qi)
			sum += qi
		}
		clear(qb[len(xb):])
		d[b*stride], corr[b*stride] = db, 128*sum
	}
}

// q8Batch is n input rows quantized for the six-token q8 GEMM: q holds the rows
// (rounded up to a multiple of six, the extra rows zero) at a stride of nb·32; the
// scales and corrections of the six rows of group g, block b, are at (g·nb+b)·6+t.
type q8Batch struct {
	q    []int8
	d    []float32
	corr []int32
	nb   int
}

// quantizeQ8Batch quantizes the n rows of xs (cols each) into bt, rows split over the
// pool.
func quantizeQ8Batch(p *pool, quant func(q []int8, d []float32, corr []int32, stride int, x []float32), bt *q8Batch, xs []float32, n, cols int) {
	nb := q8Blocks(cols)
	rows := (n + gemmRows - 1) / gemmRows * gemmRows
	if cap(bt.q) < rows*nb*q8Block {
		bt.q = make([]int8, rows*nb*q8Block)
	}
	if cap(bt.d) < rows*nb {
		bt.d = make([]float32, rows*nb)
		bt.corr = make([]int32, rows*nb)
	}
	bt.q, bt.d, bt.corr, bt.nb = bt.q[:rows*nb*q8Block], bt.d[:rows*nb], bt.corr[:rows*nb], nb
	p.run(rows, rows*cols*4, func(_, lo, hi int) {
		for t := lo; t < hi; t++ {
			g, r := t/gemmRows, t%gemmRows
			q := bt.q[t*nb*q8Block : (t+1)*nb*q8Block]
			off := g*nb*gemmRows + r
			if t >= n {
				clear(q)
				for b := 0; b < nb; b++ {
					bt.d[off+b*gemmRows], bt.corr[off+b*gemmRows] = 0, 0
				}
				continue
			}
			quant(q, bt.d[off:], bt.corr[off:], gemmRows, xs[t*cols:(t+1)*cols])
		}
	})
}

func abs32(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }

// roundAway rounds to the nearest integer, halves away from zero (C's roundf), for
// |v| < 2^31: v ± 0.5 is exact in float64, and the conversion truncates toward zero.
// No branch on the sign (random signs would mispredict half the time).
func roundAway(v float32) float32 {
	return float32(roundAwayInt(v))
}

func roundAwayInt(v float32) int32 {
	f := float64(v)
	return int32(f + math.Copysign(0.5, f))
}

// quantizeQ8Row quantizes one row (len(row) values) into q (q8Blocks·32 values) and one
// float16 scale per block: d = max|w|/127 rounded to float16, q = w/d rounded to
// nearest and clamped to [-127, 127].
func quantizeQ8Row(q []int8, scales []uint16, row []float32) {
	for b := range scales {
		rb := row[b*q8Block : min(len(row), (b+1)*q8Block)]
		var amax float32
		for _, v := range rb {
			amax = max(amax, abs32(v))
		}
		h := f32ToF16(amax / 127)
		d := F16ToFloat32(h)
		scales[b] = h
		var inv float32
		if d != 0 {
			inv = 1 / d
		}
		qb := q[b*q8Block : (b+1)*q8Block]
		for i := range qb {
			var v float32
			if i < len(rb) {
				v = max(-127, min(127, roundAway(rb[i]*inv)))
			}
			qb[i] = int8(v)
		}
	}
}

// packQ8Panels quantizes a [rows, cols] matrix (row r read as float32 by get) into
// q8 panels (see q8Block).
func packQ8Panels(p *pool, out []byte, rows, cols int, get func(r int, dst []float32) []float32) []byte {
	panels := (rows + panelW - 1) / panelW
	nb := q8Blocks(cols)
	psize := q8PanelBytes(cols)
	out = out[:panels*psize]
	p.run(panels, rows*cols, func(_, lo, hi int) {
		buf := make([]float32, cols)
		q := make([]int8, nb*q8Block)
		scales := make([]uint16, nb)
		for pi := lo; pi < hi; pi++ {
			dst := out[pi*psize : (pi+1)*psize]
			for r := 0; r < panelW; r++ {
				if pi*panelW+r < rows {
					quantizeQ8Row(q, scales, get(pi*panelW+r, buf))
				} else {
					clear(q)
					clear(scales)
				}
				for b := 0; b < nb; b++ {
					blk := dst[b*q8BlockBytes:]
					for g := 0; g < q8Block/4; g++ {
						for j := 0; j < 4; j++ {
							blk[g*4*panelW+r*4+j] = byte(int(q[b*q8Block+g*4+j]) + 128)
						}
					}
					s := scales[b]
					blk[q8Block*panelW+2*r], blk[q8Block*panelW+2*r+1] = byte(s), byte(s>>8)
				}
			}
		}
	})
	return out
}

// gemvQ8Go writes c[p*16+j] = the q8 product of row p*16+j of the panels w with the
// quantized input x, for p < panels (the portable kernel; see q8Block).
func gemvQ8Go(x *q8Input, w []byte, c []float32, panels int) {
	nb := len(x.d)
	psize := nb * q8BlockBytes
	var acc, sums [panelW]float32
	var isum [panelW]int32
	for p := 0; p < panels; p++ {
		acc = [panelW]float32{}
		for b := 0; b < nb; b++ {
			blk := w[p*psize+b*q8BlockBytes : p*psize+(b+1)*q8BlockBytes]
			xq := x.q[b*q8Block : (b+1)*q8Block]
			isum = [panelW]int32{}
			for g := 0; g < q8Block/4; g++ {
				x0, x1, x2, x3 := int32(xq[4*g]), int32(xq[4*g+1]), int32(xq[4*g+2]), int32(xq[4*g+3])
				wg := blk[g*4*panelW : (g+1)*4*panelW]
				for r := 0; r < panelW; r++ {
					isum[r] += int32(wg[4*r])*x0 + int32(wg[4*r+1])*x1 + int32(wg[4*r+2])*x2 + int32(wg[4*r+3])*x3
				}
			}
			dx := x.d[b]
			for r := 0; r < panelW; r++ {
				s := F16ToFloat32(uint16(blk[q8Block*panelW+2*r])|uint16(blk[q8Block*panelW+2*r+1])<<8) * dx
				sums[r] = float32(isum[r] - x.corr[b])
				acc[r] = fma32(sums[r], s, acc[r])
			}
		}
		copy(c[p*panelW:(p+1)*panelW], acc[:])
	}
}

// fma32 is a·b+c as VFMADD231PS computes it, up to double rounding: a·b of two float32
// values is exact in float64, the sum is rounded to float64 and then to float32, which
// differs from one rounding only when the first lands exactly on a float32 tie (rare;
// the tests compare the portable and assembly kernels with a tolerance of 1e-6).
func fma32(a, b, c float32) float32 {
	return float32(math.FMA(float64(a), float64(b), float64(c)))
}

// dequantQ8Panel writes panel w (q8, cols values per row) as float32 into dst in the
// [cols][16] layout of packPanels (prefill multiplies it with the float32 GEMM).
func dequantQ8Panel(dst []float32, w []byte, cols int) { dequantQ8Tail(dst, w, 0, cols) }

// dequantQ8Tail is dequantQ8Panel from block b0 on.
func dequantQ8Tail(dst []float32, w []byte, b0, cols int) {
	nb := q8Blocks(cols)
	var d [panelW]float32
	for b := b0; b < nb; b++ {
		blk := w[b*q8BlockBytes : (b+1)*q8BlockBytes]
		for r := 0; r < panelW; r++ {
			d[r] = F16ToFloat32(uint16(blk[q8Block*panelW+2*r]) | uint16(blk[q8Block*panelW+2*r+1])<<8)
		}
		for i := b * q8Block; i < min(cols, (b+1)*q8Block); i++ {
			g, j := (i%q8Block)/4, i%4
			row := dst[i*panelW : (i+1)*panelW]
			for r := 0; r < panelW; r++ {
				row[r] = float32(int(blk[g*4*panelW+r*4+j])-128) * d[r]
			}
		}
	}
}

// q8Value returns the dequantized weight at row r (0..15) of a panel, column i.
func q8Value(panel []byte, r, i int) float32 {
	blk := panel[(i/q8Block)*q8BlockBytes:]
	g, j := (i%q8Block)/4, i%4
	d := F16ToFloat32(uint16(blk[q8Block*panelW+2*r]) | uint16(blk[q8Block*panelW+2*r+1])<<8)
	return float32(int(blk[g*4*panelW+r*4+j])-128) * d
}

// f32ToF16 rounds v to IEEE half precision (nearest, ties to even; overflow to
// infinity, small values to subnormals or zero).
func f32ToF16(v float32) uint16 {
	b := math.Float32bits(v)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23&0xff) - 127 + 15
	man := b & 0x7fffff
	switch {
	case b&0x7fffffff > 0x7f800000: // NaN
		return sign | 0x7e00
	case exp >= 31: // overflow, or infinity
		return sign | 0x7c00
	case exp <= 0: // subnormal half, or zero
		if exp < -10 {
			return sign
		}
		man |= 0x800000
		shift := uint(14 - exp) // 24-bit significand down to the subnormal's 10 bits
		h := man >> shift
		rem := man & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && h&1 == 1) {
			h++
		}
		return sign | uint16(h)
	}
	h := uint32(exp)<<10 | man>>13
	rem := man & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // may carry into the exponent, up to infinity: still correct
	}
	return sign | uint16(h)
}
