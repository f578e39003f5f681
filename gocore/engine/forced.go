package engine

// ForcedBytes returns the bytes the grammar forces next: the longest byte string that
// every continuation of the current state begins with, up to max bytes (jump-forward
// decoding can emit them without asking the model). It stops early where the grammar
// could end, where a special token the grammar names could come next, and where more
// than one byte could follow; so the answer may end inside a UTF-8 character, whose
// remaining bytes are not forced. A lazy matcher awaiting its trigger is forced to
// nothing. The matcher is not changed. An error means a limit kept the answer from being
// exact (no bytes are returned then).
func (m *Matcher) ForcedBytes(max int) (out []byte, err error) {
	m.fam.mu.Lock()
	defer m.fam.mu.Unlock()
	if m.awaiting || m.cfg == cfgDead {
		return nil, nil
	}
	if err := m.limitState(); err != nil {
		return nil, err
	}
	a := m.fam.a
	a.hit = nil
	c := m.cfg
	for len(out) < max {
		if a.cfgs[c].canEnd || (m.g.hasToken && a.cfgs[c].tokTops) {
			break
		}
		if a.cfgs[c].over {
			return nil, m.g.stackLimit(len(a.cfgs[c].entries))
		}
		next, n := cfgDead, 0
		var forced byte
		for b := 0; b < 256 && n < 2; b++ {
			if nx := a.step(c, byte(b)); nx != cfgDead {
				next, forced = nx, byte(b)
				n++
			}
		}
		if err := m.takeLimit(); err != nil {
			return nil, err
		}
		if n != 1 {
			break
		}
		out = append(out, forced)
		c = next
	}
	return out, nil
}

// Grammar returns the grammar the matcher follows.
func (m *Matcher) Grammar() *Grammar { return m.g }
