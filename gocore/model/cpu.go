package model

import (
	"fmt"
	"math"
	"runtime"
	"unsafe"

	"gorgonia.org/tensor"
)

// CPU is the Engine that runs on the host. Weight matrices are repacked at Upload into
// panels of 16 output rows stored transposed ([cols][16], see panelW), in float32 or,
// for BF16 checkpoints, in bfloat16. Every product walks panels:
//
//   - decode (one token): a matrix-vector kernel streams each panel once, 64 bytes (32
//     for bf16, widened in registers) per input element, with no horizontal sums; the
//     forward pass is bound by how fast the weights come from memory;
//   - prefill (n tokens): a 6×16 register-blocked GEMM micro-kernel multiplies six
//     tokens by one panel (kept in cache, bf16 widened once per panel) per call, so
//     each weight byte read from memory serves all n tokens.
//
// Panels are split over a persistent pool of worker goroutines (no goroutine is started
// per product). The kernels are AVX2/FMA assembly where the CPU has it, portable Go
// elsewhere (or with WithPortableKernels).
type CPU struct {
	threads int
	kern    kernels
	pool    *pool
	arena   weightArena  // packed weights
	scratch []cpuScratch // per worker
	h       []float32    // normalized rows for the fused products
	proj    []float32    // ResidualNorm's projection
	xtail   []float32    // the last n%6 rows of a product's input, zero-padded to 6
	bf16    bool         // WithBF16Products: multiply bf16 weights by bf16 inputs (prefill)
	x16     []uint16     // a product's input rounded to bf16, rows of kpad (bf16 math)
	xtail16 []uint16     // its last n%6 rows, zero-padded to 6
	int8    bool         // WithInt8Products: matrices quantized to 8 bits at Upload
	xq      q8Input      // a one-token product's input, quantized (8-bit weights)
	xb      q8Batch      // a several-token product's input, quantized (gemm6x16Q8)
	packed  int8         // WithPackedPanels: 1 on, -1 off, 0 where the kernels are assembly
}

// cpuScratch is one worker's buffers.
type cpuScratch struct {
	wbuf, ubuf  []float32 // a bf16 panel widened to f32 (prefill)
	pbuf, pbuf2 []uint16  // a packed panel decoded to bf16 pairs (prefill, bf16 math)
	tile, tile2 [gemmRows * panelW]float32
	run, run2   []float32 // a run of panels' outputs (decode)
	scores      []float32 // attention scores
	q           []float32 // a query head scaled by 1/√headDim
}

// CPUOption configures NewCPU.
type CPUOption func(*CPU)

// WithPortableKernels makes the engine use the portable Go kernels even where the
// AVX2/FMA assembly could run (to test them, or to compare).
func WithPortableKernels() CPUOption { return func(c *CPU) { c.kern = goKernels } }

// WithBF16Products makes products of bf16 weights by several tokens at once (prefill)
// round their inputs to bf16 and multiply in bf16 pairs with float32 sums, as PyTorch
// does for a bf16 model, on CPUs with AVX512-BF16 (twice the multiply-adds per
// instruction of float32 FMA); elsewhere, and for one token (decode, bound by memory,
// not arithmetic), products stay exact: bf16 weights times float32 inputs. Results
// then differ from the float32 computation by bf16's rounding of the inputs (about
// 3 significant digits), the same order as PyTorch's bf16 results do. With
// WithPortableKernels the Go kernels compute the same bf16 math (slowly; for tests).
func WithBF16Products() CPUOption { return func(c *CPU) { c.bf16 = true } }

// WithInt8Products makes Upload quantize every weight matrix (float32 or bf16) to 8
// bits: blocks of 32 values of a row with one float16 scale each (llama.cpp's Q8_0
// layout idea, see q8.go), a quarter of float32's memory and memory traffic. Products
// quantize their input per block of 32 too and multiply integers: decode (one token)
// with a matrix-vector kernel, prefill (several tokens) with a six-token integer GEMM
// (AVX512-VNNI where the CPU has it). Without VNNI, decode runs the portable Go kernel
// and prefill widens each panel to float32 and multiplies float32 inputs. Results are
// an approximation of the float32 model's, not equal to them: each weight is off by up
// to half its block's scale (max|w|/254), and each input likewise. Vectors (norm
// weights, biases) stay float32.
func WithInt8Products() CPUOption { return func(c *CPU) { c.int8 = true } }

// WithPackedPanels stores weight matrices in packed panels (on) or as they are (off):
// b12 for bf16 weights, every value exactly in 12 bits instead of 16, and b28 for
// float32 weights, in 28 bits instead of 32, each with a small per-panel table (see
// packed.go). Decode, bound by memory, then reads a quarter (bf16) or an eighth
// (float32) fewer bytes; results are the same products of the same values. The default
// is on where the CPU has the AVX512_VBMI kernels that read them, off elsewhere (the
// portable Go reader is slower than reading unpacked panels). A matrix whose panels
// have too many weights outside their tables stays unpacked either way; 8-bit weights
// (WithInt8Products) are never packed.
func WithPackedPanels(on bool) CPUOption {
	return func(c *CPU) {
		c.packed = -1
		if on {
			c.packed = 1
		}
	}
}

// usePacked reports whether matrices are stored in packed panels.
func (c *CPU) usePacked() bool { return c.packed == 1 || c.packed == 0 && c.kern.packedNative }

// bf16Math reports whether products of bf16 weights by several tokens use bf16 math.
func (c *CPU) bf16Math() bool { return c.bf16 && c.kern.gemm6x16BF16 != nil }

