package model

import (
	"math"
	"slices"
	"unsafe"
)

// Packed panels keep weights losslessly in fewer bytes, so decode, which reads every
// weight once per token and is bound by memory, reads fewer: b12 holds a bf16 weight
// in 12 bits instead of 16, b28 a float32 weight in 28 bits instead of 32.
//
// The top byte of a float32 (and the high byte of a bf16) is the sign and the
// exponent's top 7 bits. In a matrix it takes few values: within a panel of 16 rows,
// the 15 most frequent of them cover nearly every weight (a factor of about 2^15 in
// magnitude on each sign). A panel stores a 16-entry table of top bytes, then per
// weight a 4-bit index into it and the remaining low bytes unchanged (1 for bf16, 3 for
// float32). Entry 15 is the top byte 0x00 (zero and the smallest magnitudes), and a
// weight whose top byte is not in the table (an outlier far above or below the rest)
// is written as +0 and kept exactly in the panel's exception list, added back by every
// reader. Decoding is two table lookups per 16 weights (VPSHUFB for the top bytes,
// VPERMT2B to put them beside the low bytes, as float32 or as bf16 pairs), so the
// values are bit for bit the checkpoint's.
//
// Panel layout, for a [16, cols] panel with low bytes per weight: table [16]byte, then
// ceil(cols/2) groups of 16+32·low bytes for columns 2q and 2q+1: nib [16]byte (byte j:
// row j's index for column 2q in its low nibble, for column 2q+1 in its high nibble),
// then the low bytes [2][16][low]byte (column 2q's rows 0..15, then column 2q+1's; each
// little-endian). A missing last column is +0. A matrix's panels are followed by 64
// bytes of padding (the b28 kernels read 64 bytes from each column's 48).

const (
	packedLUT      = 16 // bytes of a panel's table
	packedZeroCode = 15 // the table entry that holds the top byte 0x00
	packedPad      = 64 // bytes after a matrix's panels
)

// packedPanelBytes is the size of one packed panel of a matrix with cols columns and
// low bytes per weight.
func packedPanelBytes(cols, low int) int { return packedLUT + (panelW+2*panelW*low)*((cols+1)/2) }

// packedExc is a weight kept outside its panel (written there as +0).
type packedExc struct {
	at  int32   // col*16 + row within its panel
	val float32 // the weight
}

// packedWeights is a matrix in packed panels.
type packedWeights struct {
	low  int         // low bytes per weight: 1 (b12, bf16 weights) or 3 (b28, float32)
	size int         // bytes per panel
	data []byte      // the panels, then packedPad bytes
	exc  []packedExc // exceptions, panel by panel
	off  []int32     // panel p's exceptions are exc[off[p]:off[p+1]]
}

// panels returns panels p0..p0+n-1 (the padding stays readable past them).
func (b *packedWeights) panels(p0, n int) []byte { return b.data[p0*b.size : (p0+n)*b.size] }

// excs returns panel p's exceptions.
func (b *packedWeights) excs(p int) []packedExc { return b.exc[b.off[p]:b.off[p+1]] }

// format names it: "b12" or "b28".
func (b *packedWeights) format() string {
	if b.low == 1 {
		return "b12"
	}
	return "b28"
}

// packedMaxExcPer is the share of a panel's weights (1 in packedMaxExcPer) above which
// a matrix is not packed: past it the exceptions would cost more than they save.
const packedMaxExcPer = 64

// packPacked encodes a row-major [rows, cols] matrix (get(r) returns row r: bf16 bits
// as uint16, or float32 bits as uint32) into packed panels (b12 for uint16, b28 for
// uint32) in out (packedLen bytes, zeroed), panels in parallel on the pool. ok is
// false when a panel has too many exceptions (see packedMaxExcPer): the matrix then
// stays unpacked.
func packPacked[T uint16 | uint32](p *pool, out []byte, rows, cols int, get func(r int) []T) (b packedWeights, ok bool) {
	low := int(unsafe.Sizeof(T(0))) - 1
	panels := (rows + panelW - 1) / panelW
	size := packedPanelBytes(cols, low)
	excs := make([][]packedExc, panels)
	bad := make([]bool, panels)
	p.run(panels, rows*cols, func(_, lo, hi int) {
		for pi := lo; pi < hi; pi++ {
			var rs [panelW][]T
			for r := 0; r < panelW && pi*panelW+r < rows; r++ {
				rs[r] = get(pi*panelW + r)[:cols]
			}
			excs[pi], bad[pi] = encodePackedPanel(out[pi*size:(pi+1)*size], rs[:], cols)
		}
	})
	if slices.Contains(bad, true) {
		return packedWeights{}, false
	}
	b = packedWeights{low: low, size: size, data: out[:panels*size+packedPad], off: make([]int32, panels+1)}
	for pi, e := range excs {
		b.exc = append(b.exc, e...)
		b.off[pi+1] = int32(len(b.exc))
	}
	return b, true
}

// packedLen is the number of bytes a [rows, cols] matrix takes in packed panels.
func packedLen(rows, cols, low int) int {
	return (rows+panelW-1)/panelW*packedPanelBytes(cols, low) + packedPad
}

