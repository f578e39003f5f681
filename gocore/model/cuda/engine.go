//go:build cuda

package cuda

import (
	_ "embed"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"unsafe"

	"gorgonia.org/cu"
	"gorgonia.org/tensor"

	"github.com/tetherlm/tether/gocore/model"
)

//go:embed kernels.fatbin
var fatbin string

// Built reports whether this binary has the CUDA engine.
func Built() bool { return true }

const (
	warpRows    = 8    // output rows per block of the matvec kernels (256 threads)
	attnThreads = 512  // block of attn_fused (ATTN_THREADS in kernels.cu)
	argThreads  = 1024 // block of argmax (ARGMAX_THREADS in kernels.cu)
	// maxStagedCols bounds the row a fused norm kernel stages in shared memory (4 bytes
	// each; 32 KiB of the 48 KiB a block gets without opting in); wider rows take the
	// separate rmsnorm launch.
	maxStagedCols = 8192
	// maxSharedScores bounds the cache positions whose scores attn_fused keeps in shared
	// memory (4 bytes each, beside its 8 KiB of partial sums); longer caches use the
	// global scores buffer.
	maxSharedScores = 8192
	// busyWarps is about as many warps as the GPUs this engine targets keep resident
	// (132 SMs × 64 on an H100/H200): a single-row product of fewer rows gives each row
	// several warps (matvec_split).
	busyWarps    = 8192
	scoreLimit   = 32 << 20 // floats of attention scores one launch may use (128 MiB)
	threads      = 256
	maxHeadDim   = 256
	actSiLU      = 0 // the kernels' act argument
	actGELUTanh  = 1
	modeStore    = 0
	modeAdd      = 1
	pinnedParams = 1 << 16 // bytes of the decode step's pinned parameter block
)

// Engine runs gocore/model's forward pass on one CUDA device. It implements
// model.Engine and model.StepEngine. Its methods may be called from any goroutine, one
// at a time (the engine locks itself and makes its context current on the calling
// thread for each call).
type Engine struct {
	mu     sync.Mutex
	dev    cu.Device
	ctx    cu.CUContext
	stream cu.Stream
	mod    cu.Module
	blas   uintptr
	name   string
	noGr   bool
	k      kernels

	acts    map[uintptr]*devBuf // activations made by Alloc, by device address
	freed   []cu.DevicePtr      // activations the garbage collector dropped, freed at the next call
	freeMu  sync.Mutex
	weights []cu.DevicePtr
	scratch map[string]*devBuf // grown on demand: scores, bf16 inputs, gate/up products, staging
	pinned  map[uintptr]*pinBuf
	closed  bool

	// The current Step, if any.
	step   *stepRun
	graphs map[graphKey]*graph
	// gen counts allocations that move memory a recorded graph may use (activations,
	// scratch and pinned buffers, KV caches); a graph recorded at another gen is stale.
	gen int
	// eagerGen[k] is gen after the last eager decode step of k: a step is recorded only
	// when nothing was allocated since (so recording it allocates nothing).
	eagerGen map[graphKey]int
	// graphErr is why recording failed, if it did (the engine then runs decode steps
	// eagerly).
	graphErr  error
	params    unsafe.Pointer // pinned parameter block of decode steps (pinnedParams bytes)
	devParams cu.DevicePtr
}

type kernels struct {
	rmsnorm, matvecBF16, matvecF32, matvec3BF16, matvec3F32, gluBF16, gluF32, addBias, glu, toBF16, scale,
	rowsBF16, rowsF32, rope, kvStore, attnScores, attnAV cu.Function
	// The fused kernels of a decode step: the input norm with the projections that read
	// it, RoPE with the cache store, and attention in one block per head.
	normMatvec3BF16, normMatvec3F32, normGluBF16, normGluF32, ropeStore, attnFused cu.Function
	// Single-row products of few rows: several warps a row.
	matvecSplitBF16, matvecSplitF32 cu.Function
	argmax                          cu.Function // the greedy pick (ArgmaxMatVec)
}

type devBuf struct {
	ptr   cu.DevicePtr
	bytes int
}

type pinBuf struct {
	host  unsafe.Pointer
	bytes int
}

type weight struct {
	name       string
	rows, cols int
	bf16       bool
	ptr        cu.DevicePtr
}

func (w *weight) Name() string        { return w.name }
func (w *weight) Shape() tensor.Shape { return tensor.Shape{w.rows, w.cols} }

type kvCache struct {
	layers, kvHeads, headDim, maxPos int
	capPos, used                     int
	k, v                             []cu.DevicePtr
}

func (kv *kvCache) Cap() int { return kv.capPos }

type graphKey struct {
	seq any
	n   int
}

type graph struct {
	exec    uintptr
	gen     int
	outputs []hostOut
}

// maxGraphs bounds the recorded graphs (each holds its sequence's key, so a sequence
// that is dropped stays reachable until its graph is); past it all are dropped.
const maxGraphs = 16

// hostOut is host memory written by a step (the logits, or the greedy pick): the
// engine's pinned copy is copied into it once the step's work is done. dst points
// into a Go slice, which the hostOut keeps alive.
type hostOut struct {
	dst unsafe.Pointer
	src *pinBuf
}

// stepRun is the state of a Step in progress.
type stepRun struct {
	st                       *model.Step
	capturing                bool
	devIDs                   cu.DevicePtr
	devPos                   cu.DevicePtr
	devCos                   cu.DevicePtr
	devSin                   cu.DevicePtr
	devLocalCos, devLocalSin cu.DevicePtr
	devMask                  cu.DevicePtr // st.Mask on the device (0: none)
	outputs                  []hostOut
}

// New opens the CUDA device, loads the kernels and makes a stream and a cuBLAS handle.
func New(o Options) (eng model.Engine, err error) {
	defer func() {
		if p := recover(); p != nil {
			eng, err = nil, fmt.Errorf("cuda: %v", p)
		}
	}()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	n, err := cu.NumDevices()
	if err != nil {
		return nil, fmt.Errorf("cuda: cuDeviceGetCount: %w", err)
	}
	if o.Device < 0 || o.Device >= n {
		return nil, fmt.Errorf("cuda: device %d requested, %d present", o.Device, n)
	}
	e := &Engine{noGr: o.NoGraphs, acts: map[uintptr]*devBuf{}, scratch: map[string]*devBuf{},
		pinned: map[uintptr]*pinBuf{}, graphs: map[graphKey]*graph{}, eagerGen: map[graphKey]int{}}
	if e.dev, err = cu.GetDevice(o.Device); err != nil {
		return nil, fmt.Errorf("cuda: cuDeviceGet(%d): %w", o.Device, err)
	}
	if e.ctx, err = e.dev.RetainPrimaryCtx(); err != nil {
		return nil, fmt.Errorf("cuda: cuDevicePrimaryCtxRetain: %w", err)
	}
	defer func() {
		if err != nil {
			e.release()
		}
	}()
	if err = cu.SetCurrentContext(e.ctx); err != nil {
		return nil, fmt.Errorf("cuda: cuCtxSetCurrent: %w", err)
	}
	name, _ := e.dev.Name()
	e.name = fmt.Sprintf("cuda:%d (%s)", o.Device, name)
	if e.stream, err = cu.MakeStream(cu.DefaultStream); err != nil {
		return nil, fmt.Errorf("cuda: cuStreamCreate: %w", err)
	}
	if e.mod, err = cu.LoadFatBinary(fatbin); err != nil {
		return nil, fmt.Errorf("cuda: loading the kernels (sm_80/sm_90 SASS, compute_80 PTX) on %s: %w", name, err)
	}
	fns := []struct {
		f    *cu.Function
		name string
	}{
		{&e.k.rmsnorm, "rmsnorm"}, {&e.k.matvecBF16, "matvec_bf16"}, {&e.k.matvecF32, "matvec_f32"},
		{&e.k.matvec3BF16, "matvec3_bf16"}, {&e.k.matvec3F32, "matvec3_f32"},
		{&e.k.gluBF16, "matvec_glu_bf16"}, {&e.k.gluF32, "matvec_glu_f32"}, {&e.k.addBias, "add_bias"},
		{&e.k.glu, "glu"}, {&e.k.toBF16, "to_bf16"}, {&e.k.scale, "scale"}, {&e.k.rowsBF16, "rows_bf16"},
		{&e.k.rowsF32, "rows_f32"}, {&e.k.rope, "rope"}, {&e.k.kvStore, "kv_store"},
		{&e.k.attnScores, "attn_scores"}, {&e.k.attnAV, "attn_av"},
		{&e.k.normMatvec3BF16, "norm_matvec3_bf16"}, {&e.k.normMatvec3F32, "norm_matvec3_f32"},
		{&e.k.normGluBF16, "norm_glu_bf16"}, {&e.k.normGluF32, "norm_glu_f32"},
		{&e.k.ropeStore, "rope_store"}, {&e.k.attnFused, "attn_fused"},
		{&e.k.matvecSplitBF16, "matvec_split_bf16"}, {&e.k.matvecSplitF32, "matvec_split_f32"},
		{&e.k.argmax, "argmax"},
	}
	for _, f := range fns {
		if *f.f, err = e.mod.Function(f.name); err != nil {
			return nil, fmt.Errorf("cuda: kernel %s: %w", f.name, err)
		}
	}
	if e.blas, err = blasCreate(&e.stream); err != nil {
		return nil, err
	}
	if e.params, err = memAllocHost(pinnedParams); err != nil {
		return nil, err
	}
	if e.devParams, err = cu.MemAlloc(pinnedParams); err != nil {
		return nil, fmt.Errorf("cuda: cuMemAlloc: %w", err)
	}
	return e, nil
}