// NewCPU returns a CPU engine using threads workers (<= 0: GOMAXPROCS). Its worker
// goroutines live until Close.
func NewCPU(threads int, opts ...CPUOption) *CPU {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	c := &CPU{threads: threads, kern: goKernels}
	if k, ok := asmKernels(); ok {
		c.kern = k
	}
	for _, o := range opts {
		o(c)
	}
	c.pool = newPool(threads)
	c.scratch = make([]cpuScratch, threads)
	return c
}

// Threads returns the number of workers a product is split over.
func (c *CPU) Threads() int { return c.threads }

// Name describes the engine.
func (c *CPU) Name() string {
	if c.int8 {
		return fmt.Sprintf("cpu (%d threads, %s, int8 weights: %s)", c.threads, c.kern.name, c.kern.q8name)
	}
	extra := ""
	if c.bf16Math() {
		extra += ", bf16 math"
	}
	if c.usePacked() {
		extra += ", packed panels"
	}
	return fmt.Sprintf("cpu (%d threads, %s%s)", c.threads, c.kern.name, extra)
}

// cpuWeight is a host matrix in panels.
type cpuWeight struct {
	name       string
	rows, cols int
	f32        []float32      // packed panels (float32 weights)
	bf         []uint16       // packed panels (bfloat16 weights)
	pairs      bool           // bf holds panels of pairs, [ceil(cols/2)][16][2] (bf16 math); b12: prefill decodes it to pairs
	pk         *packedWeights // packed panels (WithPackedPanels): b12 for bf16, b28 for float32
	q8         []byte         // packed q8 panels (8-bit weights, see q8.go)
	vec        []float32      // the row of a [1, n] weight (norm weights, biases)
}

// bfPanel returns panel p of a bf16 weight, in its layout ([cols][16], or pairs).
func (w *cpuWeight) bfPanel(p int) []uint16 {
	size := w.cols * panelW
	if w.pairs {
		size = pairPanelSize(w.cols)
	}
	return w.bf[p*size : (p+1)*size]
}

// WeightFormat describes how the engine stores w: "f32", "bf16", "bf16 pairs" (bf16
// math), "b12 (N exceptions)" or "b28 (N exceptions)" (packed bf16 or float32, see
// WithPackedPanels), "int8" or "vector" (a [1, n] weight),
// or an error for a weight another engine uploaded.
func (c *CPU) WeightFormat(w Weight) (string, error) {
	cw, err := c.weight(w)
	if err != nil {
		return "", err
	}
	switch {
	case cw.rows == 1:
		return "vector", nil
	case cw.q8 != nil:
		return "int8", nil
	case cw.pk != nil:
		return fmt.Sprintf("%s (%d exceptions)", cw.pk.format(), len(cw.pk.exc)), nil
	case cw.pairs:
		return "bf16 pairs", nil
	case cw.bf != nil:
		return "bf16", nil
	}
	return "f32", nil
}

func (w *cpuWeight) Name() string        { return w.name }
func (w *cpuWeight) Shape() tensor.Shape { return tensor.Shape{w.rows, w.cols} }
func (w *cpuWeight) panels() int         { return (w.rows + panelW - 1) / panelW }

// Upload packs t (a [rows, cols] matrix of float32, or of uint16 bfloat16 bits) into
// panels; t is not kept.
func (c *CPU) Upload(name string, t *tensor.Dense) (Weight, error) {
	s := t.Shape()
	if len(s) != 2 || s[0] <= 0 || s[1] <= 0 {
		return nil, fmt.Errorf("model: cpu engine: weight %q has shape %v, want a matrix", name, s)
	}
	w := &cpuWeight{name: name, rows: s[0], cols: s[1]}
	if c.int8 && w.rows > 1 {
		return c.uploadQ8(w, t)
	}
	switch t.Dtype() {
	case tensor.Float32:
		d := t.Float32s()
		bits := unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(d))), len(d))
		if packWeight(c, w, func(r int) []uint32 { return bits[r*w.cols:] }) {
			break
		}
		w.f32 = packPanels(c.pool, arenaSlice[float32](&c.arena, panelsLen(w.rows, w.cols)), w.rows, w.cols, func(r int) []float32 { return d[r*w.cols:] })
		if w.rows == 1 {
			w.vec = append([]float32(nil), d[:w.cols]...)
		}
	case tensor.Uint16:
		d := t.Data().([]uint16)
		get := func(r int) []uint16 { return d[r*w.cols:] }
		if packWeight(c, w, get) {
			w.pairs = c.bf16Math()
			break
		}
		if c.bf16Math() { // the layout the bf16 GEMM reads; decode reads it as well
			w.bf, w.pairs = packPairPanels(c.pool, arenaSlice[uint16](&c.arena, pairPanelsLen(w.rows, w.cols)), w.rows, w.cols, get), true
		} else {
			w.bf = packPanels(c.pool, arenaSlice[uint16](&c.arena, panelsLen(w.rows, w.cols)), w.rows, w.cols, get)
		}
		if w.rows == 1 {
			w.vec = make([]float32, w.cols)
			widenBF16Go(w.vec, d[:w.cols])
		}
	default:
		return nil, fmt.Errorf("model: cpu engine: weight %q has dtype %v, want float32 or uint16 (bfloat16 bits)", name, t.Dtype())
	}
	return w, nil
}

