package session

import (
	"github.com/tetherlm/tether/gocore/engine"
	"github.com/tetherlm/tether/gocore/tokenmask"
)

// This file is the only place that knows how the engine reports a limit:
// Matcher.FillMask and the accepts return a *engine.LimitError, which limitError
// (engine.go) passes through unchanged.

// engineDefaultMaxStacks is the engine's stack limit when none is given.
const engineDefaultMaxStacks = engine.DefaultMaxStacks

// engineFillMask fills mask and returns the error that kept it from being exact.
func engineFillMask(m *engine.Matcher, mask tokenmask.Mask, _ int) error { return m.FillMask(mask) }

// engineAccept runs step (an AcceptToken or AcceptBytes of m).
func engineAccept(_ *engine.Matcher, _ int, step func() error) error { return step() }
