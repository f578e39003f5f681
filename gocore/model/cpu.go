package model

import (
	"fmt"
	"runtime"
	"sync"

	"gorgonia.org/tensor"
)

// CPU is the Engine that runs on the host: matrix-vector rows and matrix-matrix row
// blocks are spread over goroutines, and each goroutine runs an AVX2/FMA dot-product
// kernel (a portable Go loop where the CPU lacks it). Weights stay where Upload found
// them (often a memory-mapped safetensors file).
type CPU struct {
	threads int
}

// NewCPU returns a CPU engine using threads goroutines per product (<= 0: GOMAXPROCS).
func NewCPU(threads int) *CPU {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	return &CPU{threads: threads}
}

// Threads returns the number of goroutines a product is split over.
func (c *CPU) Threads() int { return c.threads }

// Name describes the engine.
func (c *CPU) Name() string {
	kernel := "go"
	if kernelAVX2() {
		kernel = "avx2+fma"
	}
	return fmt.Sprintf("cpu (%d threads, %s)", c.threads, kernel)
}

// cpuWeight is a host matrix.
type cpuWeight struct {
	name       string
	data       []float32
	rows, cols int
	dense      *tensor.Dense
}

func (w *cpuWeight) Name() string        { return w.name }
func (w *cpuWeight) Shape() tensor.Shape { return w.dense.Shape() }

// Upload wraps t (a [rows, cols] float32 matrix, or a vector as [1, n]) without copying.
func (c *CPU) Upload(name string, t *tensor.Dense) (Weight, error) {
	if t.Dtype() != tensor.Float32 {
		return nil, fmt.Errorf("model: cpu engine: weight %q has dtype %v, want float32", name, t.Dtype())
	}
	s := t.Shape()
	if len(s) != 2 {
		return nil, fmt.Errorf("model: cpu engine: weight %q has shape %v, want a matrix", name, s)
	}
	return &cpuWeight{name: name, data: t.Float32s(), rows: s[0], cols: s[1], dense: t}, nil
}

func (c *CPU) weight(w Weight) (*cpuWeight, error) {
	cw, ok := w.(*cpuWeight)
	if !ok {
		return nil, fmt.Errorf("model: cpu engine: weight %q was not uploaded by this engine", w.Name())
	}
	return cw, nil
}

// operands resolves a product's weight and the float32 data of its input and output.
func (c *CPU) operands(dst, x *tensor.Dense, w Weight) (cw *cpuWeight, xs, ds []float32, err error) {
	if cw, err = c.weight(w); err != nil {
		return nil, nil, nil, err
	}
	if xs, err = floats(x); err != nil {
		return nil, nil, nil, err
	}
	if ds, err = floats(dst); err != nil {
		return nil, nil, nil, err
	}
	return cw, xs, ds, nil
}

// floats returns the backing slice of a float32 Dense.
func floats(t *tensor.Dense) ([]float32, error) {
	if t.Dtype() != tensor.Float32 {
		return nil, fmt.Errorf("model: tensor of dtype %v, want float32", t.Dtype())
	}
	return t.Float32s(), nil
}

// MatVec computes dst = w·x with the rows of w split over the engine's goroutines.
func (c *CPU) MatVec(dst, x *tensor.Dense, w Weight) error {
	cw, xs, ds, err := c.operands(dst, x, w)
	if err != nil {
		return err
	}
	if len(xs) != cw.cols || len(ds) != cw.rows {
		return fmt.Errorf("model: matvec %q [%d %d]: x has %d elements, dst %d", cw.name, cw.rows, cw.cols, len(xs), len(ds))
	}
	c.parallelRows(cw.rows, cw.rows*cw.cols, func(lo, hi int) { matVecRows(ds, cw.data, cw.cols, xs, lo, hi) })
	return nil
}

// matVecRows computes dst[o] = w[o,:]·x for o in [lo, hi).
func matVecRows(dst, w []float32, cols int, x []float32, lo, hi int) {
	var out [4]float32
	o := lo
	for ; o+4 <= hi; o += 4 {
		dot4(w[o*cols:], cols, x, &out)
		dst[o], dst[o+1], dst[o+2], dst[o+3] = out[0], out[1], out[2], out[3]
	}
	for ; o < hi; o++ {
		dst[o] = dot(w[o*cols:o*cols+cols], x)
	}
}