// packWeight stores matrix w (row r from get: bf16 or float32 bits) in packed panels
// when the engine packs (WithPackedPanels) and the matrix fits (see packedMaxExcPer),
// and reports whether it did. A matrix that does not fit leaves its packed bytes unused
// in the arena: rare, and at most seven eighths of its size.
func packWeight[T uint16 | uint32](c *CPU, w *cpuWeight, get func(r int) []T) bool {
	if w.rows == 1 || !c.usePacked() {
		return false
	}
	low := int(unsafe.Sizeof(T(0))) - 1
	b, ok := packPacked(c.pool, arenaSlice[byte](&c.arena, packedLen(w.rows, w.cols, low)), w.rows, w.cols, get)
	if ok {
		w.pk = &b
	}
	return ok
}

// uploadQ8 quantizes a float32 or bf16 matrix into q8 panels.
func (c *CPU) uploadQ8(w *cpuWeight, t *tensor.Dense) (Weight, error) {
	var get func(r int, buf []float32) []float32
	switch t.Dtype() {
	case tensor.Float32:
		d := t.Float32s()
		get = func(r int, _ []float32) []float32 { return d[r*w.cols : (r+1)*w.cols] }
	case tensor.Uint16:
		d := t.Data().([]uint16)
		get = func(r int, buf []float32) []float32 {
			widenBF16Go(buf, d[r*w.cols:(r+1)*w.cols])
			return buf
		}
	default:
		return nil, fmt.Errorf("model: cpu engine: weight %q has dtype %v, want float32 or uint16 (bfloat16 bits)", w.name, t.Dtype())
	}
	size := w.panels() * q8PanelBytes(w.cols)
	w.q8 = packQ8Panels(c.pool, arenaSlice[byte](&c.arena, size), w.rows, w.cols, get)
	return w, nil
}

func (c *CPU) weight(w Weight) (*cpuWeight, error) {
	cw, ok := w.(*cpuWeight)
	if !ok || cw == nil {
		name := "<nil>"
		if w != nil {
			name = w.Name()
		}
		return nil, fmt.Errorf("model: cpu engine: weight %q was not uploaded by this engine", name)
	}
	return cw, nil
}

// vector resolves an optional [1, n] weight (nil: none) to its values.
func (c *CPU) vector(w Weight, n int) ([]float32, error) {
	if w == nil {
		return nil, nil
	}
	cw, err := c.weight(w)
	if err != nil {
		return nil, err
	}
	if cw.vec == nil || cw.cols != n {
		return nil, fmt.Errorf("model: cpu engine: %q has shape [%d %d], want a vector of %d", cw.name, cw.rows, cw.cols, n)
	}
	return cw.vec, nil
}

// Alloc returns a host activation.
func (c *CPU) Alloc(rows, cols int) (*tensor.Dense, error) {
	if rows <= 0 || cols <= 0 {
		return nil, fmt.Errorf("model: cpu engine: activation of shape [%d %d]", rows, cols)
	}
	return tensor.New(tensor.WithShape(rows, cols), tensor.WithBacking(make([]float32, rows*cols))), nil
}

// floats returns the backing slice of a float32 Dense.
func floats(t *tensor.Dense) ([]float32, error) {
	if t == nil {
		return nil, fmt.Errorf("model: nil tensor")
	}
	if t.Dtype() != tensor.Float32 {
		return nil, fmt.Errorf("model: tensor of dtype %v, want float32", t.Dtype())
	}
	return t.Float32s(), nil
}

// prodItem is one product of a fused call: dst[t*ldd+o] (+)= x_t·w_o + bias[o], or,
// with up set, act(x_t·w_o + bias[o]) · (x_t·up_o + upBias[o]).
type prodItem struct {
	w, up        *cpuWeight
	bias, upBias []float32
	dst          []float32
	ldd          int
	add          bool
	act          Activation // with up
}

// products runs items on the n rows of xs (n × cols, cols shared by all items) in
// one pass of the pool over all their panels.
func (c *CPU) products(xs []float32, n int, items []prodItem) {
	cols := items[0].w.cols
	units, work := 0, 0
	for i := range items {
		units += items[i].w.panels()
		work += items[i].w.rows * cols * n
		if items[i].up != nil {
			work += items[i].up.rows * cols * n
		}
	}
	if r := n % gemmRows; n > 1 && r != 0 {
		c.xtail = growFloats(c.xtail, gemmRows*cols)
		clear(c.xtail)
		copy(c.xtail, xs[(n-r)*cols:n*cols])
	}
	q8gemm := false
	if c.int8 {
		for i := range items {
			if items[i].w.q8 == nil {
				continue
			}
			if n == 1 {
				quantizeQ8Input(c.kern.quantQ8, &c.xq, xs[:cols])
			} else if c.kern.gemm6x16Q8 != nil {
				quantizeQ8Batch(c.pool, c.kern.quantQ8, &c.xb, xs, n, cols)
				q8gemm = true
			}
			break
		}
	}
	var x16 bf16Input
	if n > 1 && c.bf16Math() {
		for i := range items {
			if items[i].w.pairs {
				x16 = c.bf16Input(xs, n, cols)
				break
			}
		}
	}
	c.pool.run(units, work, func(worker, lo, hi int) {
		s := &c.scratch[worker]
		it, base := 0, 0
		if n == 1 { // decode: runs of consecutive panels of one item per kernel call
			for u := lo; u < hi; {
				for u-base >= items[it].w.panels() {
					base += items[it].w.panels()
					it++
				}
				cnt := min(hi-u, items[it].w.panels()-(u-base))
				c.gemvRun(s, xs, &items[it], u-base, cnt)
				u += cnt
			}
			return
		}
		for u := lo; u < hi; u++ {
			for u-base >= items[it].w.panels() {
				base += items[it].w.panels()
				it++
			}
			if q8gemm && items[it].w.q8 != nil && (items[it].up == nil || items[it].up.q8 != nil) {
				c.panelQ8(s, n, &items[it], u-base)
			} else if x16.rows != nil && items[it].w.pairs && (items[it].up == nil || items[it].up.pairs) {
				c.panelBF16(s, x16, n, &items[it], u-base)
			} else {
				c.panel(s, xs, n, &items[it], u-base)
			}
		}
	})
}