// encodePackedPanel writes one panel (rows: up to 16 rows of cols bf16 or float32
// bits; nil rows are zeros) into dst and returns its exceptions; bad reports more
// than the share packedMaxExcPer allows.
func encodePackedPanel[T uint16 | uint32](dst []byte, rows [][]T, cols int) (exc []packedExc, bad bool) {
	low := int(unsafe.Sizeof(T(0))) - 1
	top := uint(8 * low) // the top byte's place
	var count [256]int32
	for _, r := range rows {
		for _, v := range r {
			count[uint32(v)>>top]++
		}
	}
	// the table: the 15 most frequent top bytes other than 0x00 (ties: the lower byte)
	var order []int
	for h := 1; h < 256; h++ {
		if count[h] > 0 {
			order = append(order, h)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return int(count[b] - count[a]) })
	var code [256]byte
	for h := range code {
		code[h] = packedZeroCode
	}
	lut := dst[:packedLUT]
	clear(lut)
	for k, h := range order[:min(len(order), packedZeroCode)] {
		code[h], lut[k] = byte(k), byte(h)
	}
	limit := len(rows) * cols / packedMaxExcPer
	var isExc [256]bool // top bytes outside the table
	for h := 1; h < 256; h++ {
		isExc[h] = code[h] == packedZeroCode
	}
	group := panelW + 2*panelW*low
	// lowOf returns weight v's low bytes, or records it as an exception and returns 0.
	lowOf := func(v T, i, j int) uint32 {
		u := uint32(v)
		if isExc[u>>top] {
			exc = append(exc, packedExc{at: int32(i*panelW + j), val: math.Float32frombits(u << (24 - top))})
			return 0
		}
		return u & (1<<top - 1)
	}
	for j, r := range rows { // row by row: each row's weights in order
		if r == nil {
			continue
		}
		r = r[:cols]
		for q := 0; q < (cols+1)/2; q++ {
			g := dst[packedLUT+q*group : packedLUT+(q+1)*group]
			v0 := r[2*q]
			k0, lo0 := code[uint32(v0)>>top], lowOf(v0, 2*q, j)
			k1, lo1 := byte(packedZeroCode), uint32(0) // a missing last column: +0
			if 2*q+1 < cols {
				v1 := r[2*q+1]
				k1, lo1 = code[uint32(v1)>>top], lowOf(v1, 2*q+1, j)
			}
			g[j] = k0 | k1<<4
			if low == 1 {
				g[panelW+j] = byte(lo0)
				g[2*panelW+j] = byte(lo1)
				continue
			}
			a := g[panelW+j*3 : panelW+j*3+3]
			a[0], a[1], a[2] = byte(lo0), byte(lo0>>8), byte(lo0>>16)
			c := g[panelW+(panelW+j)*3 : panelW+(panelW+j)*3+3]
			c[0], c[1], c[2] = byte(lo1), byte(lo1>>8), byte(lo1>>16)
		}
	}
	return exc, len(exc) > limit
}

// packedBits returns the float32 bits panel w (low bytes per weight) stores for
// (column i, row j) (an exception reads as +0).
func packedBits(w []byte, low, i, j int) uint32 {
	g := w[packedLUT+(i/2)*(panelW+2*panelW*low):]
	half := i % 2
	k := g[j] >> (4 * half) & 15
	at := g[panelW+(half*panelW+j)*low:]
	var lo uint32
	for b := 0; b < low; b++ {
		lo |= uint32(at[b]) << (8 * b)
	}
	return uint32(w[k])<<24 | lo<<(8*(3-low))
}

// gemvPackedGo writes c[p*16+j] = Σ_{i<k} x[i]·w_p[i][j] for p < panels, packed panels
// of w with low bytes per weight, read without their exceptions: as the assembly, per
// pair of columns in two sums by the pair's parity, added at the end.
func gemvPackedGo(x []float32, w []byte, k, low int, c []float32, panels int) {
	size := packedPanelBytes(k, low)
	x = x[:k]
	for p := 0; p < panels; p++ {
		wp := w[p*size : (p+1)*size]
		var acc [4][panelW]float32
		for i, xv := range x {
			a := &acc[2*((i/2)&1)+i%2]
			for j := range a {
				a[j] += xv * math.Float32frombits(packedBits(wp, low, i, j))
			}
		}
		for j := 0; j < panelW; j++ {
			c[p*panelW+j] = (acc[0][j] + acc[2][j]) + (acc[1][j] + acc[3][j])
		}
	}
}

// decodePackedGo writes panel w (without its exceptions) as float32, dst[i*16+j] for
// i < 2*ceil(k/2) (a missing last column is zeros).
func decodePackedGo(dst []float32, w []byte, k, low int) {
	n := (k + 1) &^ 1
	dst = dst[:n*panelW]
	for i := 0; i < n; i++ {
		for j := 0; j < panelW; j++ {
			dst[i*panelW+j] = math.Float32frombits(packedBits(w, low, i, j))
		}
	}
}

// decodeB12PairsGo writes b12 panel w (without its exceptions) as bf16 pairs, the
// layout of packPairPanels: (i, j) at ((i/2)*16 + j)*2 + i%2.
func decodeB12PairsGo(dst []uint16, w []byte, k int) {
	n := (k + 1) &^ 1
	dst = dst[:n*panelW]
	for i := 0; i < n; i++ {
		for j := 0; j < panelW; j++ {
			dst[((i/2)*panelW+j)*2+i%2] = uint16(packedBits(w, 1, i, j) >> 16)
		}
	}
}
