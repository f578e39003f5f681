package engine

import (
	"slices"

	"github.com/tetherlm/tether/gocore/tokenmask"
)

// maskPlan is how to build the mask of one configuration, worked out once per
// configuration: its stacks grouped by the terminal on top.
type maskPlan struct {
	groups  []planGroup
	partial int32   // configuration of the stacks inside a UTF-8 character or on a raw byte, or cfgDead
	canEnd  bool    // a stack is empty: end-of-generation tokens are allowed
	pos     []int32 // token ids named by `<[N]>` on top of a stack
	neg     []int32 // distinct ids N of `!<[N]>` on top of a stack
	exc     []int32 // nodes with an <except!(...)> element on top (tokenelems.go)
}

type planGroup struct {
	slot *posSlot // the position cache of the stacks' common prefix
	cfg  int32    // the configuration of just those stacks
}

func (a *arena) planFor(c int32) *maskPlan {
	if p := a.cfgs[c].plan; p != nil {
		return p
	}
	p := &maskPlan{}
	bySlot := map[*posSlot][]entry{}
	var slots []*posSlot
	var part []entry
	for _, e := range a.cfgs[c].entries {
		n := e.node()
		if n <= nodeExit {
			if n == nodeBottom && e.partial() == 0 {
				p.canEnd = true
			}
			continue
		}
		if e.partial() != 0 {
			part = append(part, e)
			continue
		}
		el := a.nodes[n].elem
		x := a.g.elems[el]
		switch x.op {
		case opChar:
			// Merged tails split for deeper keys; each slot's uncertain tokens
			// are walked from the whole entry (its stacks are a superset of
			// the slot's, all in the configuration, so the mask stays exact).
			for _, u := range a.unfold(n) {
				s := a.g.slotOf(a, u)
				if _, ok := bySlot[s]; !ok {
					slots = append(slots, s)
				}
				bySlot[s] = append(bySlot[s], e)
			}
		case opByte:
			part = append(part, e) // walked exactly, like a partial character
		case opToken:
			if isExceptArg(x.neg, x.arg) {
				p.exc = append(p.exc, n)
			} else if x.neg {
				if !slices.Contains(p.neg, x.arg) {
					p.neg = append(p.neg, x.arg)
				}
			} else if !slices.Contains(p.pos, x.arg) {
				p.pos = append(p.pos, x.arg)
			}
		}
	}
	for _, s := range slots {
		es := bySlot[s]
		slices.Sort(es)
		es = slices.Compact(es)
		p.groups = append(p.groups, planGroup{slot: s, cfg: a.internCfg(es)})
	}
	if len(part) > 0 {
		p.partial = a.internCfg(part)
	}
	a.cfgs[c].plan = p
	return p
}

// fillMask writes the mask of configuration c into mask (already zeroed). A limit
// met on the way is left in a.hit (the mask is then not exact).
func (m *Matcher) fillMask(c int32, mask tokenmask.Mask) {
	g := m.g
	a := m.fam.a
	p := a.planFor(c)
	limit := len(mask) * 32
	if limit > g.size {
		limit = g.size
	}
	if len(p.neg) > 0 {
		m.fillAll(mask, limit, false)
		if len(p.neg) == 1 {
			n := p.neg[0]
			if int(n) < limit {
				mask.Unset(int(n))
			}
		}
	}
	empty := len(p.neg) == 0 // nothing set in mask yet
	for _, gr := range p.groups {
		if a.hit != nil {
			return // a limit was met: the caller discards the mask
		}
		pc := gr.slot.cache(g)
		if pc.overflow != nil {
			// The context-free analysis met a limit, so its split is not
			// exact: walk the real stacks instead (exact, or a limit error).
			m.walk(g.trie.nodes, gr.cfg, mask, limit)
			empty = false
			continue
		}
		if empty && pc.accepted != nil {
			copy(mask, pc.accepted) // the mask is clear: the same as OR, and a tenth of its cost
		} else {
			pc.orInto(mask)
		}
		empty = false
		if len(pc.sub) > 1 {
			m.walk(pc.sub, gr.cfg, mask, limit)
		} else if pc.uncertain > 0 && pc.sub == nil {
			// Not expected (slotOf never picks a cache without a trie of its
			// uncertain tokens): the exact walk.
			m.walk(g.trie.nodes, gr.cfg, mask, limit)
		}
	}
	if p.partial != cfgDead {
		m.walk(g.trie.nodes, p.partial, mask, limit)
	}
	for _, id := range p.pos {
		if int(id) < limit {
			mask.Set(int(id))
		}
	}
	for _, n := range p.exc {
		m.fillExcept(n, mask, limit)
	}
	if p.canEnd {
		for _, id := range g.eog {
			if int(id) < limit {
				mask.Set(int(id))
			}
		}
	}
	mask.ClearFrom(limit)
}

// fillAll sets every id below limit; end-of-generation ids only if withEOG.
func (m *Matcher) fillAll(mask tokenmask.Mask, limit int, withEOG bool) {
	mask.Fill(limit)
	if !withEOG {
		for _, id := range m.g.eog {
			if int(id) < limit {
				mask.Unset(int(id))
			}
		}
	}
}

// walk visits a flat trie from configuration start, advancing one byte per node and
// skipping the subtree of every byte no stack takes; each token whose node is
// reached alive is set in mask. This is the hot loop: a node costs one memoized
// transition lookup. A step that hits a limit ends the walk with a.hit set (the
// mask is then discarded).
func (m *Matcher) walk(nodes []trieNode, start int32, mask tokenmask.Mask, limit int) {
	a := m.fam.a
	order := m.g.trie.order
	st := m.depth
	st[0] = start
	n := int32(len(nodes))
	for i := int32(1); i < n; {
		nd := &nodes[i]
		c := st[nd.depth-1]
		nx := a.stepKnown(c, nd.b)
		if nx == cfgUnknown {
			nx = a.stepSlow(c, nd.b)
		}
		if nx <= cfgDead {
			if nx == cfgLimit {
				// The mask cannot be exact: the caller discards it and
				// reports the limit, so walking on is wasted work.
				a.noteLimit()
				return
			}
			i = nd.next
			continue
		}
		st[nd.depth] = nx
		for k := nd.lo; k < nd.hi; k++ {
			if id := uint(order[k]); id < uint(limit) {
				// The hot loop: id < limit <= len(mask)*32 is checked
				// here, so the bit is set directly (tokenmask's layout).
				mask[id>>5] |= 1 << (id & 31)
			}
		}
		i++
	}
}

// walkBytes advances configuration c over bytes; it returns the last live
// configuration, and the offset of the first byte refused (len(b) if none).
func (a *arena) walkBytes(c int32, b []byte) (int32, int) {
	for i, x := range b {
		nx := a.step(c, x)
		if nx == cfgDead {
			return c, i
		}
		c = nx
	}
	return c, len(b)
}
