package bindings

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tetherlm/tether/gocore/engine"
	"github.com/tetherlm/tether/gocore/gbnf"
	"github.com/tetherlm/tether/gocore/session"
)

// structuredPrefix marks an error message that carries fields as JSON; python/tether
// turns it into the matching exception (GrammarError with line and column, SchemaError
// with keyword and JSON pointer, GrammarLimitError for a limit). Keep it in sync with
// python/tether/_native_call.py.
const structuredPrefix = "tether-error:"

type structured struct {
	Kind    string  `json:"kind"`
	Message string  `json:"message"`
	Line    int     `json:"line,omitempty"`
	Col     int     `json:"col,omitempty"`
	Keyword string  `json:"keyword,omitempty"`
	Pointer *string `json:"pointer,omitempty"` // "" is the root: keep it when set
	Limit   string  `json:"limit,omitempty"`
}

func (s structured) encode() error {
	b, _ := json.Marshal(s)
	return errors.New(structuredPrefix + string(b))
}

// coreError gives an error from gocore the form Python maps to an exception type:
// a limit (*engine.LimitError, anywhere in the chain) becomes GrammarLimitError, a
// state that allows no token GrammarError, a parse or compile error GrammarError with
// its position. Other errors pass unchanged (internal faults keep their "tether
// internal error" prefix, which Python raises as InternalError).
func coreError(err error) error {
	if err == nil {
		return nil
	}
	var le *engine.LimitError
	var de *session.DeadEndError
	var ie *session.InternalError
	var pe *gbnf.Error
	var ce *engine.CompileError
	switch {
	case errors.As(err, &ie):
		// Keep the prefix first: Python raises InternalError on it.
		return fmt.Errorf("%s (in: %v)", ie.Error(), err)
	case errors.As(err, &le):
		return structured{Kind: "limit", Message: err.Error(), Limit: le.Limit}.encode()
	case errors.As(err, &de):
		return structured{Kind: "dead_end", Message: err.Error()}.encode()
	case errors.As(err, &pe):
		return structured{Kind: "grammar", Message: err.Error(), Line: pe.Pos.Line, Col: pe.Pos.Col}.encode()
	case errors.As(err, &ce):
		return structured{Kind: "grammar", Message: err.Error(), Line: ce.Pos.Line, Col: ce.Pos.Col}.encode()
	}
	return err
}

// grammarError wraps an error from parsing or compiling a grammar so that Python
// raises GrammarError (or GrammarLimitError for a limit), with the position when the
// error has one.
func grammarError(err error) error {
	if err == nil {
		return nil
	}
	if e := coreError(err); e != err {
		return e
	}
	return structured{Kind: "grammar", Message: err.Error()}.encode()
}
