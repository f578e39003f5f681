//go:build cuda

package cuda

/*
#cgo LDFLAGS: -lcublas -lcuda
#include <stdint.h>
#include <cuda.h>
#include <cublas_v2.h>

// The driver calls gorgonia.org/cu v0.9.6 does not wrap (pinned host memory, stream
// capture, graph instantiation and launch) and the cuBLAS calls the engine makes;
// handles travel as uintptr_t so that no cgo type crosses the package boundary.

static int tt_mem_alloc_host(uintptr_t *p, size_t n) {
	void *q = 0;
	int s = (int)cuMemAllocHost(&q, n);
	*p = (uintptr_t)q;
	return s;
}
static int tt_mem_free_host(uintptr_t p) { return (int)cuMemFreeHost((void *)p); }
static int tt_memcpy_htod_async(uintptr_t dst, uintptr_t src, size_t n, uintptr_t stream) {
	return (int)cuMemcpyHtoDAsync((CUdeviceptr)dst, (const void *)src, n, (CUstream)stream);
}
static int tt_memcpy_dtoh_async(uintptr_t dst, uintptr_t src, size_t n, uintptr_t stream) {
	return (int)cuMemcpyDtoHAsync((void *)dst, (CUdeviceptr)src, n, (CUstream)stream);
}
static int tt_begin_capture(uintptr_t stream) {
	return (int)cuStreamBeginCapture((CUstream)stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
}
// Ends the capture and instantiates the graph; *exec is 0 when either fails.
static int tt_end_capture(uintptr_t stream, uintptr_t *exec) {
	CUgraph g = 0;
	CUgraphExec e = 0;
	*exec = 0;
	int s = (int)cuStreamEndCapture((CUstream)stream, &g);
	if (s != 0) return s;
	s = (int)cuGraphInstantiate(&e, g, 0);
	cuGraphDestroy(g);
	if (s == 0) *exec = (uintptr_t)e;
	return s;
}
static int tt_graph_launch(uintptr_t exec, uintptr_t stream) {
	return (int)cuGraphLaunch((CUgraphExec)exec, (CUstream)stream);
}
static int tt_graph_destroy(uintptr_t exec) { return (int)cuGraphExecDestroy((CUgraphExec)exec); }
static const char *tt_error_name(int s) {
	const char *p = 0;
	if (cuGetErrorName((CUresult)s, &p) != 0 || p == 0) return "unknown CUDA error";
	return p;
}

static int tt_cublas_create(uintptr_t *h, uintptr_t stream) {
	cublasHandle_t hh = 0;
	int s = (int)cublasCreate(&hh);
	*h = (uintptr_t)hh;
	if (s != 0) return s;
	return (int)cublasSetStream(hh, (cudaStream_t)stream);
}
static int tt_cublas_destroy(uintptr_t h) { return (int)cublasDestroy((cublasHandle_t)h); }
// Row-major dst[n, rows] = x[n, cols] · W[rows, cols]ᵀ + beta·dst, i.e. column-major
// dstᵀ = W·xᵀ: W is column-major [cols, rows] (lda cols), read transposed. bf16 != 0:
// W and x are bfloat16, else float32; dst is float32, accumulation float32.
static int tt_gemm(uintptr_t h, int bf16, int n, int rows, int cols, uintptr_t w, uintptr_t x,
                   uintptr_t dst, float beta) {
	float alpha = 1.0f;
	cudaDataType t = bf16 ? CUDA_R_16BF : CUDA_R_32F;
	return (int)cublasGemmEx((cublasHandle_t)h, CUBLAS_OP_T, CUBLAS_OP_N, rows, n, cols, &alpha,
		(const void *)w, t, cols, (const void *)x, t, cols, &beta, (void *)dst, CUDA_R_32F, rows,
		CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}
*/
import "C"

import (
	"fmt"
	"unsafe"

	"gorgonia.org/cu"
)

