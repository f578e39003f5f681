// Package generate produces text from a model directory without Python: it tokenizes
// the prompt (gocore/tokenizer), runs the prefill and then one decode step per token
// (gocore/model), picks each token with tether's sampler chain (gocore/sampling),
// optionally constrained by a grammar given as GBNF, a JSON Schema or a regular
// expression (gocore/gbnf, gocore/schema, gocore/engine), and stops on an
// end-of-generation token (gocore/vocab, with the model's config files), a token
// limit, the end of the context or the caller's context.Context.
//
// # What it owns
//
//   - Generator: a loaded model with its tokenizer and vocabulary.
//   - Options: sampling parameters, the constraint, limits and the streaming callback.
//   - Result: the tokens and exact bytes produced, why generation stopped, and the
//     prefill and decode speeds (tokens per second).
//
// # What it must not know
//
// The forward pass's internals (only model.Model's Forward and State), grammar
// internals (only the sampling.Grammar interface that *engine.Matcher satisfies), and
// anything about the command line or Python.
package generate
