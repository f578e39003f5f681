package engine

import (
	"slices"

	"github.com/tetherlm/tether/gocore/tokenmask"
)

// A limit met by a token's step from the whole configuration (the step AcceptToken
// takes) may not be met by the mask, which works group by group (fillMask: stacks
// grouped by position, position caches, walks of each group). Where that happens,
// the token's verdict is taken from the mask's own machinery (maskVerdict), which
// is exact whenever it meets no limit itself; an allowed token then leads to a
// limit state (arena.overCfg), where every later question reports the limit. So
// mask and AcceptToken never disagree: both answer the same, or both report a
// limit.

// maskVerdict decides token id the way fillMask decides its bit, for configuration
// c. A limit met on the way is left in a.hit.
func (m *Matcher) maskVerdict(c int32, id int) bool {
	g := m.g
	a := m.fam.a
	p := a.planFor(c)
	isEOG := g.isEOG[id]
	if len(p.neg) > 0 && !isEOG && !(len(p.neg) == 1 && int(p.neg[0]) == id) {
		return true
	}
	if slices.Contains(p.pos, int32(id)) {
		return true
	}
	for _, n := range p.exc {
		if m.exceptVerdict(n, id) {
			return true
		}
	}
	if isEOG && p.canEnd {
		return true
	}
	k := g.trie.index[id]
	if k < 0 {
		return false // not a text token: matched by id only
	}
	text := g.vocab.TokenBytes(id)
	alive := func(c int32) bool {
		_, off := a.walkBytes(c, text)
		return off == len(text)
	}
	for _, gr := range p.groups {
		pc := gr.slot.cache(g)
		switch {
		case pc.overflow != nil:
			if alive(gr.cfg) {
				return true
			}
		case pc.has(id):
			return true
		case len(pc.sub) > 1:
			if inTrie(pc.sub, text, k) && alive(gr.cfg) {
				return true
			}
		case pc.uncertain > 0 && pc.sub == nil:
			if alive(gr.cfg) {
				return true
			}
		}
	}
	return p.partial != cfgDead && alive(p.partial)
}

// has reports whether the cache accepts token id.
func (pc *posCache) has(id int) bool {
	if pc.accepted != nil {
		return pc.accepted.Has(id)
	}
	return slices.Contains(pc.acceptIDs, int32(id))
}

// inTrie reports whether the flat trie nodes holds the token with bytes text and
// index k into trie.order.
func inTrie(nodes []trieNode, text []byte, k int32) bool {
	i, end := int32(1), int32(len(nodes))
	for d := 0; d < len(text); d++ {
		for i < end && nodes[i].b != text[d] {
			i = nodes[i].next
		}
		if i >= end {
			return false
		}
		end = nodes[i].next
		if d == len(text)-1 {
			return nodes[i].lo <= k && k < nodes[i].hi
		}
		i++
	}
	return false
}

// overCfg returns the family's limit state: a configuration with no stacks known,
// marked over the stack limit, so that every question about it reports the limit.
func (a *arena) overCfg() int32 {
	if a.over == 0 {
		a.over = int32(len(a.cfgs))
		a.cfgs = append(a.cfgs, config{noExit: a.over, over: true})
		a.tabs = append(a.tabs, nil)
		a.info = append(a.info, a.over)
		a.lit = append(a.lit, 0)
	}
	return a.over
}

// ReferenceMask fills mask as FillMask does, but the slow, plain way: one walk of
// the whole token trie from the full state, without position caches, run
// analysis or grouping. It exists to check FillMask against (tests, fuzzing,
// debugging); its answer is the one AcceptToken gives, token by token, and where a
// limit prevents it, it returns a *LimitError and leaves the mask cleared.
func (m *Matcher) ReferenceMask(mask tokenmask.Mask) error {
	m.fam.mu.Lock()
	defer m.fam.mu.Unlock()
	clear(mask)
	limit := min(len(mask)*32, m.g.size)
	if m.awaiting {
		m.fillAll(mask, limit, true)
		return nil
	}
	if err := m.limitState(); err != nil {
		return err
	}
	a := m.fam.a
	a.hit = nil
	p := a.planFor(m.cfg)
	if len(p.neg) > 0 {
		m.fillAll(mask, limit, false)
		if n := p.neg[0]; len(p.neg) == 1 && int(n) < limit {
			mask.Unset(int(n))
		}
	}
	m.walk(m.g.trie.nodes, m.cfg, mask, limit)
	for _, id := range p.pos {
		if int(id) < limit {
			mask.Set(int(id))
		}
	}
	for _, n := range p.exc {
		m.fillExcept(n, mask, limit)
	}
	if p.canEnd {
		for _, id := range m.g.eog {
			if int(id) < limit {
				mask.Set(int(id))
			}
		}
	}
	mask.ClearFrom(limit)
	if err := m.takeLimit(); err != nil {
		clear(mask)
		return err
	}
	return nil
}