// MatMul computes dst = x·wᵀ. Each goroutine takes a block of w's rows and, a tile
// of rows at a time (kept in cache), multiplies it with every row of x.
func (c *CPU) MatMul(dst, x *tensor.Dense, w Weight) error {
	cw, xs, ds, err := c.operands(dst, x, w)
	if err != nil {
		return err
	}
	xsh, dsh := x.Shape(), dst.Shape()
	if len(xsh) != 2 || len(dsh) != 2 || xsh[1] != cw.cols || dsh[1] != cw.rows || xsh[0] != dsh[0] {
		return fmt.Errorf("model: matmul %q [%d %d]: x has shape %v, dst %v", cw.name, cw.rows, cw.cols, xsh, dsh)
	}
	n, cols, rows := xsh[0], cw.cols, cw.rows
	if n == 1 {
		return c.MatVec(dst, x, w)
	}
	// A tile of rows small enough to stay in L1/L2 while every x row streams past it.
	tile := max(4, (32<<10)/(4*cols)) &^ 3
	c.parallelRows(rows, rows*cols*n, func(lo, hi int) {
		var out [4]float32
		var out8 [8]float32
		for t0 := lo; t0 < hi; t0 += tile {
			t1 := min(hi, t0+tile)
			t := 0
			// Two x rows at a time against four w rows: the 4×2 register tile.
			for ; t+2 <= n; t += 2 {
				xr := xs[t*cols:]
				d0, d1 := ds[t*rows:t*rows+rows], ds[(t+1)*rows:(t+1)*rows+rows]
				o := t0
				for ; o+4 <= t1; o += 4 {
					dot4x2(cw.data[o*cols:], cols, xr, cols, cols, &out8)
					d0[o], d0[o+1], d0[o+2], d0[o+3] = out8[0], out8[1], out8[2], out8[3]
					d1[o], d1[o+1], d1[o+2], d1[o+3] = out8[4], out8[5], out8[6], out8[7]
				}
				for ; o < t1; o++ {
					d0[o] = dot(cw.data[o*cols:o*cols+cols], xr[:cols])
					d1[o] = dot(cw.data[o*cols:o*cols+cols], xr[cols:2*cols])
				}
			}
			for ; t < n; t++ {
				xr := xs[t*cols : t*cols+cols]
				dr := ds[t*rows : t*rows+rows]
				o := t0
				for ; o+4 <= t1; o += 4 {
					dot4(cw.data[o*cols:], cols, xr, &out)
					dr[o], dr[o+1], dr[o+2], dr[o+3] = out[0], out[1], out[2], out[3]
				}
				for ; o < t1; o++ {
					dr[o] = dot(cw.data[o*cols:o*cols+cols], xr)
				}
			}
		}
	})
	return nil
}

// Rows copies embedding rows.
func (c *CPU) Rows(dst *tensor.Dense, w Weight, ids []int) error {
	cw, err := c.weight(w)
	if err != nil {
		return err
	}
	ds, err := floats(dst)
	if err != nil {
		return err
	}
	if len(ds) != len(ids)*cw.cols {
		return fmt.Errorf("model: rows of %q: dst has %d elements, want %d×%d", cw.name, len(ds), len(ids), cw.cols)
	}
	for i, id := range ids {
		if id < 0 || id >= cw.rows {
			return fmt.Errorf("model: token id %d at position %d is outside %q (%d rows)", id, i, cw.name, cw.rows)
		}
		copy(ds[i*cw.cols:(i+1)*cw.cols], cw.data[id*cw.cols:(id+1)*cw.cols])
	}
	return nil
}

// Close does nothing: the CPU engine holds no resources of its own.
func (c *CPU) Close() error { return nil }

// parallelRows splits [0, rows) into one block per goroutine (multiples of 4 rows) and
// runs f on each; work below a threshold (in multiply-adds) runs on the caller's
// goroutine, where spawning would cost more than it saves.
func (c *CPU) parallelRows(rows, work int, f func(lo, hi int)) {
	parallelFor(c.threads, rows, work, f)
}

func parallelFor(threads, rows, work int, f func(lo, hi int)) {
	const minWork = 1 << 15
	parts := min(threads, max(1, work/minWork))
	if parts <= 1 || rows < 8 {
		f(0, rows)
		return
	}
	chunk := (rows + parts - 1) / parts
	chunk = (chunk + 3) &^ 3
	var wg sync.WaitGroup
	for lo := chunk; lo < rows; lo += chunk {
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			f(lo, hi)
		}(lo, min(rows, lo+chunk))
	}
	f(0, min(rows, chunk))
	wg.Wait()
}
