package model

import (
	"math"
	"slices"
)

// b12 panels keep bf16 weights losslessly in 12 bits each instead of 16, so decode,
// which reads every weight once per token and is bound by memory, reads a quarter
// fewer bytes.
//
// A bf16 value is a high byte (sign and the exponent's top 7 bits) and a low byte (the
// exponent's last bit and the 7 mantissa bits). In a matrix the high bytes take few
// values: within a panel of 16 rows, the 15 most frequent of them cover nearly every
// weight (a factor of about 2^15 in magnitude on each sign). A panel stores a
// 16-entry table of high bytes, then per weight a 4-bit index into it and the low byte
// unchanged. Entry 15 is the high byte 0x00 (zero and the smallest magnitudes), and a
// weight whose high byte is not in the table (an outlier far above or below the rest)
// is written as +0 and kept exactly in the panel's exception list, added back by every
// reader. Decoding is two table lookups per 16 weights (VPSHUFB for the high bytes,
// VPERMT2B to interleave them with the low bytes as float32 or bf16 pairs), so the
// values are bit for bit the checkpoint's.
//
// Panel layout, for a [16, cols] panel: lut [16]byte, then ceil(cols/2) groups of 48
// bytes for columns 2q and 2q+1: nib [16]byte (byte j: row j's index for column 2q in
// its low nibble, for column 2q+1 in its high nibble), lo [2][16]byte (the low bytes of
// rows 0..15 of column 2q, then of column 2q+1). A missing last column is +0.

const (
	b12LUT       = 16 // bytes of a panel's table
	b12PairBytes = 48 // bytes of two columns of 16 weights
	b12ZeroCode  = 15 // the table entry that holds the high byte 0x00
)

// b12PanelBytes is the size of one b12 panel of a matrix with cols columns.
func b12PanelBytes(cols int) int { return b12LUT + b12PairBytes*((cols+1)/2) }

// b12Exc is a weight kept outside the panel (written there as +0).
type b12Exc struct {
	at  int32   // col*16 + row within its panel
	val float32 // the weight
}

// b12Weights is a matrix in b12 panels.
type b12Weights struct {
	data []byte   // the panels, b12PanelBytes(cols) each
	exc  []b12Exc // exceptions, panel by panel
	off  []int32  // panel p's exceptions are exc[off[p]:off[p+1]]
}

// panel returns panel p's bytes.
func (b *b12Weights) panel(p, cols int) []byte {
	size := b12PanelBytes(cols)
	return b.data[p*size : (p+1)*size]
}

// excs returns panel p's exceptions.
func (b *b12Weights) excs(p int) []b12Exc { return b.exc[b.off[p]:b.off[p+1]] }

// b12MaxExcPer is the share of a panel's weights (1 in b12MaxExcPer) above which a
// matrix is not stored as b12: past it the exceptions would cost more than they save.
const b12MaxExcPer = 64

// packB12 encodes a row-major [rows, cols] bf16 matrix (get(r) returns row r) into b12
// panels in out (panels × b12PanelBytes(cols) bytes, zeroed), panels in parallel on the
// pool. ok is false when a panel has too many exceptions (see b12MaxExcPer): the
// matrix then stays in bf16 panels.
func packB12(p *pool, out []byte, rows, cols int, get func(r int) []uint16) (b b12Weights, ok bool) {
	panels := (rows + panelW - 1) / panelW
	size := b12PanelBytes(cols)
	out = out[:panels*size]
	excs := make([][]b12Exc, panels)
	bad := make([]bool, panels)
	p.run(panels, rows*cols, func(_, lo, hi int) {
		for pi := lo; pi < hi; pi++ {
			var rs [panelW][]uint16
			for r := 0; r < panelW && pi*panelW+r < rows; r++ {
				rs[r] = get(pi*panelW + r)[:cols]
			}
			excs[pi], bad[pi] = encodeB12Panel(out[pi*size:(pi+1)*size], rs[:], cols)
		}
	})
	if slices.Contains(bad, true) {
		return b12Weights{}, false
	}
	b = b12Weights{data: out, off: make([]int32, panels+1)}
	for pi, e := range excs {
		b.exc = append(b.exc, e...)
		b.off[pi+1] = int32(len(b.exc))
	}
	return b, true
}