// enter locks the engine and makes its context current on this thread.
func (e *Engine) enter() error {
	e.mu.Lock()
	runtime.LockOSThread()
	if e.closed {
		e.leave()
		return errors.New("cuda: engine used after Close")
	}
	if err := cu.SetCurrentContext(e.ctx); err != nil {
		e.leave()
		return fmt.Errorf("cuda: cuCtxSetCurrent: %w", err)
	}
	if e.step == nil || !e.step.capturing {
		e.drainFreed()
	}
	return nil
}

func (e *Engine) leave() {
	runtime.UnlockOSThread()
	e.mu.Unlock()
}

// locked runs f inside enter/leave, turning a panic into an error.
func (e *Engine) locked(f func() error) (err error) {
	if err := e.enter(); err != nil {
		return err
	}
	defer e.leave()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("cuda: %v", p)
		}
	}()
	return f()
}

// call runs an operation: locked, or directly inside Step (which holds the lock).
func (e *Engine) call(f func() error) error {
	if e.step != nil {
		return f()
	}
	return e.locked(f)
}

func (e *Engine) drainFreed() {
	e.freeMu.Lock()
	fr := e.freed
	e.freed = nil
	e.freeMu.Unlock()
	for _, p := range fr {
		delete(e.acts, uintptr(p))
		_ = cu.MemFree(p)
	}
}

// Name says which device runs the products.
func (e *Engine) Name() string { return e.name }

// Upload copies a weight to the device: matrices keep their dtype (float32 or bf16
// bits in uint16), vectors ([1, n]) become float32.
func (e *Engine) Upload(name string, t *tensor.Dense) (model.Weight, error) {
	var w *weight
	err := e.call(func() error {
		sh := t.Shape()
		if len(sh) != 2 || sh[0] <= 0 || sh[1] <= 0 {
			return fmt.Errorf("cuda: upload %q: shape %v, want [rows, cols]", name, sh)
		}
		w = &weight{name: name, rows: sh[0], cols: sh[1]}
		var src unsafe.Pointer
		var bytes int
		switch d := t.Data().(type) {
		case []float32:
			src, bytes = unsafe.Pointer(&d[0]), 4*len(d)
		case []uint16:
			if w.rows == 1 {
				f := make([]float32, len(d))
				for i, b := range d {
					f[i] = math.Float32frombits(uint32(b) << 16)
				}
				src, bytes = unsafe.Pointer(&f[0]), 4*len(f)
				defer runtime.KeepAlive(f)
			} else {
				w.bf16 = true
				src, bytes = unsafe.Pointer(&d[0]), 2*len(d)
			}
		default:
			return fmt.Errorf("cuda: upload %q: dtype %v, want float32 or uint16 (bf16 bits)", name, t.Dtype())
		}
		elem := 4
		if w.bf16 {
			elem = 2
		}
		if bytes != w.rows*w.cols*elem {
			return fmt.Errorf("cuda: upload %q: %d bytes for shape %v", name, bytes, sh)
		}
		p, err := cu.MemAlloc(int64(bytes))
		if err != nil {
			return fmt.Errorf("cuda: upload %q (%d MiB): cuMemAlloc: %w", name, bytes>>20, err)
		}
		e.weights = append(e.weights, p)
		if err := cu.MemcpyHtoD(p, src, int64(bytes)); err != nil {
			return fmt.Errorf("cuda: upload %q: cuMemcpyHtoD: %w", name, err)
		}
		w.ptr = p
		return nil
	})
	if err != nil {
		return nil, err
	}
	return w, nil
}

// Alloc returns a zeroed float32 activation [rows, cols] in device memory; the tensor's
// data is not readable from the host (use Read). The memory is freed when the tensor
// is garbage-collected, or at Close.
func (e *Engine) Alloc(rows, cols int) (*tensor.Dense, error) {
	if rows <= 0 || cols <= 0 {
		return nil, fmt.Errorf("cuda: alloc [%d %d]", rows, cols)
	}
	var t *tensor.Dense
	err := e.call(func() error {
		if e.step != nil && e.step.capturing {
			return errors.New("cuda: alloc during a graph capture")
		}
		bytes := 4 * rows * cols
		p, err := cu.MemAlloc(int64(bytes))
		if err != nil {
			return fmt.Errorf("cuda: alloc [%d %d]: cuMemAlloc: %w", rows, cols, err)
		}
		if err := cu.MemsetD32(p, 0, int64(rows*cols)); err != nil {
			return fmt.Errorf("cuda: alloc: cuMemsetD32: %w", err)
		}
		e.acts[uintptr(p)] = &devBuf{ptr: p, bytes: bytes}
		e.gen++
		t = tensor.New(tensor.Of(tensor.Float32), tensor.WithShape(rows, cols), tensor.FromMemory(uintptr(p), uintptr(bytes)))
		runtime.SetFinalizer(t, func(*tensor.Dense) {
			e.freeMu.Lock()
			e.freed = append(e.freed, p)
			e.freeMu.Unlock()
		})
		return nil
	})
	return t, err
}

// act returns the device buffer of an activation made by Alloc, with its shape.
func (e *Engine) act(what string, t *tensor.Dense) (cu.DevicePtr, int, int, error) {
	if t == nil {
		return 0, 0, 0, fmt.Errorf("cuda: %s: nil tensor", what)
	}
	sh := t.Shape()
	if len(sh) != 2 {
		return 0, 0, 0, fmt.Errorf("cuda: %s: shape %v, want [rows, cols]", what, sh)
	}
	if !t.IsManuallyManaged() {
		return 0, 0, 0, fmt.Errorf("cuda: %s: a host tensor where a device activation (Alloc) is needed", what)
	}
	b, ok := e.acts[t.Uintptr()]
	if !ok || b.bytes != 4*sh[0]*sh[1] {
		return 0, 0, 0, fmt.Errorf("cuda: %s: not an activation of this engine", what)
	}
	return b.ptr, sh[0], sh[1], nil
}

func (e *Engine) weight(what string, w model.Weight) (*weight, error) {
	cw, ok := w.(*weight)
	if !ok || cw == nil {
		return nil, fmt.Errorf("cuda: %s: weight not uploaded to this engine", what)
	}
	return cw, nil
}