// bf16Input is a product's input rounded to bf16 for bf16 math: n rows of kpad (the
// row length rounded up to even, zero-padded), and the last n%6 rows again, zero-padded
// to six rows (nil when n%6 == 0).
type bf16Input struct {
	rows, tail []uint16
	kpad       int
}

// bf16Input rounds the n rows of xs (cols each) to bf16.
func (c *CPU) bf16Input(xs []float32, n, cols int) bf16Input {
	kpad := (cols + 1) &^ 1
	c.x16 = growU16(c.x16, n*kpad)
	in := bf16Input{rows: c.x16[:n*kpad], kpad: kpad}
	for t := 0; t < n; t++ {
		row := in.rows[t*kpad : (t+1)*kpad]
		c.kern.toBF16(row[:cols], xs[t*cols:(t+1)*cols])
		clear(row[cols:])
	}
	if r := n % gemmRows; r != 0 {
		c.xtail16 = growU16(c.xtail16, gemmRows*kpad)
		in.tail = c.xtail16[:gemmRows*kpad]
		clear(in.tail)
		copy(in.tail, in.rows[(n-r)*kpad:])
	}
	return in
}

func growU16(b []uint16, n int) []uint16 {
	if cap(b) < n {
		return make([]uint16, n)
	}
	return b[:n]
}

// panelBF16 is panel for a bf16 weight stored as pairs (bf16 math): the panel (and
// up's) is multiplied by six tokens at a time.
func (c *CPU) panelBF16(s *cpuScratch, in bf16Input, n int, it *prodItem, p int) {
	w := it.w
	k := w.cols
	kp := (k + 1) / 2
	o0 := p * panelW
	width := min(panelW, w.rows-o0)
	wp := c.pairPanel(w, p, &s.pbuf)
	var up []uint16
	if it.up != nil {
		up = c.pairPanel(it.up, p, &s.pbuf2)
	}
	for b := 0; b < n; b += gemmRows {
		xb := in.rows[b*in.kpad:]
		if b+gemmRows > n {
			xb = in.tail
		}
		c.kern.gemm6x16BF16(xb, in.kpad, wp, kp, &s.tile)
		if up != nil {
			c.kern.gemm6x16BF16(xb, in.kpad, up, kp, &s.tile2)
		}
		c.emitBlock(s, it, b, n, o0, width, up != nil)
	}
}

// pairPanel returns panel p of a weight stored for bf16 math (w.pairs): its packed
// pairs, or its b12 panel decoded into buf with the exceptions in place.
func (c *CPU) pairPanel(w *cpuWeight, p int, buf *[]uint16) []uint16 {
	if w.pk == nil {
		return w.bfPanel(p)
	}
	k := w.cols
	*buf = growU16(*buf, pairPanelSize(k))
	c.kern.decodeB12Pairs(*buf, w.pk.panels(p, 1), k)
	for _, e := range w.pk.excs(p) {
		i, j := int(e.at)/panelW, int(e.at)%panelW
		(*buf)[((i/2)*panelW+j)*2+i%2] = uint16(math.Float32bits(e.val) >> 16)
	}
	return *buf
}

// panelQ8 is panel for q8 weights with the integer GEMM: the quantized input c.xb
// times the panel (and up's), six tokens at a time.
func (c *CPU) panelQ8(s *cpuScratch, n int, it *prodItem, p int) {
	w := it.w
	nb := c.xb.nb
	size := nb * q8BlockBytes
	o0 := p * panelW
	width := min(panelW, w.rows-o0)
	wp := w.q8[p*size : (p+1)*size]
	var up []byte
	if it.up != nil {
		up = it.up.q8[p*size : (p+1)*size]
	}
	ldx := nb * q8Block
	for b := 0; b < n; b += gemmRows {
		g := b / gemmRows
		x := c.xb.q[b*ldx:]
		xs, xc := c.xb.d[g*nb*gemmRows:], c.xb.corr[g*nb*gemmRows:]
		c.kern.gemm6x16Q8(x, ldx, xs, xc, wp, nb, &s.tile)
		if up != nil {
			c.kern.gemm6x16Q8(x, ldx, xs, xc, up, nb, &s.tile2)
		}
		c.emitBlock(s, it, b, n, o0, width, up != nil)
	}
}

// emitBlock stores the outputs of one block of up to six tokens (rows b..) of a panel
// from s.tile (and s.tile2 for a SwiGLU item).
func (c *CPU) emitBlock(s *cpuScratch, it *prodItem, b, n, o0, width int, swiglu bool) {
	for t := 0; t < gemmRows && b+t < n; t++ {
		g := s.tile[t*panelW : t*panelW+width]
		if swiglu {
			c.glu(g, s.tile2[t*panelW:t*panelW+width], it.bias, it.upBias, o0, it.act)
			c.emit(it, b+t, o0, g, nil)
		} else {
			c.emit(it, b+t, o0, g, it.bias)
		}
	}
}

