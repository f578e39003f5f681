package bindings

import (
	"encoding/json"
	"errors"

	"github.com/tetherlm/tether/gocore/engine"
	"github.com/tetherlm/tether/gocore/gbnf"
)

// structuredPrefix marks an error message that carries fields as JSON; python/tether
// turns it into the matching exception (GrammarError with line and column, SchemaError
// with keyword and JSON pointer). Keep it in sync with python/tether/_native_call.py.
const structuredPrefix = "tether-error:"

type structured struct {
	Kind    string  `json:"kind"`
	Message string  `json:"message"`
	Line    int     `json:"line,omitempty"`
	Col     int     `json:"col,omitempty"`
	Keyword string  `json:"keyword,omitempty"`
	Pointer *string `json:"pointer,omitempty"` // "" is the root: keep it when set
}

func (s structured) encode() error {
	b, _ := json.Marshal(s)
	return errors.New(structuredPrefix + string(b))
}

// grammarError wraps an error from parsing or compiling a grammar so that Python
// raises GrammarError, with the position when the error has one.
func grammarError(err error) error {
	if err == nil {
		return nil
	}
	s := structured{Kind: "grammar", Message: err.Error()}
	var pe *gbnf.Error
	var ce *engine.CompileError
	switch {
	case errors.As(err, &pe):
		s.Line, s.Col = pe.Pos.Line, pe.Pos.Col
	case errors.As(err, &ce):
		s.Line, s.Col = ce.Pos.Line, ce.Pos.Col
	}
	return s.encode()
}