// drvErr turns a CUresult into an error naming the call.
func drvErr(what string, s C.int) error {
	if s == 0 {
		return nil
	}
	return fmt.Errorf("cuda: %s: %s (%d)", what, C.GoString(C.tt_error_name(s)), int(s))
}

// blasErr turns a cublasStatus_t into an error naming the call.
func blasErr(what string, s C.int) error {
	if s == 0 {
		return nil
	}
	return fmt.Errorf("cuda: %s: cuBLAS status %d", what, int(s))
}

// streamHandle returns the CUstream inside a cu.Stream (a struct of one handle).
func streamHandle(s *cu.Stream) C.uintptr_t {
	return C.uintptr_t(*(*uintptr)(unsafe.Pointer(s)))
}

func memAllocHost(n int) (unsafe.Pointer, error) {
	var p C.uintptr_t
	if err := drvErr("cuMemAllocHost", C.tt_mem_alloc_host(&p, C.size_t(n))); err != nil {
		return nil, err
	}
	return unsafe.Pointer(uintptr(p)), nil
}

func memFreeHost(p unsafe.Pointer) error {
	return drvErr("cuMemFreeHost", C.tt_mem_free_host(C.uintptr_t(uintptr(p))))
}

// htodAsync and dtohAsync copy between pinned host memory and the device on stream s
// (captured into a graph, they read and write the same host addresses at every replay).
func htodAsync(dst cu.DevicePtr, src unsafe.Pointer, n int, s *cu.Stream) error {
	return drvErr("cuMemcpyHtoDAsync", C.tt_memcpy_htod_async(C.uintptr_t(dst), C.uintptr_t(uintptr(src)), C.size_t(n), streamHandle(s)))
}

func dtohAsync(dst unsafe.Pointer, src cu.DevicePtr, n int, s *cu.Stream) error {
	return drvErr("cuMemcpyDtoHAsync", C.tt_memcpy_dtoh_async(C.uintptr_t(uintptr(dst)), C.uintptr_t(src), C.size_t(n), streamHandle(s)))
}

func beginCapture(s *cu.Stream) error {
	return drvErr("cuStreamBeginCapture", C.tt_begin_capture(streamHandle(s)))
}

// endCapture ends the capture on s and returns the instantiated graph.
func endCapture(s *cu.Stream) (uintptr, error) {
	var e C.uintptr_t
	if err := drvErr("cuStreamEndCapture/cuGraphInstantiate", C.tt_end_capture(streamHandle(s), &e)); err != nil {
		return 0, err
	}
	return uintptr(e), nil
}

func graphLaunch(g uintptr, s *cu.Stream) error {
	return drvErr("cuGraphLaunch", C.tt_graph_launch(C.uintptr_t(g), streamHandle(s)))
}

func graphDestroy(g uintptr) error {
	return drvErr("cuGraphExecDestroy", C.tt_graph_destroy(C.uintptr_t(g)))
}

func blasCreate(s *cu.Stream) (uintptr, error) {
	var h C.uintptr_t
	if err := blasErr("cublasCreate/cublasSetStream", C.tt_cublas_create(&h, streamHandle(s))); err != nil {
		return 0, err
	}
	return uintptr(h), nil
}

func blasDestroy(h uintptr) error {
	return blasErr("cublasDestroy", C.tt_cublas_destroy(C.uintptr_t(h)))
}

// gemm computes dst[n, rows] = x[n, cols]·wᵀ + beta·dst on the handle's stream.
func gemm(h uintptr, bf16 bool, n, rows, cols int, w, x, dst cu.DevicePtr, beta float32) error {
	b := C.int(0)
	if bf16 {
		b = 1
	}
	return blasErr("cublasGemmEx", C.tt_gemm(C.uintptr_t(h), b, C.int(n), C.int(rows), C.int(cols),
		C.uintptr_t(w), C.uintptr_t(x), C.uintptr_t(dst), C.float(beta)))
}