// gemvRun computes panels p0..p0+cnt-1 of an item for one token (decode) with one
// kernel call per weight, then applies bias or SwiGLU and stores the outputs.
func (c *CPU) gemvRun(s *cpuScratch, x []float32, it *prodItem, p0, cnt int) {
	w := it.w
	o0 := p0 * panelW
	width := min(cnt*panelW, w.rows-o0)
	s.run = growFloats(s.run, cnt*panelW)
	g := s.run
	c.gemvPanels(w, p0, cnt, x, g)
	if it.up != nil {
		s.run2 = growFloats(s.run2, cnt*panelW)
		u := s.run2
		c.gemvPanels(it.up, p0, cnt, x, u)
		c.glu(g[:width], u[:width], it.bias, it.upBias, o0, it.act)
		c.emit(it, 0, o0, g[:width], nil)
		return
	}
	c.emit(it, 0, o0, g[:width], it.bias)
}

// gemvPanels computes panels p0..p0+cnt-1 of w times the vector x into out[:cnt*16].
func (c *CPU) gemvPanels(w *cpuWeight, p0, cnt int, x, out []float32) {
	k := w.cols
	switch {
	case w.q8 != nil:
		size := q8PanelBytes(k)
		c.kern.gemvQ8(&c.xq, w.q8[p0*size:(p0+cnt)*size], out, cnt)
	case w.pk != nil:
		c.kern.gemvPacked(x, w.pk.panels(p0, cnt), k, w.pk.low, out, cnt)
		for p := 0; p < cnt; p++ {
			for _, e := range w.pk.excs(p0 + p) {
				out[p*panelW+int(e.at)%panelW] += e.val * x[e.at/panelW]
			}
		}
	case w.pairs:
		for p := 0; p < cnt; p++ {
			c.kern.gemvPairs(x, w.bfPanel(p0+p), k, out[p*panelW:])
		}
	case w.bf != nil:
		c.kern.gemvBF16(x, w.bf[p0*k*panelW:(p0+cnt)*k*panelW], k, out, cnt)
	default:
		c.kern.gemvF32(x, w.f32[p0*k*panelW:(p0+cnt)*k*panelW], k, out, cnt)
	}
}

// panel computes one panel (16 outputs) of an item for all n rows (n > 1).
func (c *CPU) panel(s *cpuScratch, xs []float32, n int, it *prodItem, p int) {
	w := it.w
	cols := w.cols
	o0 := p * panelW
	width := min(panelW, w.rows-o0)
	wp := c.panelF32(w, p, &s.wbuf)
	var up []float32
	if it.up != nil {
		up = c.panelF32(it.up, p, &s.ubuf)
	}
	for b := 0; b < n; b += gemmRows {
		xb := xs[b*cols:]
		if b+gemmRows > n {
			xb = c.xtail
		}
		c.kern.gemm6x16(xb, cols, wp, cols, &s.tile)
		if up != nil {
			c.kern.gemm6x16(xb, cols, up, cols, &s.tile2)
		}
		c.emitBlock(s, it, b, n, o0, width, up != nil)
	}
}

// panelF32 returns panel p of w as float32: the packed data itself, or a bf16 panel
// widened into buf (once per panel per product, reused by every block of tokens).
func (c *CPU) panelF32(w *cpuWeight, p int, buf *[]float32) []float32 {
	k := w.cols
	if w.q8 != nil {
		*buf = growFloats(*buf, k*panelW)
		size := q8PanelBytes(k)
		c.kern.dequantQ8(*buf, w.q8[p*size:(p+1)*size], k)
		return *buf
	}
	if w.pk != nil {
		*buf = growFloats(*buf, pairPanelSize(k))
		c.kern.decodePacked(*buf, w.pk.panels(p, 1), k, w.pk.low)
		for _, e := range w.pk.excs(p) {
			(*buf)[e.at] = e.val
		}
		return *buf
	}
	if w.bf == nil {
		return w.f32[p*k*panelW : (p+1)*k*panelW]
	}
	*buf = growFloats(*buf, k*panelW)
	if w.pairs { // only when a fused product mixes dtypes
		wp := w.bfPanel(p)
		for i := 0; i < k; i++ {
			for j := 0; j < panelW; j++ {
				(*buf)[i*panelW+j] = bf16Float(wp[((i/2)*panelW+j)*2+i%2])
			}
		}
		return *buf
	}
	c.kern.widenBF16(*buf, w.bfPanel(p))
	return *buf
}

// emit stores (or adds) one row's outputs o0.. of a panel.
func (c *CPU) emit(it *prodItem, t, o0 int, vals, bias []float32) {
	d := it.dst[t*it.ldd+o0 : t*it.ldd+o0+len(vals)]
	if bias != nil {
		b := bias[o0 : o0+len(vals)]
		for j := range vals {
			vals[j] += b[j]
		}
	}
	if it.add {
		for j, v := range vals {
			d[j] += v
		}
	} else {
		copy(d, vals)
	}
}

// glu writes g[j] = act(g[j]+bg[o0+j]) · (u[j]+bu[o0+j]) (nil biases: none).
func (c *CPU) glu(g, u, bg, bu []float32, o0 int, act Activation) {
	u = u[:len(g)]
	if bg != nil {
		for j := range g {
			g[j] += bg[o0+j]
		}
	}
	if bu != nil {
		for j := range u {
			u[j] += bu[o0+j]
		}
	}
	if act == GELUTanh {
		GELUTanhMul(g, u)
		return
	}
	c.kern.siluMul(g, u)
}

