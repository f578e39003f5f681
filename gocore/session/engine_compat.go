package session

import "github.com/tetherlm/tether/gocore/engine"

// This file is the only place that knows how the engine reports a limit. Today
// Matcher.FillMask returns nothing and a limit shows in Matcher.Err(); once
// FillMask returns an error (a *engine.LimitError, issue 12), these become:
//
//	func engineFillMask(m *engine.Matcher, mask []uint32, _ int) error { return m.FillMask(mask) }
//	func engineAccept(m *engine.Matcher, _ int, step func() error) error { return step() }
//	const engineDefaultMaxStacks = engine.DefaultMaxStacks
//
// and limitError (engine.go) passes a *engine.LimitError through unchanged.

// engineDefaultMaxStacks is the engine's stack limit when none is given.
const engineDefaultMaxStacks = 8192

// engineFillMask fills mask and returns the error that kept it from being exact.
func engineFillMask(m *engine.Matcher, mask []uint32, maxStacks int) error {
	m.FillMask(mask)
	if err := m.Err(); err != nil {
		return limitError(err, maxStacks)
	}
	return nil
}

// engineAccept runs step (an AcceptToken or AcceptBytes of m) and turns a refusal
// that a limit caused into that limit's error.
func engineAccept(m *engine.Matcher, maxStacks int, step func() error) error {
	before := m.Err()
	err := step()
	if err != nil {
		if after := m.Err(); after != nil && after != before {
			return limitError(after, maxStacks)
		}
	}
	return err
}
