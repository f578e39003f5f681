// Package cuda is the CUDA engine of gocore/model: the forward pass of standalone
// generation on an NVIDIA GPU, through gorgonia.org/cu (the driver API: context,
// memory, streams, modules) and cuBLAS, with the kernels of kernels.cu.
//
// It is compiled only with the build tag cuda (`make build-cuda` builds
// build/bin/tether-cuda with the pip CUDA toolchain of ../shared/NOTES-toolchain.md);
// without the tag, New returns ErrNotBuilt, so the default build needs no CUDA
// headers, libraries or driver. A cuda build needs the driver's libcuda.so.1 and
// cuBLAS (libcublas.so.13) at run time.
//
// What runs where:
//   - weights stay on the device in their checkpoint's dtype (bfloat16 or float32;
//     norm weights and biases as float32); activations and the KV cache are float32;
//   - a single token (a decode step) runs on the engine's own kernels: a warp per
//     output row reads the weights once, widening bf16 exactly and accumulating in
//     float32, so a decode step computes what the CPU engine computes; the gated MLP is
//     one kernel (gate and up products and the activation);
//   - several tokens (a prefill) multiply with cublasGemmEx: float32 weights in float32,
//     bf16 weights with the inputs rounded to bf16 and float32 accumulation (as PyTorch
//     computes a bf16 model);
//   - attention reads the device KV cache: a warp per (row, head, position) for the
//     scores, then a block per (row, head) for the softmax and the weighted values;
//   - a decode step is recorded once as a CUDA graph (model.StepEngine) and replayed:
//     the token id, its position and its rotary angles live in pinned host memory that
//     the graph copies up, and the logits come back into pinned host memory, the only
//     transfer of a step; for greedy decoding (model.ArgmaxEngine, Model.ForwardArgmax)
//     the argmax kernel picks the token on the device, the allowed-token mask goes up
//     with the step's inputs and only the id comes back.
//
// Use:
//
//	e, err := cuda.New(cuda.Options{})
//	if err != nil { ... } // ErrNotBuilt, no driver, no device
//	defer e.Close()
//	m, err := model.Load(dir, model.WithEngine(e))
package cuda

import "errors"

// ErrNotBuilt is what New returns in a binary built without the cuda tag.
var ErrNotBuilt = errors.New("cuda: this binary was built without CUDA support; " +
	"`make build-cuda` builds build/bin/tether-cuda, which runs the model on an NVIDIA GPU")

// Options configures New.
type Options struct {
	// Device is the CUDA device ordinal (default 0).
	Device int
	// NoGraphs runs every decode step's kernels one launch at a time instead of
	// replaying a recorded CUDA graph (slower; for comparison and debugging).
	NoGraphs bool
}