// vector resolves an optional vector weight (nil: 0) of n values.
func (e *Engine) vector(what string, w model.Weight, n int) (cu.DevicePtr, error) {
	if w == nil {
		return 0, nil
	}
	cw, err := e.weight(what, w)
	if err != nil {
		return 0, err
	}
	if cw.rows != 1 || cw.cols != n {
		return 0, fmt.Errorf("cuda: %s: vector %q has shape [%d %d], want [1 %d]", what, cw.name, cw.rows, cw.cols, n)
	}
	return cw.ptr, nil
}

// grow returns the scratch buffer name with at least bytes bytes.
func (e *Engine) grow(name string, bytes int) (cu.DevicePtr, error) {
	b := e.scratch[name]
	if b != nil && b.bytes >= bytes {
		return b.ptr, nil
	}
	if e.step != nil && e.step.capturing {
		return 0, fmt.Errorf("cuda: scratch %q grows during a graph capture", name)
	}
	if b != nil {
		_ = cu.MemFree(b.ptr)
		delete(e.scratch, name)
	}
	p, err := cu.MemAlloc(int64(bytes))
	if err != nil {
		return 0, fmt.Errorf("cuda: scratch %q (%d bytes): cuMemAlloc: %w", name, bytes, err)
	}
	e.scratch[name] = &devBuf{ptr: p, bytes: bytes}
	e.gen++
	return p, nil
}

// pin returns the pinned host buffer that stands for the bytes bytes of host memory
// at dst.
func (e *Engine) pin(dst unsafe.Pointer, bytes int) (*pinBuf, error) {
	key := uintptr(dst)
	b := e.pinned[key]
	if b != nil && b.bytes == bytes {
		return b, nil
	}
	if e.step != nil && e.step.capturing {
		return nil, errors.New("cuda: pinned output buffer allocated during a graph capture")
	}
	if b != nil {
		_ = memFreeHost(b.host)
	}
	h, err := memAllocHost(bytes)
	if err != nil {
		return nil, err
	}
	b = &pinBuf{host: h, bytes: bytes}
	e.pinned[key] = b
	e.gen++
	return b, nil
}

// launch runs kernel f with grid (gx, gy, gz) of block threads; args are pointers,
// ints and float32s, each passed in an 8-byte slot.
func (e *Engine) launch(f cu.Function, gx, gy, gz, block int, args ...any) error {
	return e.launchShared(f, gx, gy, gz, block, 0, args...)
}

// launchShared is launch with shared bytes of dynamic shared memory.
func (e *Engine) launchShared(f cu.Function, gx, gy, gz, block, shared int, args ...any) error {
	vals := make([]uint64, len(args))
	ptrs := make([]unsafe.Pointer, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case cu.DevicePtr:
			vals[i] = uint64(v)
		case int:
			if v != int(int32(v)) {
				return fmt.Errorf("cuda: kernel argument %d = %d exceeds int32", i, v)
			}
			vals[i] = uint64(uint32(int32(v)))
		case int64:
			vals[i] = uint64(v)
		case float32:
			vals[i] = uint64(math.Float32bits(v))
		default:
			return fmt.Errorf("cuda: kernel argument %d has type %T", i, a)
		}
		ptrs[i] = unsafe.Pointer(&vals[i])
	}
	if gx <= 0 || gy <= 0 || gz <= 0 {
		return nil
	}
	if err := f.Launch(gx, gy, gz, block, 1, 1, shared, e.stream, ptrs); err != nil {
		return fmt.Errorf("cuda: kernel launch: %w", err)
	}
	return nil
}

func blocks(n int64) int { return int((n + threads - 1) / threads) }

// product computes dst (device, n rows of w.rows) = x·wᵀ (+ bias), mode modeStore or
// modeAdd (dst += ...).
func (e *Engine) product(dst, x cu.DevicePtr, n int, w *weight, bias cu.DevicePtr, mode int) error {
	if n == 1 {
		if parts := splitParts(w.rows, w.cols); parts > 1 {
			f := e.k.matvecSplitF32
			if w.bf16 {
				f = e.k.matvecSplitBF16
			}
			perBlock := warpRows / parts
			return e.launch(f, (w.rows+perBlock-1)/perBlock, 1, 1, threads, dst, x, w.ptr, bias, w.rows, w.cols, mode, parts)
		}
		f := e.k.matvecF32
		if w.bf16 {
			f = e.k.matvecBF16
		}
		return e.launch(f, (w.rows+warpRows-1)/warpRows, 1, 1, threads, dst, x, w.ptr, bias, w.rows, w.cols, mode)
	}
	in := x
	if w.bf16 {
		p, err := e.grow("bf16-in", 2*n*w.cols)
		if err != nil {
			return err
		}
		if err := e.launch(e.k.toBF16, blocks(int64(n*w.cols)), 1, 1, threads, p, x, int64(n*w.cols)); err != nil {
			return err
		}
		in = p
	}
	beta := float32(0)
	if mode == modeAdd {
		beta = 1
	}
	if err := gemm(e.blas, w.bf16, n, w.rows, w.cols, w.ptr, in, dst, beta); err != nil {
		return err
	}
	if bias != 0 {
		total := int64(n * w.rows)
		return e.launch(e.k.addBias, blocks(total), 1, 1, threads, dst, bias, total, w.rows)
	}
	return nil
}

// splitParts is how many warps a single-row product of rows×cols gives each row: 1,
// 2, 4 or 8, doubling while the rows leave the GPU short of busyWarps and every warp
// still gets at least 256 columns (a 16-byte load per lane for bf16).
func splitParts(rows, cols int) int {
	parts := 1
	for parts < warpRows && rows*parts < busyWarps && cols >= 512*parts {
		parts *= 2
	}
	return parts
}

// out resolves a product's destination: a device activation, or a host tensor (the
// logits), which gets a device scratch buffer and a pinned copy.
func (e *Engine) out(what string, dst *tensor.Dense, n, rows int) (cu.DevicePtr, func() error, error) {
	if dst == nil {
		return 0, nil, fmt.Errorf("cuda: %s: nil destination", what)
	}
	if dst.IsManuallyManaged() {
		p, r, c, err := e.act(what, dst)
		if err != nil {
			return 0, nil, err
		}
		if r*c != n*rows {
			return 0, nil, fmt.Errorf("cuda: %s: destination %v, want %d×%d values", what, dst.Shape(), n, rows)
		}
		return p, nil, nil
	}
	hs, ok := dst.Data().([]float32)
	if !ok || len(hs) != n*rows {
		return 0, nil, fmt.Errorf("cuda: %s: host destination %v %v, want %d float32s", what, dst.Shape(), dst.Dtype(), n*rows)
	}
	p, err := e.grow("host-out", 4*n*rows)
	if err != nil {
		return 0, nil, err
	}
	pb, err := e.pin(unsafe.Pointer(&hs[0]), 4*len(hs))
	if err != nil {
		return 0, nil, err
	}
	finish := func() error { return e.download(unsafe.Pointer(&hs[0]), pb, p) }
	return p, finish, nil
}

// download copies pb.bytes of device memory at src into the pinned buffer pb that
// stands for the host memory dst: queued as a step output (copied into dst when the
// step's work is done), or, outside a step, at once.
func (e *Engine) download(dst unsafe.Pointer, pb *pinBuf, src cu.DevicePtr) error {
	if err := dtohAsync(pb.host, src, pb.bytes, &e.stream); err != nil {
		return err
	}
	o := hostOut{dst: dst, src: pb}
	if e.step != nil {
		e.step.outputs = append(e.step.outputs, o)
		return nil
	}
	return e.syncOutputs([]hostOut{o})
}

// syncOutputs waits for the stream and copies pinned outputs into their host tensors.
func (e *Engine) syncOutputs(outs []hostOut) error {
	if err := e.stream.Synchronize(); err != nil {
		return fmt.Errorf("cuda: cuStreamSynchronize: %w", err)
	}
	for _, o := range outs {
		copy(unsafe.Slice((*byte)(o.dst), o.src.bytes), unsafe.Slice((*byte)(o.src.host), o.src.bytes))
	}
	return nil
}

