package model

import (
	"math"
	"sync"
	"sync/atomic"
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
}

var goKernels = kernels{
	name:        "go",
	gemm6x16:    gemm6x16Go,
	gemvF32:     gemvF32Go,
	gemvBF16:    gemvBF16Go,
	widenBF16:   widenBF16Go,
	exp:         expGo,
	expSum:      expSumGo,
	siluMul:     SiLUMul,
	axpy:        axpyGo,
	scores:      scoresGo,
	weightedSum: weightedSumGo,
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
// ceil(rows/16) panels of [cols][16], zero-padded; panels are filled by the pool.
func packPanels[T float32 | uint16](p *pool, rows, cols int, get func(r int) []T) []T {
	panels := (rows + panelW - 1) / panelW
	out := make([]T, panels*cols*panelW)
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
	return out
}

// pool is a fixed set of worker goroutines that split a loop with the caller: work is
// cut into a few chunks per worker, handed out through an atomic counter, so a worker
// slowed by other load on the machine takes fewer chunks instead of holding up the rest.
type pool struct {
	threads int
	mu      sync.Mutex // one loop at a time; workers' scratch is per worker index
	jobs    []chan *poolJob
	closed  bool
}

type poolJob struct {
	f      func(worker, lo, hi int)
	units  int
	chunks int
	next   atomic.Int64
	wg     sync.WaitGroup
}

// minPoolWork is the work (multiply-adds) below which a loop runs on the caller alone:
// waking a worker costs more than it saves.
const minPoolWork = 1 << 15

func newPool(threads int) *pool {
	p := &pool{threads: threads}
	for w := 1; w < threads; w++ {
		ch := make(chan *poolJob, 1)
		p.jobs = append(p.jobs, ch)
		go func(w int) {
			for j := range ch {
				j.work(w)
				j.wg.Done()
			}
		}(w)
	}
	return p
}

func (j *poolJob) work(w int) {
	for {
		c := int(j.next.Add(1) - 1)
		if c >= j.chunks {
			return
		}
		j.f(w, c*j.units/j.chunks, (c+1)*j.units/j.chunks)
	}
}

// run calls f(worker, lo, hi) over disjoint ranges covering [0, units); worker is in
// [0, threads) and no two concurrent calls share one. work (multiply-adds) decides how
// many workers join.
func (p *pool) run(units, work int, f func(worker, lo, hi int)) {
	if units <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	parts := min(p.threads, units, max(1, work/minPoolWork))
	if parts <= 1 || p.closed {
		f(0, 0, units)
		return
	}
	j := &poolJob{f: f, units: units, chunks: min(units, 4*parts)}
	j.wg.Add(parts - 1)
	for w := 1; w < parts; w++ {
		p.jobs[w-1] <- j
	}
	j.work(0)
	j.wg.Wait()
}

// close stops the workers; later loops run on the caller.
func (p *pool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.closed = true
		for _, ch := range p.jobs {
			close(ch)
		}
	}
}
