// Package model runs Llama-family decoders (LlamaForCausalLM: Llama 2 and 3 with llama3
// rope scaling, SmolLM; Qwen2ForCausalLM with its q/k/v biases) from a Hugging Face
// model directory, on the CPU, computing in float32 on f32 or bf16 weights.
//
// # What it owns
//
//   - SafeTensors: the safetensors format (an 8-byte header length, a JSON header, raw
//     little-endian data), single files and sharded checkpoints
//     (model.safetensors.index.json), memory-mapped where the platform allows it;
//     F32 and BF16 tensors alias the mapping; F16 is widened to float32 at load.
//
//   - Config: the fields of config.json the forward pass needs, with transformers'
//     defaults, in both the transformers 4 (rope_theta, rope_scaling) and 5
//     (rope_parameters) spellings.
//
//   - Model and State: the decoder forward pass in the order of the math (embedding,
//     per layer RMSNorm → q/k/v projections (+bias) → rotary embedding in transformers'
//     rotate_half convention → grouped-query causal attention over a KV cache → o_proj
//     → residual → RMSNorm → SwiGLU MLP → residual; final RMSNorm; lm_head or the tied
//     embedding). A Model is immutable after Load; a State is one sequence (its KV cache
//     and scratch buffers, allocated once and grown on demand).
//
//   - Engine: the interface for everything that touches activations: the weight
//     products (with the fused forms the decoder uses: RMSNorm with the q/k/v
//     projections, RMSNorm with gate/up and SiLU·mul, a projection added to the
//     residual stream), RMSNorm, RoPE, attention over a KV cache it owns, and embedding
//     Rows; weights and caches are handles, so an accelerator engine can keep weights,
//     activations and the cache on the device.
//
//   - CPU, the host Engine. Weights are repacked at load into panels of 16 output rows
//     stored transposed ([cols][16]; bf16 stays bf16), so every product reads them
//     front to back. Decode (one token) streams each panel once through a matrix-vector
//     kernel (bf16 widened in registers): the step is bound by memory bandwidth.
//     Prefill runs a 6×16 register-blocked GEMM micro-kernel (twelve AVX2 accumulators,
//     one panel reused from cache by every block of six tokens; a bf16 panel is widened
//     once per product into a per-worker buffer). Attention, softmax and SiLU use AVX2
//     kernels too (a vectorized float32 exp). A persistent pool of workers splits every
//     product by panels, handing chunks out through an atomic counter; between products
//     a worker spins briefly (10 µs) instead of parking, since a futex wake costs a
//     sizeable share of a 40-250 µs decode product. Packed weights are carved from
//     64 MiB blocks that ask for transparent huge pages (madvise), which lifted one
//     worker's weight stream from 14-17 to 20-21 GB/s on the 2-core Zen 3 guest. Every kernel has
//     a portable Go version: used on other architectures, on CPUs without AVX2/FMA, and
//     with WithPortableKernels (tested against the assembly).
//
//     Why our own kernel rather than a BLAS, by measurement (single-threaded, best of
//     repeated calls, on the 2-core Zen 3 machine while loaded): on SmolLM-135M's
//     prefill products (128 tokens, 576↔1536) the 6×16 kernel ran at 86-94 GFLOP/s,
//     OpenBLAS 0.3.31 (numpy's scipy-openblas build, Haswell kernels) at 78-84, PyTorch's
//     MKL at 81-91, and gonum's pure-Go Sgemm (gorgonia's default BLAS) at 3-4. The
//     products are x·Wᵀ with W fixed, so packing W once at load leaves the kernel no
//     per-call packing; a BLAS through cgo would add a shared library to ship and a cgo
//     call per product for no gain.
//
//   - 8-bit weights (WithInt8Weights, the CPU engine's WithInt8Products; `tether
//     generate --weights int8`): an approximation, not the checkpoint's results. Weight
//     matrices are quantized at load in blocks of 32 values of a row with one float16
//     scale (max|w|/127) each, llama.cpp's Q8_0 layout idea (34 bytes per 32 weights);
//     a panel's blocks interleave 16 rows by groups of 4 columns so that VPDPBUSD
//     (AVX512-VNNI, on 256-bit registers) multiplies eight rows' 4 weights by 4
//     broadcast inputs per instruction, with no horizontal sums. Products quantize
//     their input per block of 32 as llama.cpp does (scale kept in float32; AVX2) and
//     sum exact int32 products per block, scaled once per block: decode with a
//     matrix-vector kernel, prefill with a six-token integer GEMM (12 VPDPBUSD per group
//     of 4 columns into int32 registers Y16-Y27, scaled into float32 ones per block).
//     Without VNNI, prefill widens each panel to float32 and runs the float32 GEMM. On
//     the test models logits stay within 1.4-3%
//     of the largest |logit| of the stored weights' (tests_py/test_int8_weights.py),
//     and greedy text matches where the model's choice has a margin; at near-ties of
//     an untrained random model it may pick the other token. Without VNNI, decode runs
//     the portable Go kernel (correct, several times slower).
//
//   - RMSNorm, SiLUMul and RoPE, exported so that they can be checked on their own.
//
// Activations are gorgonia.org/tensor *tensor.Dense float32 values, used eagerly (the
// KV cache grows each step, which gorgonia's graph machines do not fit).
//
// # What it must not know
//
// Tokenizers, vocabularies, sampling, grammars and text: it maps token ids to logits.
// gocore/generate puts those together.
//
// # Errors
//
// Missing files, unsupported architectures (*ArchitectureError, naming it), invalid
// config fields (*ConfigError) and tensors missing or of the wrong shape (*TensorError,
// naming the tensor and both shapes) are returned as errors; nothing panics across the
// package boundary.
package model
