package session

// ForcedBytes returns the bytes the grammar forces next, up to max (see
// engine.Matcher.ForcedBytes); a limit that keeps the answer from being exact is an
// *engine.LimitError.
func (m EngineMatcher) ForcedBytes(max int) ([]byte, error) {
	b, err := m.Matcher.ForcedBytes(max)
	if err != nil {
		return nil, limitError(err, m.maxStacks)
	}
	return b, nil
}
