package model

import (
	"math"
	"sync"
	"unsafe"
)

// panelW is the number of output rows in one packed weight panel. A panel stores those
// rows transposed, [cols][panelW], so a product reads it front to back, 64 bytes (f32)
// or 32 bytes (bf16) per input element, and multiplies by one broadcast input value.
// Matrices whose row count is not a multiple of panelW are padded with zero rows.
const panelW = 16

// gemmRows is the number of input rows (tokens) the matrix-matrix micro-kernel
// multiplies with one panel at a time: 6 rows × 16 outputs fill twelve AVX2 registers.
const gemmRows = 6

// kernels is one set of inner loops over packed panels: the AVX2/FMA assembly or the
// portable Go below, picked per engine (NewCPU, WithPortableKernels).
type kernels struct {
	name string
	// gemm6x16 writes c[t*16+j] = Σ_{i<k} x[t*ldx+i]·w[i*16+j], t < 6, j < 16 (k >= 1).
	gemm6x16 func(x []float32, ldx int, w []float32, k int, c *[gemmRows * panelW]float32)
	// gemvF32 writes c[p*16+j] = Σ_{i<k} x[i]·w[(p*k+i)*16+j] for p < panels (k >= 1).
	gemvF32 func(x, w []float32, k int, c []float32, panels int)
	// gemvBF16 is gemvF32 on bf16 panels, widening each weight as it is read.
	gemvBF16 func(x []float32, w []uint16, k int, c []float32, panels int)
	// widenBF16 writes dst[i] = the float32 of bf16 bits src[i] (len(dst) >= len(src)).
	widenBF16 func(dst []float32, src []uint16)

	// bf16 math (WithBF16Products): nil where the kernels have none.
	//
	// gemm6x16BF16 writes c[t*16+j] = Σ_{p<kp} x_t[2p]·w[p][j][0] + x_t[2p+1]·w[p][j][1]
	// (t < 6, j < 16, kp >= 1), where row t of x (bf16, at x[t*ldx:]) and the panel of
	// pairs w ([kp][16][2] bf16, see packPairPanels) are multiplied exactly and summed in
	// float32 as VDPBF16PS does: per pair the odd product, then the even one; pairs
	// with even p and odd p in two sums added at the end.
	gemm6x16BF16 func(x []uint16, ldx int, w []uint16, kp int, c *[gemmRows * panelW]float32)
	// toBF16 writes dst[i] = src[i] rounded to bf16 (nearest, ties to even; subnormals
	// become zeros of their sign; NaN stays NaN).
	toBF16 func(dst []uint16, src []float32)
	// gemvPairs writes c[j] = Σ_{i<k} x[i]·w[i/2][j][i%2] for j < 16: one panel of bf16
	// pairs ([ceil(k/2)][16][2]) times float32 inputs, exactly (decode, bf16 math).
	gemvPairs func(x []float32, w []uint16, k int, c []float32)
	// exp sets x[i] = exp(x[i]) (float32 accuracy).
	exp func(x []float32)
	// expSum sets x[i] = exp(x[i]-shift) and returns Σ x[i] (softmax's numerators).
	expSum func(x []float32, shift float32) float32
	// siluMul sets gate[i] = silu(gate[i])·up[i].
	siluMul func(gate, up []float32)
	// axpy sets dst[i] += a·x[i] over len(dst) elements.
	axpy func(dst, x []float32, a float32)
	// scores writes out[p] = Σ_i q[i]·k[p*stride+i] for p < len(out) (attention's
	// q·k over the cached keys of one head).
	scores func(out, q, k []float32, stride int)
	// weightedSum writes out[j] = Σ_p s[p]·v[p*stride+j] for j < len(out), p < len(s)
	// (attention's weighted sum of the cached values of one head).
	weightedSum func(out, s, v []float32, stride int)

	// gemvQ8 writes c[p*16+j] = the product of row p*16+j of q8 panels w with the
	// quantized input x, p < panels (8-bit weights, see q8.go); q8name names it.
	gemvQ8 func(x *q8Input, w []byte, c []float32, panels int)
	q8name string
	// quantQ8 quantizes a row of inputs per block of 32 (quantizeQ8Act).
	quantQ8 func(q []int8, d []float32, corr []int32, stride int, x []float32)
	// dequantQ8 writes a q8 panel of rows of cols values as float32, [cols][16].
	dequantQ8 func(dst []float32, w []byte, cols int)
	// gemm6x16Q8 multiplies six quantized rows (x at a stride of ldx; scales and
	// corrections of block b at xs[b*6+t], xc[b*6+t]) by one q8 panel of nb blocks:
	// per token the sum gemvQ8 computes. nil where the CPU has no integer kernel for it:
	// prefill then widens q8 panels to float32 (dequantQ8) and multiplies float32 inputs.
	gemm6x16Q8 func(x []int8, ldx int, xs []float32, xc []int32, w []byte, nb int, c *[gemmRows * panelW]float32)

	// packed panels (lossless, see packed.go), read without their exceptions:
	// gemvPacked writes c[p*16+j] = Σ_{i<k} x[i]·w_p[i][j] for p < panels (consecutive
	// panels of packedPanelBytes(k, low) bytes, then packedPad bytes); decodePacked
	// writes one panel as float32, [2*ceil(k/2)][16]; decodeB12Pairs a b12 panel as bf16
	// pairs (packPairPanels' layout). packedNative says they are assembly: only then
	// does the engine pack weights by default (WithPackedPanels).
	gemvPacked     func(x []float32, w []byte, k, low int, c []float32, panels int)
	decodePacked   func(dst []float32, w []byte, k, low int)
	decodeB12Pairs func(dst []uint16, w []byte, k int)
	packedNative   bool
}

