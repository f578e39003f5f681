// Package sampling picks the next token from a row of logits: a candidate array, the
// samplers of llama.cpp (greedy, dist, logit-bias, penalties, DRY, top-n-sigma, top-k,
// typical, top-p, min-p, p-less, XTC, temperature, extended temperature, mirostat v1 and
// v2), the ordered chain built from an order spec, and grammar-aware sampling.
//
// Semantics, parameter names and defaults follow llama.cpp's src/llama-sampling.cpp and
// common/sampling.cpp (shared/seeds/004 walks through them), and the package is checked
// against the vectors of llama.cpp's tests/test-sampling.cpp
// (shared/conformance/llamacpp_sampling_cases.json).
//
// # What it owns
//
//   - Candidates: the llama_token_data_array of llama.cpp ({id, logit, p}, Selected, Sorted).
//   - Sampler: one small interface (Name, Apply, Accept, Reset, Clone); each sampler keeps
//     its own state (penalty history, DRY history, mirostat mu, random generator).
//   - Chain: an ordered list of samplers; Params and ParseOrder build the llama.cpp default
//     chain (logit-bias first, dist or greedy last, mirostat replacing the middle) and
//     return warnings for orders that make little sense.
//   - Session: one generated sequence (llama.cpp's common_sampler): it owns a candidate
//     buffer and a mask buffer, samples first and checks the pick against a Grammar, and
//     masks and resamples only when the pick is rejected (or masks first on request).
//   - MT19937: the random generator, bit-exact with C++'s std::mt19937 and libstdc++'s
//     uniform_real_distribution, so a seed gives the same tokens on every run and platform.
//
// # What it must not know
//
// Nothing about grammars beyond the Grammar interface (gocore/engine's Matcher satisfies
// it), nothing about tokenizer files or gocore/vocab (DRY takes token-id breaker sequences,
// or TokenTexts plus an encode function to derive them from text), nothing about models,
// tensors or Python. It uses the standard library only and no cgo.
//
// # Errors and concurrency
//
// Bad parameters and bad input are errors (*ParamError names the parameter, following
// llama.cpp's names); nothing panics across the package boundary. A Sampler, Chain or
// Session is used by one goroutine at a time; Clone gives an independent copy.
package sampling
