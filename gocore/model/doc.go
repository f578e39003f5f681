// Package model runs Llama-family decoders from a Hugging Face model directory, on the
// CPU, computing in float32 on f32 or bf16 weights:
//
//   - LlamaForCausalLM: Llama 2 and 3 (llama3 and linear rope scaling), SmolLM;
//   - Qwen2ForCausalLM (q/k/v biases) and Qwen3ForCausalLM (per-head q_norm/k_norm
//     before RoPE, head_dim from the config), both with use_sliding_window;
//   - MistralForCausalLM: Llama's pass with sliding_window (null: none);
//   - Phi3ForCausalLM: fused qkv_proj and gate_up_proj (split into their parts at
//     load), partial_rotary_factor, longrope scaling ("su"; transformers' per-call
//     switch from short_factor to long_factor past original_max_position_embeddings);
//   - Gemma3ForCausalLM (model_type gemma3_text, the text model; not
//     Gemma3ForConditionalGeneration): (1+w) RMSNorms, sandwich norms around attention
//     and MLP, per-head q/k norms, GeGLU with tanh-GELU, the embedding scaled by
//     √hidden_size (rounded to the checkpoint's dtype, as transformers does),
//     query_pre_attn_scalar, sliding-window layers interleaved with global ones
//     (layer_types or sliding_window_pattern), a RoPE base per layer type
//     (rope_local_base_freq; rope_theta and rope_scaling for global layers) and
//     final_logit_softcapping. attn_logit_softcapping is ignored, as transformers'
//     Gemma3 attention ignores it.
//
// Each architecture is a set of Config fields switching variants of the one forward
// pass on, not a fork of it, so every Engine runs them all.
//
// # What it owns
//
//   - SafeTensors: the safetensors format (an 8-byte header length, a JSON header, raw
//     little-endian data), single files and sharded checkpoints
//     (model.safetensors.index.json), memory-mapped where the platform allows it;
//     F32 and BF16 tensors alias the mapping; F16 is widened to float32 at load.
//
//   - Config: the fields of config.json the forward pass needs, with transformers'
//     defaults per architecture, in both the transformers 4 (rope_theta, rope_scaling,
//     rope_local_base_freq, sliding_window_pattern) and 5 (rope_parameters, per layer
//     type for Gemma3; layer_types) spellings. Options the pass cannot honour (an
//     unknown rope type or activation, bidirectional attention, ...) are errors that
//     name the field.
//
//   - Model and State: the decoder forward pass in the order of the math (embedding,
//     ×√hidden for Gemma; per layer RMSNorm → q/k/v projections (+bias) → per-head q/k
//     RMSNorm (Qwen3, Gemma3) → rotary embedding in transformers' rotate_half
//     convention, over the first RotaryDim values of a head, with the layer type's base
//     → grouped-query causal attention over a KV cache, with the layer's window and
//     scale → o_proj (→ RMSNorm, Gemma3) → residual → RMSNorm → gated MLP (SiLU or
//     tanh-GELU) (→ RMSNorm, Gemma3) → residual; final RMSNorm; lm_head or the tied
//     embedding; the logits' softcap). A Model is immutable after Load; a State is one
//     sequence (its KV cache and scratch buffers, allocated once and grown on demand).
//
//   - Engine: the interface for everything that touches activations: the weight
//     products (with the fused forms the decoder uses: RMSNorm with the q/k/v
//     projections, RMSNorm with gate/up and the gated activation (NormGLU), a
//     projection added to the residual stream, plain (Residual) or normalized first
//     (ResidualNorm)), RMSNorm, per-head RMSNorm (HeadRMSNorm), RoPE (possibly
//     partial), attention over a KV cache it owns (with a scale and a sliding window:
//     AttentionOptions), and scaled embedding Rows; weights and caches are handles, so
//     an accelerator engine can keep weights, activations and the cache on the device.
//     Model-level variants that need no new operation stay out of the interface:
//     (1+w) norms are folded into the uploaded weights (in float32, uploaded as
//     float32: 1+w rounded to bf16 would lose w's low bits), fused projections are
//     split at load, RoPE tables are computed on the host, and the final softcap is
//     applied to the host logits.
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

//   - RMSNorm, SiLUMul, GELUTanhMul and RoPE, exported so that they can be checked on
//     their own. The CPU engine's tanh-GELU is portable Go (no assembly kernel yet);
//     the others have AVX2 kernels. The KV cache keeps every position even for
//     sliding layers (attention reads only the window).
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
