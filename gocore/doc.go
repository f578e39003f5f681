// Package gocore is the root of tether's Go core: grammar-constrained decoding.
//
// The work lives in its sub-packages:
//
//	tokenizer  Hugging Face tokenizers through github.com/daulet/tokenizers (cgo + Rust);
//	           the only package that links the Rust static library
//	safecall   turns panics into errors at API boundaries (Python must never see a Go panic)
//	cmd/tether the command-line tool
package gocore