var goKernels = kernels{
	name:         "go",
	gemm6x16:     gemm6x16Go,
	gemvF32:      gemvF32Go,
	gemvBF16:     gemvBF16Go,
	widenBF16:    widenBF16Go,
	gemm6x16BF16: gemm6x16BF16Go,
	toBF16:       toBF16Go,
	gemvPairs:    gemvPairsGo,
	exp:          expGo,
	expSum:       expSumGo,
	siluMul:      SiLUMul,
	axpy:         axpyGo,
	scores:       scoresGo,
	weightedSum:  weightedSumGo,
	gemvQ8:       gemvQ8Go,
	q8name:       "go",
	dequantQ8:    dequantQ8Panel,
	quantQ8:      quantizeQ8Act,

	gemvPacked:     gemvPackedGo,
	decodePacked:   decodePackedGo,
	decodeB12Pairs: decodeB12PairsGo,
}

func gemm6x16Go(x []float32, ldx int, w []float32, k int, c *[gemmRows * panelW]float32) {
	var acc [gemmRows * panelW]float32
	w = w[:k*panelW]
	for i := 0; i < k; i++ {
		wr := (*[panelW]float32)(w[i*panelW:])
		for t := 0; t < gemmRows; t++ {
			xv := x[t*ldx+i]
			a := (*[panelW]float32)(acc[t*panelW:])
			for j, wv := range wr {
				a[j] += xv * wv
			}
		}
	}
	*c = acc
}

func gemm6x16BF16Go(x []uint16, ldx int, w []uint16, kp int, c *[gemmRows * panelW]float32) {
	var acc [2][gemmRows * panelW]float32
	w = w[:kp*2*panelW]
	for p := 0; p < kp; p++ {
		wr := (*[2 * panelW]uint16)(w[p*2*panelW:])
		a := &acc[p&1]
		for t := 0; t < gemmRows; t++ {
			x0 := bf16Float(x[t*ldx+2*p])
			x1 := bf16Float(x[t*ldx+2*p+1])
			at := (*[panelW]float32)(a[t*panelW:])
			for j := range at {
				// each product is exact in float32 (8-bit significands); the sums round
				at[j] += x1 * bf16Float(wr[2*j+1])
				at[j] += x0 * bf16Float(wr[2*j])
			}
		}
	}
	for i := range c {
		c[i] = acc[0][i] + acc[1][i]
	}
}

func bf16Float(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) }

