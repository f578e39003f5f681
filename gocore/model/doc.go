// Package model runs Llama-family decoders (LlamaForCausalLM: Llama 2 and 3 with llama3
// rope scaling, SmolLM; Qwen2ForCausalLM with its q/k/v biases) from a Hugging Face
// model directory, on the CPU, in float32.
//
// # What it owns
//
//   - SafeTensors: the safetensors format (an 8-byte header length, a JSON header, raw
//     little-endian data), single files and sharded checkpoints
//     (model.safetensors.index.json), memory-mapped where the platform allows it;
//     F32 tensors alias the mapping, BF16 and F16 are widened to float32 at load.
//   - Config: the fields of config.json the forward pass needs, with transformers'
//     defaults, in both the transformers 4 (rope_theta, rope_scaling) and 5
//     (rope_parameters) spellings.
//   - Model and State: the decoder forward pass in the order of the math (embedding,
//     per layer RMSNorm → q/k/v projections (+bias) → rotary embedding in transformers'
//     rotate_half convention → grouped-query causal attention over a KV cache → o_proj
//     → residual → RMSNorm → SwiGLU MLP → residual; final RMSNorm; lm_head or the tied
//     embedding). A Model is immutable after Load; a State is one sequence (its KV cache
//     and scratch buffers, allocated once and grown on demand).
//   - Engine: the interface for the weight-bound products (MatVec, MatMul, embedding
//     Rows) on weight handles, so that an accelerator engine can hold the weights in
//     device memory; CPU is the host implementation, spreading rows over goroutines
//     with an AVX2/FMA dot-product kernel (a Go loop elsewhere).
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