func growFloats(b []float32, n int) []float32 {
	if cap(b) < n {
		return make([]float32, n)
	}
	return b[:n]
}

// checkProduct checks a product's operands: x is [n, w.cols] (or a vector of cols when
// n is 1) and dst [n, rows] of w.
func checkProduct(op string, w *cpuWeight, x, dst *tensor.Dense, vector bool) (xs, ds []float32, n int, err error) {
	if xs, err = floats(x); err != nil {
		return nil, nil, 0, err
	}
	if ds, err = floats(dst); err != nil {
		return nil, nil, 0, err
	}
	if vector {
		if len(xs) != w.cols || len(ds) != w.rows {
			return nil, nil, 0, fmt.Errorf("model: %s %q [%d %d]: x has %d elements, dst %d", op, w.name, w.rows, w.cols, len(xs), len(ds))
		}
		return xs, ds, 1, nil
	}
	xsh, dsh := x.Shape(), dst.Shape()
	if len(xsh) != 2 || len(dsh) != 2 || xsh[1] != w.cols || dsh[1] != w.rows || xsh[0] != dsh[0] {
		return nil, nil, 0, fmt.Errorf("model: %s %q [%d %d]: x has shape %v, dst %v", op, w.name, w.rows, w.cols, xsh, dsh)
	}
	return xs, ds, xsh[0], nil
}

// MatVec computes dst = w·x.
func (c *CPU) MatVec(dst, x *tensor.Dense, w Weight) error {
	cw, err := c.weight(w)
	if err != nil {
		return err
	}
	xs, ds, _, err := checkProduct("matvec", cw, x, dst, true)
	if err != nil {
		return err
	}
	c.products(xs, 1, []prodItem{{w: cw, dst: ds, ldd: cw.rows}})
	return nil
}

// MatMul computes dst = x·wᵀ.
func (c *CPU) MatMul(dst, x *tensor.Dense, w Weight) error {
	cw, err := c.weight(w)
	if err != nil {
		return err
	}
	xs, ds, n, err := checkProduct("matmul", cw, x, dst, false)
	if err != nil {
		return err
	}
	c.products(xs, n, []prodItem{{w: cw, dst: ds, ldd: cw.rows}})
	return nil
}

// linear resolves a projection and checks it against x (cols) and dst (n rows).
func (c *CPU) linear(op string, l Linear, x, dst *tensor.Dense) (prodItem, int, error) {
	cw, err := c.weight(l.W)
	if err != nil {
		return prodItem{}, 0, err
	}
	_, ds, n, err := checkProduct(op, cw, x, dst, false)
	if err != nil {
		return prodItem{}, 0, err
	}
	b, err := c.vector(l.B, cw.rows)
	if err != nil {
		return prodItem{}, 0, err
	}
	return prodItem{w: cw, bias: b, dst: ds, ldd: cw.rows}, n, nil
}

// normRows writes RMSNorm of the n rows of x into c.h and returns it.
func (c *CPU) normRows(x *tensor.Dense, norm Weight, eps float32) ([]float32, int, error) {
	xs, err := floats(x)
	if err != nil {
		return nil, 0, err
	}
	sh := x.Shape()
	if len(sh) != 2 {
		return nil, 0, fmt.Errorf("model: rmsnorm: x has shape %v, want [n, cols]", sh)
	}
	n, cols := sh[0], sh[1]
	g, err := c.vector(norm, cols)
	if err != nil {
		return nil, 0, err
	}
	c.h = growFloats(c.h, n*cols)
	for t := 0; t < n; t++ {
		RMSNorm(c.h[t*cols:(t+1)*cols], xs[t*cols:(t+1)*cols], g, eps)
	}
	return c.h, n, nil
}

// NormMatMul normalizes x's rows, then runs every projection in one pass of the pool.
func (c *CPU) NormMatMul(dsts []*tensor.Dense, x *tensor.Dense, norm Weight, eps float32, ls []Linear) error {
	if len(dsts) != len(ls) || len(ls) == 0 {
		return fmt.Errorf("model: normmatmul: %d outputs for %d projections", len(dsts), len(ls))
	}
	items := make([]prodItem, len(ls))
	for i, l := range ls {
		it, _, err := c.linear("normmatmul", l, x, dsts[i])
		if err != nil {
			return err
		}
		items[i] = it
	}
	h, n, err := c.normRows(x, norm, eps)
	if err != nil {
		return err
	}
	c.products(h, n, items)
	return nil
}

// NormGLU normalizes x's rows and computes act(gate)·up panel by panel.
func (c *CPU) NormGLU(dst, x *tensor.Dense, norm Weight, eps float32, gate, up Linear, act Activation) error {
	if act != SiLU && act != GELUTanh {
		return fmt.Errorf("model: glu: unknown activation %v", act)
	}
	it, _, err := c.linear("glu", gate, x, dst)
	if err != nil {
		return err
	}
	ut, _, err := c.linear("glu", up, x, dst)
	if err != nil {
		return err
	}
	it.up, it.upBias, it.act = ut.w, ut.bias, act
	h, n, err := c.normRows(x, norm, eps)
	if err != nil {
		return err
	}
	c.products(h, n, []prodItem{it})
	return nil
}