// toBF16Bits is v rounded to bf16 (nearest, ties to even), subnormals flushed to a
// zero of their sign, NaN kept a (quiet) NaN, as VCVTNEPS2BF16 does.
func toBF16Bits(v float32) uint16 {
	b := math.Float32bits(v)
	switch {
	case b&0x7f800000 == 0: // zero or subnormal
		return uint16(b>>16) & 0x8000
	case b&0x7fffffff > 0x7f800000: // NaN
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

func toBF16Go(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = toBF16Bits(v)
	}
}

func gemvPairsGo(x []float32, w []uint16, k int, c []float32) {
	var acc [4][panelW]float32
	x = x[:k]
	w = w[:pairPanelSize(k)]
	for i, xv := range x {
		p, h := i/2, i%2
		a := &acc[2*(p&1)+h]
		for j := range a {
			a[j] += xv * bf16Float(w[(p*panelW+j)*2+h])
		}
	}
	for j := 0; j < panelW; j++ {
		c[j] = (acc[0][j] + acc[1][j]) + (acc[2][j] + acc[3][j])
	}
}

// packPairPanels lays out a row-major [rows, cols] bf16 matrix as ceil(rows/16) panels
// of pairs, [ceil(cols/2)][16][2] (pairPanelsLen elements, zeroed), zero-padded, for
// bf16 math: element (r, i) of a panel sits at ((i/2)*16 + r)*2 + i%2.
func packPairPanels(p *pool, out []uint16, rows, cols int, get func(r int) []uint16) []uint16 {
	panels := (rows + panelW - 1) / panelW
	size := pairPanelSize(cols)
	out = out[:panels*size]
	p.run(panels, rows*cols, func(_, lo, hi int) {
		for pi := lo; pi < hi; pi++ {
			dst := out[pi*size : (pi+1)*size]
			for r := 0; r < panelW && pi*panelW+r < rows; r++ {
				for i, v := range get(pi*panelW + r)[:cols] {
					dst[((i/2)*panelW+r)*2+i%2] = v
				}
			}
		}
	})
	hugePages(unsafe.Pointer(unsafe.SliceData(out)), uintptr(len(out))*2, true)
	return out
}

// pairPanelsLen is the number of elements of a [rows, cols] matrix packed into panels
// of pairs.
func pairPanelsLen(rows, cols int) int { return (rows + panelW - 1) / panelW * pairPanelSize(cols) }

// pairPanelSize is the number of elements of one panel of pairs of a matrix with cols
// columns: ceil(cols/2) pairs of 16 rows.
func pairPanelSize(cols int) int { return (cols + 1) / 2 * 2 * panelW }

func gemvF32Go(x, w []float32, k int, c []float32, panels int) {
	x = x[:k]
	for p := 0; p < panels; p++ {
		var acc [panelW]float32
		wp := w[p*k*panelW : (p+1)*k*panelW]
		for i, xv := range x {
			wr := (*[panelW]float32)(wp[i*panelW:])
			for j, wv := range wr {
				acc[j] += xv * wv
			}
		}
		copy(c[p*panelW:], acc[:])
	}
}

func gemvBF16Go(x []float32, w []uint16, k int, c []float32, panels int) {
	x = x[:k]
	for p := 0; p < panels; p++ {
		var acc [panelW]float32
		wp := w[p*k*panelW : (p+1)*k*panelW]
		for i, xv := range x {
			wr := (*[panelW]uint16)(wp[i*panelW:])
			for j, wv := range wr {
				acc[j] += xv * math.Float32frombits(uint32(wv)<<16)
			}
		}
		copy(c[p*panelW:], acc[:])
	}
}

func widenBF16Go(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	for i, b := range src {
		dst[i] = math.Float32frombits(uint32(b) << 16)
	}
}

// packPanels lays out a row-major [rows, cols] matrix (get(r) returns row r) as
// ceil(rows/16) panels of [cols][16] in out (panelsLen(rows, cols) elements, zeroed),
// zero-padded; panels are filled by the pool.
func packPanels[T float32 | uint16](p *pool, out []T, rows, cols int, get func(r int) []T) []T {
	panels := (rows + panelW - 1) / panelW
	out = out[:panels*cols*panelW]
	p.run(panels, rows*cols, func(_, lo, hi int) {
		for pi := lo; pi < hi; pi++ {
			dst := out[pi*cols*panelW : (pi+1)*cols*panelW]
			for r := 0; r < panelW && pi*panelW+r < rows; r++ {
				for i, v := range get(pi*panelW + r)[:cols] {
					dst[i*panelW+r] = v
				}
			}
		}
	})
	hugePages(unsafe.Pointer(unsafe.SliceData(out)), uintptr(len(out))*unsafe.Sizeof(out[0]), true)
	return out
}

// panelsLen is the number of elements of a [rows, cols] matrix packed into panels.
func panelsLen(rows, cols int) int { return (rows + panelW - 1) / panelW * cols * panelW }

// slabSize is the size of the blocks the CPU engine carves its packed weights from:
// one block spans many 2 MiB huge pages, where one small matrix alone would span none.
const slabSize = 64 << 20

// weightArena hands out zeroed, 64-byte-aligned weight storage from large blocks
// backed by transparent huge pages where the kernel allows (see hugePages). Blocks are
// ordinary Go memory: a weight's slice keeps its block alive, and the garbage collector
// frees it with the last weight.
type weightArena struct {
	mu   sync.Mutex
	slab []byte
	off  int
}

// alloc returns n zeroed bytes.
func (a *weightArena) alloc(n int) unsafe.Pointer {
	a.mu.Lock()
	defer a.mu.Unlock()
	n = (n + 63) &^ 63
	if n > slabSize/4 {
		b := make([]byte, n)
		hugePages(unsafe.Pointer(unsafe.SliceData(b)), uintptr(n), false)
		return unsafe.Pointer(unsafe.SliceData(b))
	}
	if a.slab == nil || a.off+n > len(a.slab) {
		a.slab = make([]byte, slabSize)
		a.off = 0
		hugePages(unsafe.Pointer(unsafe.SliceData(a.slab)), slabSize, false)
	}
	p := unsafe.Pointer(&a.slab[a.off])
	a.off += n
	return p
}

// arenaSlice returns n zeroed elements of T from a.
func arenaSlice[T float32 | uint16 | byte](a *weightArena, n int) []T {
	var zero T
	return unsafe.Slice((*T)(a.alloc(n*int(unsafe.Sizeof(zero)))), n)
}
