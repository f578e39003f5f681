package model

import "gorgonia.org/tensor"

// Weight is a read-only parameter matrix held by an Engine: in host memory for the CPU
// engine, in device memory for an accelerator engine. The model only passes handles
// back to the engine that made them.
type Weight interface {
	// Name is the checkpoint's tensor name, for error messages.
	Name() string
	// Shape is [rows, cols] as in the checkpoint (Hugging Face's [out_features, in_features]).
	Shape() tensor.Shape
}

// Engine runs the weight-bound operations of the forward pass: the matrix products and
// the embedding lookup. Activations are host *tensor.Dense values of float32; weights
// are handles, so an accelerator engine can keep them in device memory. Everything else
// in the forward pass (norms, rotary embeddings, attention) is plain Go in this package.
//
// An Engine is used by one forward pass at a time; its methods return errors for shape
// mismatches instead of panicking.
type Engine interface {
	// Name says what runs the products, e.g. "cpu (2 threads, avx2+fma)".
	Name() string
	// Upload takes a host matrix [rows, cols] of float32 and returns a handle to use in
	// the other methods. The engine may keep t's backing slice (the CPU engine does):
	// the caller must not modify it afterwards.
	Upload(name string, t *tensor.Dense) (Weight, error)
	// MatVec computes dst[o] = Σ_i w[o,i]·x[i]: x has cols elements, dst rows.
	MatVec(dst, x *tensor.Dense, w Weight) error
	// MatMul computes dst[t,o] = Σ_i x[t,i]·w[o,i], i.e. dst = x·wᵀ: x is [n, cols] and
	// dst [n, rows]. It is the batched MatVec of prefill.
	MatMul(dst, x *tensor.Dense, w Weight) error
	// Rows copies the rows ids of w (an embedding table) into dst [len(ids), cols].
	Rows(dst *tensor.Dense, w Weight, ids []int) error
	// Close releases what the engine holds (device memory, worker goroutines).
	Close() error
}
