package sampling

import (
	"errors"
	"fmt"
	"math"
)

// ParamError reports a bad parameter or bad input. Param is llama.cpp's name for it
// (top_p, top_k, logits, candidates, samplers, ...), so the message tells the user which
// knob to change.
type ParamError struct {
	Param  string // parameter name, as llama.cpp spells it
	Value  any    // the offending value (may be nil)
	Reason string // what is wrong and what is allowed
}

// Error formats the problem with the parameter name first.
func (e *ParamError) Error() string {
	if e.Value == nil {
		return fmt.Sprintf("sampling: %s: %s", e.Param, e.Reason)
	}
	return fmt.Sprintf("sampling: %s = %v: %s", e.Param, e.Value, e.Reason)
}

// ErrEmptyCandidates is returned when a sampler is applied to an empty candidate list.
var ErrEmptyCandidates error = &ParamError{Param: "candidates", Reason: "empty candidate list"}

// ErrNoToken is returned when a chain ran but no sampler selected a token (the chain
// does not end in dist, greedy or mirostat).
var ErrNoToken = errors.New("sampling: no token selected: the chain must end in dist, greedy or mirostat")

// ErrGrammarRejectsAll is returned when the grammar allows no token at all.
var ErrGrammarRejectsAll = errors.New("sampling: the grammar allows no token (mask is empty)")

func paramErr(name string, v any, reason string) error {
	return &ParamError{Param: name, Value: v, Reason: reason}
}

// checkFinite rejects NaN and infinities (for parameters, not logits).
func checkFinite(name string, v float32) error {
	if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
		return paramErr(name, v, "must be a finite number")
	}
	return nil
}

func checkRange(name string, v, lo, hi float32) error {
	if err := checkFinite(name, v); err != nil {
		return err
	}
	if v < lo || v > hi {
		return paramErr(name, v, fmt.Sprintf("must be in [%g, %g]", lo, hi))
	}
	return nil
}

func checkNonNeg(name string, v int) error {
	if v < 0 {
		return paramErr(name, v, "must be >= 0")
	}
	return nil
}