// Residual adds in·l.Wᵀ + l.B to x.
func (c *CPU) Residual(x, in *tensor.Dense, l Linear) error {
	it, n, err := c.linear("residual", l, in, x)
	if err != nil {
		return err
	}
	it.add = true
	xs, _ := floats(in)
	c.products(xs, n, []prodItem{it})
	return nil
}

// ResidualNorm computes in·l.Wᵀ + l.B into a scratch buffer, normalizes each row and
// adds it to x.
func (c *CPU) ResidualNorm(x, in *tensor.Dense, l Linear, norm Weight, eps float32) error {
	it, n, err := c.linear("residualnorm", l, in, x)
	if err != nil {
		return err
	}
	cols := it.w.rows
	g, err := c.vector(norm, cols)
	if err != nil {
		return err
	}
	xs, _ := floats(x)
	ins, _ := floats(in)
	c.proj = growFloats(c.proj, n*cols)
	it.dst = c.proj
	c.products(ins, n, []prodItem{it})
	for t := 0; t < n; t++ {
		row := c.proj[t*cols : (t+1)*cols]
		RMSNorm(row, row, g, eps)
		dst := xs[t*cols : (t+1)*cols]
		for i, v := range row {
			dst[i] += v
		}
	}
	return nil
}

// HeadRMSNorm normalizes every head of every row of x in place.
func (c *CPU) HeadRMSNorm(x *tensor.Dense, norm Weight, eps float32) error {
	xs, err := floats(x)
	if err != nil {
		return err
	}
	cw, err := c.weight(norm)
	if err != nil {
		return err
	}
	d := cw.cols
	g, err := c.vector(norm, d)
	if err != nil {
		return err
	}
	sh := x.Shape()
	if len(sh) != 2 || sh[1]%d != 0 {
		return fmt.Errorf("model: head rmsnorm: x has shape %v, not rows of heads of %d (%q)", sh, d, cw.name)
	}
	for h := 0; h+d <= len(xs); h += d {
		RMSNorm(xs[h:h+d], xs[h:h+d], g, eps)
	}
	return nil
}

// RMSNorm normalizes the last rows of x into dst.
func (c *CPU) RMSNorm(dst, x *tensor.Dense, norm Weight, eps float32) error {
	xs, err := floats(x)
	if err != nil {
		return err
	}
	ds, err := floats(dst)
	if err != nil {
		return err
	}
	sh := x.Shape()
	cols := sh[len(sh)-1]
	if len(ds)%cols != 0 || len(ds) > len(xs) {
		return fmt.Errorf("model: rmsnorm: dst has %d elements for rows of %d (x %v)", len(ds), cols, sh)
	}
	g, err := c.vector(norm, cols)
	if err != nil {
		return err
	}
	off := len(xs) - len(ds)
	for t := 0; t < len(ds); t += cols {
		RMSNorm(ds[t:t+cols], xs[off+t:off+t+cols], g, eps)
	}
	return nil
}

// RoPE rotates the first rotaryDim values of the heads of every row of x.
func (c *CPU) RoPE(x *tensor.Dense, headDim, rotaryDim int, cos, sin []float32) error {
	xs, err := floats(x)
	if err != nil {
		return err
	}
	sh := x.Shape()
	if len(sh) != 2 || headDim <= 0 || sh[1]%headDim != 0 {
		return fmt.Errorf("model: rope: x has shape %v, not rows of heads of %d", sh, headDim)
	}
	if rotaryDim <= 0 || rotaryDim%2 != 0 || rotaryDim > headDim {
		return fmt.Errorf("model: rope: rotary dimension %d for heads of %d (want a positive even number <= the head's)", rotaryDim, headDim)
	}
	n, cols, half := sh[0], sh[1], rotaryDim/2
	if len(cos) < n*half || len(sin) < n*half {
		return fmt.Errorf("model: rope: %d cos and %d sin values for %d rows of %d pairs", len(cos), len(sin), n, half)
	}
	for t := 0; t < n; t++ {
		rotateHeadsPartial(xs[t*cols:(t+1)*cols], headDim, rotaryDim, cos[t*half:(t+1)*half], sin[t*half:(t+1)*half])
	}
	return nil
}

// cpuKV is a host KV cache: per layer [capPos, kvDim] keys and values.
type cpuKV struct {
	kvHeads, headDim, maxPos int
	capPos                   int
	k, v                     [][]float32
}

func (kv *cpuKV) Cap() int { return kv.capPos }

// NewKV returns an empty host cache.
func (c *CPU) NewKV(layers, kvHeads, headDim, maxPositions int) (KV, error) {
	if layers <= 0 || kvHeads <= 0 || headDim <= 0 {
		return nil, fmt.Errorf("model: cpu engine: kv cache of %d layers, %d heads of %d", layers, kvHeads, headDim)
	}
	return &cpuKV{kvHeads: kvHeads, headDim: headDim, maxPos: maxPositions,
		k: make([][]float32, layers), v: make([][]float32, layers)}, nil
}

// grow makes room for need positions, keeping the first used.
func (kv *cpuKV) grow(need, used int) {
	if need <= kv.capPos {
		return
	}
	kvDim := kv.kvHeads * kv.headDim
	newCap := max(need, 2*kv.capPos, 64)
	if kv.maxPos > 0 {
		newCap = max(need, min(newCap, kv.maxPos))
	}
	for l := range kv.k {
		k := make([]float32, newCap*kvDim)
		v := make([]float32, newCap*kvDim)
		copy(k, kv.k[l][:min(len(kv.k[l]), used*kvDim)])
		copy(v, kv.v[l][:min(len(kv.v[l]), used*kvDim)])
		kv.k[l], kv.v[l] = k, v
	}
	kv.capPos = newCap
}