func (e *Engine) matProduct(op string, dst, x *tensor.Dense, w model.Weight, vector bool) error {
	return e.call(func() error {
		cw, err := e.weight(op, w)
		if err != nil {
			return err
		}
		xp, n, cols, err := e.act(op+" input", x)
		if err != nil {
			return err
		}
		if cols != cw.cols || (vector && n != 1) {
			return fmt.Errorf("cuda: %s %q [%d %d]: x has shape %v", op, cw.name, cw.rows, cw.cols, x.Shape())
		}
		dp, finish, err := e.out(op, dst, n, cw.rows)
		if err != nil {
			return err
		}
		if err := e.product(dp, xp, n, cw, 0, modeStore); err != nil {
			return err
		}
		if finish != nil {
			return finish()
		}
		return nil
	})
}

// MatVec computes dst = w·x for one row x; dst may be a host tensor (the logits).
func (e *Engine) MatVec(dst, x *tensor.Dense, w model.Weight) error {
	return e.matProduct("matvec", dst, x, w, true)
}

// ArgmaxMatVec computes the logits x·wᵀ on the device and brings back only the greedy
// pick (model.ArgmaxEngine): the argmax kernel reduces them in one block, and its
// result is copied into dst[0] (through pinned memory, as the logits would be).
func (e *Engine) ArgmaxMatVec(dst []int32, x *tensor.Dense, w model.Weight, mask []uint32) error {
	return e.call(func() error {
		if len(dst) != 1 {
			return fmt.Errorf("cuda: argmax: %d destinations, want 1", len(dst))
		}
		cw, err := e.weight("argmax", w)
		if err != nil {
			return err
		}
		xp, n, cols, err := e.act("argmax input", x)
		if err != nil {
			return err
		}
		if n != 1 || cols != cw.cols {
			return fmt.Errorf("cuda: argmax %q [%d %d]: x %v", cw.name, cw.rows, cw.cols, x.Shape())
		}
		if mask != nil && len(mask) != (cw.rows+31)/32 {
			return fmt.Errorf("cuda: argmax: mask of %d words for %d logits", len(mask), cw.rows)
		}
		var mp cu.DevicePtr
		if mask != nil {
			if s := e.step; s != nil && sameSlice(mask, s.st.Mask) {
				mp = s.devMask
			} else {
				if e.step != nil && e.step.capturing {
					return errors.New("cuda: argmax: a mask other than the step's during a graph capture")
				}
				if mp, err = e.stage("mask", unsafe.Pointer(&mask[0]), 4*len(mask)); err != nil {
					return err
				}
			}
		}
		logits, err := e.grow("argmax-logits", 4*cw.rows)
		if err != nil {
			return err
		}
		res, err := e.grow("argmax-result", 4)
		if err != nil {
			return err
		}
		pb, err := e.pin(unsafe.Pointer(&dst[0]), 4)
		if err != nil {
			return err
		}
		if err := e.product(logits, xp, 1, cw, 0, modeStore); err != nil {
			return err
		}
		if err := e.launch(e.k.argmax, 1, 1, 1, argThreads, res, logits, mp, cw.rows); err != nil {
			return err
		}
		return e.download(unsafe.Pointer(&dst[0]), pb, res)
	})
}

// MatMul computes dst = x·wᵀ.
func (e *Engine) MatMul(dst, x *tensor.Dense, w model.Weight) error {
	return e.matProduct("matmul", dst, x, w, false)
}

// norm writes RMSNorm of x's rows (the last rows rows of x) into a scratch buffer.
func (e *Engine) norm(what string, x *tensor.Dense, normW model.Weight, eps float32, rows int) (cu.DevicePtr, int, int, error) {
	xp, n, cols, err := e.act(what, x)
	if err != nil {
		return 0, 0, 0, err
	}
	if rows <= 0 || rows > n {
		rows = n
	}
	g, err := e.normWeight(what, normW, cols)
	if err != nil {
		return 0, 0, 0, err
	}
	h, err := e.grow("norm", 4*rows*cols)
	if err != nil {
		return 0, 0, 0, err
	}
	err = e.launch(e.k.rmsnorm, rows, 1, 1, threads, h, xp, g, eps, cols, cols, n-rows, 0)
	return h, rows, cols, err
}