// encodeB12Panel writes one panel (rows: up to 16 rows of cols values; nil rows are
// zeros) into dst and returns its exceptions; bad reports more than the share
// b12MaxExcPer allows.
func encodeB12Panel(dst []byte, rows [][]uint16, cols int) (exc []b12Exc, bad bool) {
	var count [256]int32
	for _, r := range rows {
		for _, v := range r {
			count[v>>8]++
		}
	}
	// the table: the 15 most frequent high bytes other than 0x00 (ties: the lower byte)
	var order []int
	for h := 1; h < 256; h++ {
		if count[h] > 0 {
			order = append(order, h)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return int(count[b] - count[a]) })
	var code [256]byte
	for h := range code {
		code[h] = b12ZeroCode
	}
	lut := dst[:b12LUT]
	clear(lut)
	for k, h := range order[:min(len(order), b12ZeroCode)] {
		code[h], lut[k] = byte(k), byte(h)
	}
	limit := len(rows) * cols / b12MaxExcPer
	for i := 0; i < cols; i++ {
		g := dst[b12LUT+(i/2)*b12PairBytes:]
		half := i % 2
		for j, r := range rows {
			if r == nil {
				continue
			}
			v := r[i]
			hi, lo := byte(v>>8), byte(v)
			k := code[hi]
			if k == b12ZeroCode && hi != 0 {
				exc = append(exc, b12Exc{at: int32(i*panelW + j), val: bf16Float(v)})
				lo = 0
			}
			g[j] |= k << (4 * half)
			g[panelW+half*panelW+j] = lo
		}
	}
	return exc, len(exc) > limit
}

// b12Bits returns the bf16 bits panel w stores for (column i, row j) (an exception
// reads as +0).
func b12Bits(w []byte, i, j int) uint16 {
	g := w[b12LUT+(i/2)*b12PairBytes:]
	half := i % 2
	k := g[j] >> (4 * half) & 15
	return uint16(w[k])<<8 | uint16(g[panelW+half*panelW+j])
}

// gemvB12Go writes c[p*16+j] = Σ_{i<k} x[i]·w_p[i][j] for p < panels, the panels of w
// (b12PanelBytes(k) bytes each) read without their exceptions: as the assembly, per
// pair of columns in two sums by the pair's parity, added at the end.
func gemvB12Go(x []float32, w []byte, k int, c []float32, panels int) {
	size := b12PanelBytes(k)
	x = x[:k]
	for p := 0; p < panels; p++ {
		wp := w[p*size : (p+1)*size]
		var acc [4][panelW]float32
		for i, xv := range x {
			a := &acc[2*((i/2)&1)+i%2]
			for j := range a {
				a[j] += xv * math.Float32frombits(uint32(b12Bits(wp, i, j))<<16)
			}
		}
		for j := 0; j < panelW; j++ {
			c[p*panelW+j] = (acc[0][j] + acc[2][j]) + (acc[1][j] + acc[3][j])
		}
	}
}

// decodeB12Go writes panel w (without its exceptions) as float32, dst[i*16+j] for
// i < 2*ceil(k/2) (a missing last column is zeros).
func decodeB12Go(dst []float32, w []byte, k int) {
	n := (k + 1) &^ 1
	dst = dst[:n*panelW]
	for i := 0; i < n; i++ {
		for j := 0; j < panelW; j++ {
			dst[i*panelW+j] = math.Float32frombits(uint32(b12Bits(w, i, j)) << 16)
		}
	}
}

// decodeB12PairsGo writes panel w (without its exceptions) as bf16 pairs, the layout
// of packPairPanels: (i, j) at ((i/2)*16 + j)*2 + i%2.
func decodeB12PairsGo(dst []uint16, w []byte, k int) {
	n := (k + 1) &^ 1
	dst = dst[:n*panelW]
	for i := 0; i < n; i++ {
		for j := 0; j < panelW; j++ {
			dst[((i/2)*panelW+j)*2+i%2] = b12Bits(w, i, j)
		}
	}
}