// Attention appends k and v to the cache and attends, heads spread over the pool.
func (c *CPU) Attention(out, q, k, v *tensor.Dense, kvh KV, layer, pos0 int, opt AttentionOptions) error {
	kv, ok := kvh.(*cpuKV)
	if !ok || kv == nil {
		return fmt.Errorf("model: cpu engine: kv cache not made by this engine")
	}
	if opt.Window < 0 || opt.Scale < 0 || math.IsNaN(float64(opt.Scale)) || math.IsInf(float64(opt.Scale), 0) {
		return fmt.Errorf("model: attention: window %d, scale %g", opt.Window, opt.Scale)
	}
	if layer < 0 || layer >= len(kv.k) || pos0 < 0 {
		return fmt.Errorf("model: attention: layer %d of %d, position %d", layer, len(kv.k), pos0)
	}
	qs, err := floats(q)
	if err != nil {
		return err
	}
	os, err := floats(out)
	if err != nil {
		return err
	}
	ks, err := floats(k)
	if err != nil {
		return err
	}
	vs, err := floats(v)
	if err != nil {
		return err
	}
	hd := kv.headDim
	kvDim := kv.kvHeads * hd
	sh := q.Shape()
	if len(sh) != 2 || sh[1]%kvDim != 0 || len(os) != len(qs) || len(ks) != sh[0]*kvDim || len(vs) != len(ks) {
		return fmt.Errorf("model: attention: q %v, out %v, k %v, v %v for %d kv heads of %d", sh, out.Shape(), k.Shape(), v.Shape(), kv.kvHeads, hd)
	}
	n, qDim := sh[0], sh[1]
	heads := qDim / hd
	group := heads / kv.kvHeads
	kv.grow(pos0+n, pos0)
	kc, vc := kv.k[layer], kv.v[layer]
	copy(kc[pos0*kvDim:], ks)
	copy(vc[pos0*kvDim:], vs)
	scale := opt.Scale
	if scale == 0 {
		scale = float32(1 / math.Sqrt(float64(hd)))
	}
	kern := &c.kern
	work := heads * n * (pos0 + n) * hd
	c.pool.run(heads, work, func(worker, lo, hi int) {
		s := &c.scratch[worker]
		s.scores = growFloats(s.scores, pos0+n)
		s.q = growFloats(s.q, hd)
		qsc := s.q
		for head := lo; head < hi; head++ {
			kvOff := (head / group) * hd
			for t := 0; t < n; t++ {
				qh := qs[t*qDim+head*hd : t*qDim+(head+1)*hd]
				lo := 0 // first position seen
				if opt.Window > 0 {
					lo = max(0, pos0+t+1-opt.Window)
				}
				span := pos0 + t + 1 - lo
				sc := s.scores[:span]
				for i, v := range qh {
					qsc[i] = v * scale
				}
				kern.scores(sc, qsc, kc[lo*kvDim+kvOff:], kvDim)
				mx := sc[0]
				for _, v := range sc {
					mx = max(mx, v)
				}
				inv := 1 / kern.expSum(sc, mx)
				o := os[t*qDim+head*hd : t*qDim+(head+1)*hd]
				kern.weightedSum(o, sc, vc[lo*kvDim+kvOff:], kvDim)
				for i := range o {
					o[i] *= inv
				}
			}
		}
	})
	return nil
}

// Rows copies embedding rows out of the panels.
func (c *CPU) Rows(dst *tensor.Dense, w Weight, ids []int, scale float32) error {
	cw, err := c.weight(w)
	if err != nil {
		return err
	}
	ds, err := floats(dst)
	if err != nil {
		return err
	}
	cols := cw.cols
	if len(ds) != len(ids)*cols {
		return fmt.Errorf("model: rows of %q: dst has %d elements, want %d×%d", cw.name, len(ds), len(ids), cols)
	}
	for i, id := range ids {
		if id < 0 || id >= cw.rows {
			return fmt.Errorf("model: token id %d at position %d is outside %q (%d rows)", id, i, cw.name, cw.rows)
		}
		p, r := id/panelW, id%panelW
		base := p * cols * panelW
		d := ds[i*cols : (i+1)*cols]
		if cw.q8 != nil {
			size := q8PanelBytes(cols)
			panel := cw.q8[p*size : (p+1)*size]
			for j := range d {
				d[j] = q8Value(panel, r, j)
			}
		} else if cw.pk != nil {
			panel := cw.pk.panels(p, 1)
			for j := range d {
				d[j] = math.Float32frombits(packedBits(panel, cw.pk.low, j, r))
			}
			for _, e := range cw.pk.excs(p) {
				if int(e.at)%panelW == r {
					d[e.at/panelW] = e.val
				}
			}
		} else if cw.pairs {
			base = p * pairPanelSize(cols)
			for j := range d {
				d[j] = math.Float32frombits(uint32(cw.bf[base+((j/2)*panelW+r)*2+j%2]) << 16)
			}
		} else if cw.bf != nil {
			for j := range d {
				d[j] = math.Float32frombits(uint32(cw.bf[base+j*panelW+r]) << 16)
			}
		} else {
			for j := range d {
				d[j] = cw.f32[base+j*panelW+r]
			}
		}
		if scale != 1 {
			for j := range d {
				d[j] *= scale
			}
		}
	}
	return nil
}

// Close stops the worker goroutines.
func (c *CPU) Close() error {
	c.pool.close()
	return nil
}