// NormMatMul normalizes x's rows and runs each projection on the result.
func (e *Engine) NormMatMul(dsts []*tensor.Dense, x *tensor.Dense, normW model.Weight, eps float32, ls []model.Linear) error {
	return e.call(func() error {
		if len(dsts) != len(ls) || len(ls) == 0 {
			return fmt.Errorf("cuda: normmatmul: %d outputs for %d projections", len(dsts), len(ls))
		}
		// One token: the norm, staged in shared memory, and up to three projections in
		// one launch.
		if xp, xn, xc, err := e.act("normmatmul", x); err == nil && xn == 1 && xc <= maxStagedCols && len(ls) <= 3 {
			g, err := e.normWeight("normmatmul", normW, xc)
			if err != nil {
				return err
			}
			if ok, err := e.fusedMatVecs(dsts, xp, xc, ls, &stagedNorm{w: g, eps: eps}); ok || err != nil {
				return err
			}
		}
		h, n, cols, err := e.norm("normmatmul", x, normW, eps, 0)
		if err != nil {
			return err
		}
		if n == 1 && len(ls) <= 3 {
			if ok, err := e.fusedMatVecs(dsts, h, cols, ls, nil); ok || err != nil {
				return err
			}
		}
		for i, l := range ls {
			cw, err := e.weight("normmatmul", l.W)
			if err != nil {
				return err
			}
			if cw.cols != cols {
				return fmt.Errorf("cuda: normmatmul %q [%d %d]: x has %d columns", cw.name, cw.rows, cw.cols, cols)
			}
			b, err := e.vector("normmatmul bias", l.B, cw.rows)
			if err != nil {
				return err
			}
			dp, finish, err := e.out("normmatmul", dsts[i], n, cw.rows)
			if err != nil {
				return err
			}
			if err := e.product(dp, h, n, cw, b, modeStore); err != nil {
				return err
			}
			if finish != nil {
				if err := finish(); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// stagedNorm is the RMSNorm a fused kernel applies to its input row first.
type stagedNorm struct {
	w   cu.DevicePtr
	eps float32
}

// fusedMatVecs runs up to three single-row projections into device activations in
// one launch, of h or, with norm, of RMSNorm(h); ok is false (and nothing ran) when
// they do not qualify (mixed dtypes, a host output).
func (e *Engine) fusedMatVecs(dsts []*tensor.Dense, h cu.DevicePtr, cols int, ls []model.Linear, norm *stagedNorm) (bool, error) {
	var args []any
	var bf16 bool
	rows := 0
	for i, l := range ls {
		cw, err := e.weight("normmatmul", l.W)
		if err != nil {
			return false, err
		}
		if cw.cols != cols {
			return false, fmt.Errorf("cuda: normmatmul %q [%d %d]: x has %d columns", cw.name, cw.rows, cw.cols, cols)
		}
		if i == 0 {
			bf16 = cw.bf16
		}
		if cw.bf16 != bf16 || dsts[i] == nil || !dsts[i].IsManuallyManaged() {
			return false, nil
		}
		b, err := e.vector("normmatmul bias", l.B, cw.rows)
		if err != nil {
			return false, err
		}
		dp, dn, dc, err := e.act("normmatmul output", dsts[i])
		if err != nil {
			return false, err
		}
		if dn*dc != cw.rows {
			return false, fmt.Errorf("cuda: normmatmul: destination %v, want 1×%d values", dsts[i].Shape(), cw.rows)
		}
		args = append(args, dp, cw.ptr, b, cw.rows)
		rows += cw.rows
	}
	for len(args) < 12 {
		args = append(args, cu.DevicePtr(0), cu.DevicePtr(0), cu.DevicePtr(0), 0)
	}
	grid := (rows + warpRows - 1) / warpRows
	if norm != nil {
		f := e.k.normMatvec3F32
		if bf16 {
			f = e.k.normMatvec3BF16
		}
		return true, e.launchShared(f, grid, 1, 1, threads, 4*cols, append([]any{h, norm.w, norm.eps, cols}, args...)...)
	}
	f := e.k.matvec3F32
	if bf16 {
		f = e.k.matvec3BF16
	}
	return true, e.launch(f, grid, 1, 1, threads, append([]any{h, cols}, args...)...)
}

// NormGLU computes dst = act(h·gateᵀ + bg) ⊙ (h·upᵀ + bu), h = RMSNorm(x).
func (e *Engine) NormGLU(dst, x *tensor.Dense, normW model.Weight, eps float32, gate, up model.Linear, act model.Activation) error {
	return e.call(func() error {
		var ak int
		switch act {
		case model.SiLU:
			ak = actSiLU
		case model.GELUTanh:
			ak = actGELUTanh
		default:
			return fmt.Errorf("cuda: glu: unknown activation %v", act)
		}
		xp, n, cols, err := e.act("normglu", x)
		if err != nil {
			return err
		}
		gw, err := e.weight("normglu gate", gate.W)
		if err != nil {
			return err
		}
		uw, err := e.weight("normglu up", up.W)
		if err != nil {
			return err
		}
		if gw.cols != cols || uw.cols != cols || gw.rows != uw.rows || gw.bf16 != uw.bf16 {
			return fmt.Errorf("cuda: normglu: gate %v and up %v for %d columns", gw.Shape(), uw.Shape(), cols)
		}
		bg, err := e.vector("gate bias", gate.B, gw.rows)
		if err != nil {
			return err
		}
		bu, err := e.vector("up bias", up.B, uw.rows)
		if err != nil {
			return err
		}
		dp, dn, dc, err := e.act("normglu output", dst)
		if err != nil {
			return err
		}
		if dn != n || dc != gw.rows {
			return fmt.Errorf("cuda: normglu: output %v, want [%d %d]", dst.Shape(), n, gw.rows)
		}
		grid := (gw.rows + warpRows - 1) / warpRows
		if n == 1 && cols <= maxStagedCols {
			// The norm staged in shared memory: one launch.
			g, err := e.normWeight("normglu", normW, cols)
			if err != nil {
				return err
			}
			f := e.k.normGluF32
			if gw.bf16 {
				f = e.k.normGluBF16
			}
			return e.launchShared(f, grid, 1, 1, threads, 4*cols, dp, xp, g, eps, gw.ptr, uw.ptr, bg, bu, gw.rows, cols, ak)
		}
		h, _, _, err := e.norm("normglu", x, normW, eps, 0)
		if err != nil {
			return err
		}
		if n == 1 {
			f := e.k.gluF32
			if gw.bf16 {
				f = e.k.gluBF16
			}
			return e.launch(f, grid, 1, 1, threads, dp, h, gw.ptr, uw.ptr, bg, bu, gw.rows, cols, ak)
		}
		gp, err := e.grow("gate", 4*n*gw.rows)
		if err != nil {
			return err
		}
		if err := e.product(gp, h, n, gw, bg, modeStore); err != nil {
			return err
		}
		if err := e.product(dp, h, n, uw, bu, modeStore); err != nil {
			return err
		}
		total := int64(n * gw.rows)
		return e.launch(e.k.glu, blocks(total), 1, 1, threads, dp, gp, dp, total, ak)
	})
}

// branch is a projection added to the residual stream: x (n rows of w.rows) and the
// branch's input (n rows of w.cols), checked against each other.
type branch struct {
	x, in   cu.DevicePtr
	n, cols int
	w       *weight
	bias    cu.DevicePtr
}

func (e *Engine) branch(op string, x, in *tensor.Dense, l model.Linear) (branch, error) {
	cw, err := e.weight(op, l.W)
	if err != nil {
		return branch{}, err
	}
	xp, n, cols, err := e.act(op+" stream", x)
	if err != nil {
		return branch{}, err
	}
	ip, in_, icols, err := e.act(op+" input", in)
	if err != nil {
		return branch{}, err
	}
	if in_ != n || icols != cw.cols || cols != cw.rows {
		return branch{}, fmt.Errorf("cuda: %s %q [%d %d]: x %v, input %v", op, cw.name, cw.rows, cw.cols, x.Shape(), in.Shape())
	}
	b, err := e.vector(op+" bias", l.B, cw.rows)
	if err != nil {
		return branch{}, err
	}
	return branch{x: xp, in: ip, n: n, cols: cols, w: cw, bias: b}, nil
}

// normWeight resolves a norm's weight vector of n values, which must be given.
func (e *Engine) normWeight(what string, w model.Weight, n int) (cu.DevicePtr, error) {
	if w == nil {
		return 0, fmt.Errorf("cuda: %s: nil norm weight", what)
	}
	return e.vector(what, w, n)
}

// Residual adds a projection to the residual stream: x += in·l.Wᵀ + l.B.
func (e *Engine) Residual(x, in *tensor.Dense, l model.Linear) error {
	return e.call(func() error {
		b, err := e.branch("residual", x, in, l)
		if err != nil {
			return err
		}
		return e.product(b.x, b.in, b.n, b.w, b.bias, modeAdd)
	})
}

// HeadRMSNorm normalizes, in place, every segment of len(norm) values of every row of
// x (each attention head).
func (e *Engine) HeadRMSNorm(x *tensor.Dense, normW model.Weight, eps float32) error {
	return e.call(func() error {
		xp, n, cols, err := e.act("head rmsnorm", x)
		if err != nil {
			return err
		}
		cw, err := e.weight("head rmsnorm", normW)
		if err != nil {
			return err
		}
		d := cw.cols
		if cw.rows != 1 || cols%d != 0 {
			return fmt.Errorf("cuda: head rmsnorm: x %v is not rows of heads of %d (%q)", x.Shape(), d, cw.name)
		}
		return e.launch(e.k.rmsnorm, n, cols/d, 1, threads, xp, xp, cw.ptr, eps, d, cols, 0, 0)
	})
}

// ResidualNorm adds a normalized projection to the residual stream:
// x += RMSNorm(in·l.Wᵀ + l.B), each row normalized on its own.
func (e *Engine) ResidualNorm(x, in *tensor.Dense, l model.Linear, normW model.Weight, eps float32) error {
	return e.call(func() error {
		b, err := e.branch("residualnorm", x, in, l)
		if err != nil {
			return err
		}
		g, err := e.normWeight("residualnorm", normW, b.cols)
		if err != nil {
			return err
		}
		yp, err := e.grow("residualnorm", 4*b.n*b.cols)
		if err != nil {
			return err
		}
		if err := e.product(yp, b.in, b.n, b.w, b.bias, modeStore); err != nil {
			return err
		}
		return e.launch(e.k.rmsnorm, b.n, 1, 1, threads, b.x, yp, g, eps, b.cols, b.cols, 0, 1)
	})
}

// RMSNorm normalizes the last rows of x (as many as dst has) into dst.
func (e *Engine) RMSNorm(dst, x *tensor.Dense, normW model.Weight, eps float32) error {
	return e.call(func() error {
		dp, dn, dc, err := e.act("rmsnorm output", dst)
		if err != nil {
			return err
		}
		xp, n, cols, err := e.act("rmsnorm input", x)
		if err != nil {
			return err
		}
		if dc != cols || dn > n {
			return fmt.Errorf("cuda: rmsnorm: dst %v for x %v", dst.Shape(), x.Shape())
		}
		g, err := e.normWeight("rmsnorm", normW, cols)
		if err != nil {
			return err
		}
		return e.launch(e.k.rmsnorm, dn, 1, 1, threads, dp, xp, g, eps, cols, cols, n-dn, 0)
	})
}

// stage copies host values to a device scratch buffer (outside a Step; synchronous).
func (e *Engine) stage(name string, src unsafe.Pointer, bytes int) (cu.DevicePtr, error) {
	p, err := e.grow(name, bytes)
	if err != nil {
		return 0, err
	}
	if err := cu.MemcpyHtoD(p, src, int64(bytes)); err != nil {
		return 0, fmt.Errorf("cuda: cuMemcpyHtoD: %w", err)
	}
	return p, nil
}

func sameSlice[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// RoPE rotates the first rotaryDim values of every head of x's rows by the host angles
// cos/sin (rotaryDim/2 per row).
func (e *Engine) RoPE(x *tensor.Dense, headDim, rotaryDim int, cos, sin []float32) error {
	return e.call(func() error {
		xp, n, cols, err := e.act("rope", x)
		if err != nil {
			return err
		}
		if headDim <= 0 || cols%headDim != 0 || rotaryDim <= 0 || rotaryDim%2 != 0 || rotaryDim > headDim {
			return fmt.Errorf("cuda: rope: x %v is not rows of heads of %d with %d rotary values", x.Shape(), headDim, rotaryDim)
		}
		half := rotaryDim / 2
		if len(cos) < n*half || len(sin) < n*half {
			return fmt.Errorf("cuda: rope: %d cos and %d sin values for %d rows of %d pairs", len(cos), len(sin), n, half)
		}
		cos, sin = cos[:n*half], sin[:n*half]
		var cp, sp cu.DevicePtr
		if s := e.step; s != nil && sameSlice(cos, s.st.Cos) && sameSlice(sin, s.st.Sin) {
			cp, sp = s.devCos, s.devSin
		} else if s != nil && s.st.LocalCos != nil && sameSlice(cos, s.st.LocalCos) && sameSlice(sin, s.st.LocalSin) {
			cp, sp = s.devLocalCos, s.devLocalSin
		} else {
			if e.step != nil && e.step.capturing {
				return errors.New("cuda: rope: angles other than the step's during a graph capture")
			}
			if cp, err = e.stage("cos", unsafe.Pointer(&cos[0]), 4*len(cos)); err != nil {
				return err
			}
			if sp, err = e.stage("sin", unsafe.Pointer(&sin[0]), 4*len(sin)); err != nil {
				return err
			}
		}
		pairs := int64(n * (cols / headDim) * half)
		return e.launch(e.k.rope, blocks(pairs), 1, 1, threads, xp, cp, sp, n, cols, headDim, rotaryDim)
	})
}

// NewKV returns an empty device cache.
func (e *Engine) NewKV(layers, kvHeads, headDim, maxPositions int) (model.KV, error) {
	if layers <= 0 || kvHeads <= 0 || headDim <= 0 {
		return nil, fmt.Errorf("cuda: kv cache of %d layers, %d heads of %d", layers, kvHeads, headDim)
	}
	if headDim > maxHeadDim {
		return nil, fmt.Errorf("cuda: head_dim %d; the attention kernel takes at most %d", headDim, maxHeadDim)
	}
	kv := &kvCache{layers: layers, kvHeads: kvHeads, headDim: headDim, maxPos: maxPositions,
		k: make([]cu.DevicePtr, layers), v: make([]cu.DevicePtr, layers)}
	// A dropped cache's memory is freed at the engine's next call.
	runtime.SetFinalizer(kv, func(kv *kvCache) {
		e.freeMu.Lock()
		for l := range kv.k {
			if kv.k[l] != 0 {
				e.freed = append(e.freed, kv.k[l], kv.v[l])
			}
		}
		e.freeMu.Unlock()
	})
	return kv, nil
}

// growKV makes room for need positions, keeping the first used.
func (e *Engine) growKV(kv *kvCache, need, used int) error {
	if need <= kv.capPos {
		return nil
	}
	if e.step != nil && e.step.capturing {
		return errors.New("cuda: kv cache grows during a graph capture")
	}
	newCap := max(need, 2*kv.capPos, 256)
	if kv.maxPos > 0 {
		newCap = max(need, min(newCap, kv.maxPos))
	}
	row := int64(4 * kv.kvHeads * kv.headDim)
	for l := 0; l < kv.layers; l++ {
		for _, buf := range []*cu.DevicePtr{&kv.k[l], &kv.v[l]} {
			p, err := cu.MemAlloc(int64(newCap) * row)
			if err != nil {
				return fmt.Errorf("cuda: kv cache of %d positions: cuMemAlloc: %w", newCap, err)
			}
			if *buf != 0 {
				if used > 0 {
					if err := cu.MemcpyDtoDAsync(p, *buf, int64(used)*row, e.stream); err != nil {
						return fmt.Errorf("cuda: kv cache copy: %w", err)
					}
				}
				if err := e.stream.Synchronize(); err != nil {
					return fmt.Errorf("cuda: %w", err)
				}
				_ = cu.MemFree(*buf)
			}
			*buf = p
		}
	}
	kv.capPos = newCap
	e.gen++
	return nil
}

// Attention appends k and v at positions pos0.. and attends over the cache.
func (e *Engine) Attention(out, q, k, v *tensor.Dense, kvh model.KV, layer, pos0 int, opt model.AttentionOptions) error {
	return e.call(func() error {
		kv, ok := kvh.(*kvCache)
		if !ok || kv == nil {
			return errors.New("cuda: attention: kv cache not made by this engine")
		}
		if layer < 0 || layer >= kv.layers || pos0 < 0 {
			return fmt.Errorf("cuda: attention: layer %d of %d, position %d", layer, kv.layers, pos0)
		}
		qp, n, qDim, err := e.act("attention q", q)
		if err != nil {
			return err
		}
		op, on, oc, err := e.act("attention output", out)
		if err != nil {
			return err
		}
		kp, kn, kc, err := e.act("attention k", k)
		if err != nil {
			return err
		}
		vp, vn, vc, err := e.act("attention v", v)
		if err != nil {
			return err
		}
		hd := kv.headDim
		kvDim := kv.kvHeads * hd
		if qDim%kvDim != 0 || on != n || oc != qDim || kn != n || vn != n || kc != kvDim || vc != kvDim {
			return fmt.Errorf("cuda: attention: q %v, out %v, k %v, v %v for %d kv heads of %d", q.Shape(), out.Shape(), k.Shape(), v.Shape(), kv.kvHeads, hd)
		}
		if kv.maxPos > 0 && pos0+n > kv.maxPos {
			return fmt.Errorf("cuda: attention: positions up to %d exceed the cache limit %d", pos0+n, kv.maxPos)
		}
		heads := qDim / hd
		if err := e.growKV(kv, pos0+n, pos0); err != nil {
			return err
		}
		var posp cu.DevicePtr
		if s := e.step; s != nil && s.st.Pos0 == pos0 && s.st.KV == kvh {
			posp = s.devPos
		} else {
			if e.step != nil && e.step.capturing {
				return errors.New("cuda: attention: a position other than the step's during a graph capture")
			}
			p32 := int32(pos0)
			if posp, err = e.stage("pos", unsafe.Pointer(&p32), 4); err != nil {
				return err
			}
		}
		if err := e.launch(e.k.kvStore, blocks(int64(n*kvDim)), 1, 1, threads, kv.k[layer], kv.v[layer], kp, vp, posp, n, kvDim); err != nil {
			return err
		}
		kv.used = max(kv.used, pos0+n)
		// Scores for chunks of rows, each at most scoreLimit floats: [rows, heads, capPos].
		ppos := kv.capPos
		chunk := max(1, min(n, scoreLimit/(heads*ppos)))
		sp, err := e.grow("scores", 4*chunk*heads*ppos)
		if err != nil {
			return err
		}
		scale := opt.Scale
		if scale == 0 {
			scale = float32(1 / math.Sqrt(float64(hd)))
		}
		if opt.Window < 0 {
			return fmt.Errorf("cuda: attention: window %d", opt.Window)
		}
		for t0 := 0; t0 < n; t0 += chunk {
			rows := min(chunk, n-t0)
			// Positions a launch can reach: pos0+n (host-known outside graphs; in a graph
			// replay pos0 changes, so the grid covers the whole cache).
			reach := pos0 + t0 + rows
			if e.step != nil && !e.noGr && n == 1 {
				reach = ppos
			}
			if err := e.launch(e.k.attnScores, (reach+warpRows-1)/warpRows, heads, rows, threads,
				sp, qp, kv.k[layer], posp, t0, heads, kv.kvHeads, hd, ppos, scale, opt.Window); err != nil {
				return err
			}
			if err := e.launch(e.k.attnAV, heads, rows, 1, threads,
				op, sp, kv.v[layer], posp, t0, heads, kv.kvHeads, hd, ppos, opt.Window); err != nil {
				return err
			}
		}
		return nil
	})
}

// RoPEAttention is RoPE(q), RoPE(k) then Attention (model.RoPEAttentionEngine). A
// single token takes two launches: rope_store (both rotations and the cache store)
// and attn_fused (scores, softmax and values, one block per head). Anything else, and
// any argument those operations would refuse, takes the separate operations, which
// report the error.
func (e *Engine) RoPEAttention(out, q, k, v *tensor.Dense, kvh model.KV, layer, pos0, headDim, rotaryDim int, cos, sin []float32, opt model.AttentionOptions) error {
	fused := false
	err := e.call(func() (err error) {
		fused, err = e.ropeAttention(out, q, k, v, kvh, layer, pos0, headDim, rotaryDim, cos, sin, opt)
		return err
	})
	if fused || err != nil {
		return err
	}
	if err := e.RoPE(q, headDim, rotaryDim, cos, sin); err != nil {
		return err
	}
	if err := e.RoPE(k, headDim, rotaryDim, cos, sin); err != nil {
		return err
	}
	return e.Attention(out, q, k, v, kvh, layer, pos0, opt)
}

// ropeAttention runs the fused single-token form, or returns false having done nothing.
func (e *Engine) ropeAttention(out, q, k, v *tensor.Dense, kvh model.KV, layer, pos0, hd, rd int, cos, sin []float32, opt model.AttentionOptions) (bool, error) {
	kv, ok := kvh.(*kvCache)
	if !ok || kv == nil || layer < 0 || layer >= kv.layers || pos0 < 0 || kv.headDim != hd ||
		hd%4 != 0 || rd <= 0 || rd%2 != 0 || rd > hd || opt.Window < 0 || (kv.maxPos > 0 && pos0+1 > kv.maxPos) {
		return false, nil
	}
	half := rd / 2
	if len(cos) < half || len(sin) < half {
		return false, nil
	}
	var ptrs [4]cu.DevicePtr
	var cols [4]int
	for i, t := range []*tensor.Dense{q, k, v, out} {
		p, n, c, err := e.act("attention", t)
		if err != nil || n != 1 {
			return false, nil
		}
		ptrs[i], cols[i] = p, c
	}
	qp, kp, vp, op := ptrs[0], ptrs[1], ptrs[2], ptrs[3]
	qDim, kvDim := cols[0], kv.kvHeads*hd
	if qDim%kvDim != 0 || cols[1] != kvDim || cols[2] != kvDim || cols[3] != qDim {
		return false, nil
	}
	cos, sin = cos[:half], sin[:half]
	s := e.step
	var cp, sp, posp cu.DevicePtr
	switch {
	case s == nil || s.st.Pos0 != pos0 || s.st.KV != kvh:
		return false, nil
	case sameSlice(cos, s.st.Cos) && sameSlice(sin, s.st.Sin):
		cp, sp = s.devCos, s.devSin
	case s.st.LocalCos != nil && sameSlice(cos, s.st.LocalCos) && sameSlice(sin, s.st.LocalSin):
		cp, sp = s.devLocalCos, s.devLocalSin
	default:
		return false, nil
	}
	posp = s.devPos
	if err := e.growKV(kv, pos0+1, pos0); err != nil {
		return true, err
	}
	heads := qDim / hd
	total := int64(heads*half + kvDim)
	if err := e.launch(e.k.ropeStore, blocks(total), 1, 1, threads, qp, kp, vp, kv.k[layer], kv.v[layer], cp, sp, posp,
		1, qDim, kvDim, hd, rd); err != nil {
		return true, err
	}
	kv.used = max(kv.used, pos0+1)
	ppos := kv.capPos
	var scores cu.DevicePtr
	shared, inShared := 0, 1
	if ppos <= maxSharedScores {
		shared = 4 * ppos
	} else {
		inShared = 0
		var err error
		if scores, err = e.grow("scores", 4*heads*ppos); err != nil {
			return true, err
		}
	}
	scale := opt.Scale
	if scale == 0 {
		scale = float32(1 / math.Sqrt(float64(hd)))
	}
	return true, e.launchShared(e.k.attnFused, heads, 1, 1, attnThreads, shared, op, scores, qp, kv.k[layer], kv.v[layer], posp,
		0, heads, kv.kvHeads, hd, ppos, scale, opt.Window, inShared)
}

// Rows copies embedding rows ids of w into dst, each value multiplied by scale.
func (e *Engine) Rows(dst *tensor.Dense, w model.Weight, ids []int, scale float32) error {
	return e.call(func() error {
		cw, err := e.weight("rows", w)
		if err != nil {
			return err
		}
		dp, n, cols, err := e.act("rows output", dst)
		if err != nil {
			return err
		}
		if n != len(ids) || cols != cw.cols {
			return fmt.Errorf("cuda: rows of %q: dst %v for %d ids of %d columns", cw.name, dst.Shape(), len(ids), cw.cols)
		}
		for i, id := range ids {
			if id < 0 || id >= cw.rows {
				return fmt.Errorf("cuda: token id %d at position %d is outside %q (%d rows)", id, i, cw.name, cw.rows)
			}
		}
		var ip cu.DevicePtr
		if s := e.step; s != nil && sameSlice(ids, s.st.IDs) {
			ip = s.devIDs
		} else {
			if e.step != nil && e.step.capturing {
				return errors.New("cuda: rows: ids other than the step's during a graph capture")
			}
			i32 := make([]int32, len(ids))
			for i, id := range ids {
				i32[i] = int32(id)
			}
			if ip, err = e.stage("ids", unsafe.Pointer(&i32[0]), 4*len(i32)); err != nil {
				return err
			}
		}
		f := e.k.rowsF32
		if cw.bf16 {
			f = e.k.rowsBF16
		}
		return e.launch(f, n, 1, 1, threads, dp, cw.ptr, ip, cols, scale)
	})
}

// Read copies an activation made by Alloc to the host (for tests and debugging).
func (e *Engine) Read(t *tensor.Dense) ([]float32, error) {
	var out []float32
	err := e.call(func() error {
		p, r, c, err := e.act("read", t)
		if err != nil {
			return err
		}
		if err := e.stream.Synchronize(); err != nil {
			return fmt.Errorf("cuda: %w", err)
		}
		out = make([]float32, r*c)
		return cu.MemcpyDtoH(unsafe.Pointer(&out[0]), p, int64(4*r*c))
	})
	return out, err
}

// Write copies host values into an activation made by Alloc (for tests).
func (e *Engine) Write(t *tensor.Dense, vals []float32) error {
	return e.call(func() error {
		p, r, c, err := e.act("write", t)
		if err != nil {
			return err
		}
		if len(vals) != r*c {
			return fmt.Errorf("cuda: write: %d values for %v", len(vals), t.Shape())
		}
		if err := e.stream.Synchronize(); err != nil {
			return fmt.Errorf("cuda: %w", err)
		}
		return cu.MemcpyHtoD(p, unsafe.Pointer(&vals[0]), int64(4*len(vals)))
	})
}

// Step runs one forward call. A single-token call (a decode step) is recorded as a
// CUDA graph the second time a sequence makes one (the first sizes every buffer) and
// replayed afterwards; its inputs go up in one copy from pinned memory and its logits
// come down into pinned memory.
func (e *Engine) Step(st *model.Step, ops func() error) error {
	return e.locked(func() error {
		defer func() { e.step = nil }()
		return e.runStep(st, ops)
	})
}

// runStep is Step's body, with the engine locked.
func (e *Engine) runStep(st *model.Step, ops func() error) (err error) {
	n := len(st.IDs)
	half := 0
	if n > 0 {
		half = len(st.Cos) / n
	}
	if n == 0 || len(st.Cos) != n*half || len(st.Sin) != n*half ||
		len(st.LocalCos) != len(st.LocalSin) || (st.LocalCos != nil && len(st.LocalCos) != n*half) {
		return fmt.Errorf("cuda: step of %d ids with %d cos, %d sin, %d local cos and %d local sin values",
			n, len(st.Cos), len(st.Sin), len(st.LocalCos), len(st.LocalSin))
	}
	// Parameter block: ids (int32), pos0 (int32), cos, sin, local cos, local sin;
	// 16-byte aligned parts.
	idsOff, posOff := 0, align(4*n)
	cosOff := posOff + 16
	sinOff := cosOff + align(4*n*half)
	lcosOff := sinOff + align(4*n*half)
	lsinOff := lcosOff + align(4*len(st.LocalCos))
	maskOff := lsinOff + align(4*len(st.LocalSin))
	total := maskOff + align(4*len(st.Mask))
	run := &stepRun{st: st}
	var host unsafe.Pointer
	var dev cu.DevicePtr
	decode := n == 1 && !e.noGr && total <= pinnedParams
	if decode {
		host, dev = e.params, e.devParams
	} else {
		// A prefill: ordinary launches with synchronous staging.
		buf := make([]byte, total)
		host = unsafe.Pointer(&buf[0])
		defer runtime.KeepAlive(buf)
		if dev, err = e.grow("step-params", total); err != nil {
			return err
		}
	}
	ids := unsafe.Slice((*int32)(unsafe.Add(host, idsOff)), n)
	for i, id := range st.IDs {
		ids[i] = int32(id)
	}
	*(*int32)(unsafe.Add(host, posOff)) = int32(st.Pos0)
	copy(unsafe.Slice((*float32)(unsafe.Add(host, cosOff)), n*half), st.Cos)
	copy(unsafe.Slice((*float32)(unsafe.Add(host, sinOff)), n*half), st.Sin)
	copy(unsafe.Slice((*float32)(unsafe.Add(host, lcosOff)), len(st.LocalCos)), st.LocalCos)
	copy(unsafe.Slice((*float32)(unsafe.Add(host, lsinOff)), len(st.LocalSin)), st.LocalSin)
	copy(unsafe.Slice((*uint32)(unsafe.Add(host, maskOff)), len(st.Mask)), st.Mask)
	run.devIDs, run.devPos = dev+cu.DevicePtr(idsOff), dev+cu.DevicePtr(posOff)
	run.devCos, run.devSin = dev+cu.DevicePtr(cosOff), dev+cu.DevicePtr(sinOff)
	run.devLocalCos, run.devLocalSin = dev+cu.DevicePtr(lcosOff), dev+cu.DevicePtr(lsinOff)
	if st.Mask != nil {
		run.devMask = dev + cu.DevicePtr(maskOff)
	}

	if !decode {
		if err := cu.MemcpyHtoD(dev, host, int64(total)); err != nil {
			return fmt.Errorf("cuda: cuMemcpyHtoD: %w", err)
		}
		e.step = run
		if err := ops(); err != nil {
			return err
		}
		return e.syncOutputs(run.outputs)
	}

	key := graphKey{st.Seq, n}
	kv, _ := st.KV.(*kvCache)
	if kv == nil {
		return errors.New("cuda: step: kv cache not made by this engine")
	}
	if g := e.graphs[key]; g != nil && (g.gen != e.gen || st.Pos0+n > kv.capPos) {
		_ = graphDestroy(g.exec)
		delete(e.graphs, key)
	}
	if g := e.graphs[key]; g != nil {
		if err := htodAsync(dev, host, total, &e.stream); err != nil {
			return err
		}
		if err := graphLaunch(g.exec, &e.stream); err != nil {
			return err
		}
		kv.used = max(kv.used, st.Pos0+n)
		return e.syncOutputs(g.outputs)
	}
	// Record when the previous eager step of this sequence allocated nothing after it
	// ran (every buffer has its size) and the cache has room; else run eagerly.
	if last, ok := e.eagerGen[key]; ok && last == e.gen && st.Pos0+n <= kv.capPos && e.graphErr == nil {
		g, err := e.record(run, dev, host, total, ops)
		if err == nil {
			e.graphs[key] = g
			if err := graphLaunch(g.exec, &e.stream); err != nil {
				return err
			}
			kv.used = max(kv.used, st.Pos0+n)
			return e.syncOutputs(g.outputs)
		}
		// Nothing ran during the failed capture: remember why, and run eagerly.
		e.graphErr = err
		run.outputs = nil
	}
	e.step = run
	if err := htodAsync(dev, host, total, &e.stream); err != nil {
		return err
	}
	if err := ops(); err != nil {
		return err
	}
	if err := e.syncOutputs(run.outputs); err != nil {
		return err
	}
	if len(e.graphs) >= maxGraphs {
		for k, g := range e.graphs {
			_ = graphDestroy(g.exec)
			delete(e.graphs, k)
		}
		clear(e.eagerGen)
	}
	e.eagerGen[key] = e.gen
	return nil
}

// record captures the decode step's work (the parameter upload, ops, the logits'
// download) into a graph without running it.
func (e *Engine) record(run *stepRun, dev cu.DevicePtr, host unsafe.Pointer, total int, ops func() error) (*graph, error) {
	if err := e.stream.Synchronize(); err != nil {
		return nil, fmt.Errorf("cuda: %w", err)
	}
	if err := beginCapture(&e.stream); err != nil {
		return nil, err
	}
	run.capturing = true
	e.step = run
	opsErr := htodAsync(dev, host, total, &e.stream)
	if opsErr == nil {
		opsErr = ops()
	}
	exec, capErr := endCapture(&e.stream)
	run.capturing = false
	e.step = nil
	if opsErr != nil || capErr != nil {
		if exec != 0 {
			_ = graphDestroy(exec)
		}
		return nil, fmt.Errorf("cuda: recording a decode step: %w", errors.Join(opsErr, capErr))
	}
	return &graph{exec: exec, gen: e.gen, outputs: run.outputs}, nil
}

// GraphError says why decode steps run without a CUDA graph, or nil when they are
// replayed (or NoGraphs was set).
func (e *Engine) GraphError() error { return e.graphErr }

func align(n int) int { return (n + 15) &^ 15 }

// Close frees everything the engine holds on the device and in pinned memory.
func (e *Engine) Close() error {
	if err := e.enter(); err != nil {
		return nil // already closed
	}
	defer e.leave()
	e.release()
	return nil
}

// release frees what New and the engine's calls made, as far as they got.
func (e *Engine) release() {
	for _, g := range e.graphs {
		_ = graphDestroy(g.exec)
	}
	e.graphs = nil
	_ = e.stream.Synchronize()
	for _, b := range e.acts {
		_ = cu.MemFree(b.ptr)
	}
	for _, b := range e.scratch {
		_ = cu.MemFree(b.ptr)
	}
	for _, p := range e.weights {
		_ = cu.MemFree(p)
	}
	for _, b := range e.pinned {
		_ = memFreeHost(b.host)
	}
	if e.params != nil {
		_ = memFreeHost(e.params)
	}
	if e.devParams != 0 {
		_ = cu.MemFree(e.devParams)
	}
	if e.blas != 0 {
		_ = blasDestroy(e.blas)
	}
	if streamHandle(&e.stream) != 0 {
		_ = e.stream.Destroy()
	}
	if e.mod != (cu.Module{}) {
		_ = e.mod.Unload()
	}
	_ = e.dev.ReleasePrimaryCtx()
	e.closed = true
}
