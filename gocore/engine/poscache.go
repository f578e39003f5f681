package engine

import (
	"encoding/binary"
	"sync/atomic"
)

// posCache is the context-independent split of the vocabulary for one terminal
// position p (a char element on top of a stack, between characters), computed once
// per Grammar by walking the token trie with the stack [p | exit], where "exit"
// stands for whatever the real stack holds below p's frame:
//
//   - accepted: tokens that some path matches without leaving p's frame, or that
//     end exactly where the frame ends; they are allowed whatever lies below.
//   - uncertain: tokens that leave the frame with bytes left over (and whose next
//     byte may follow p's rule somewhere in the grammar); only these need the real
//     stack, and they are kept as a small trie of their own.
//   - all other tokens are rejected whatever lies below.
type posCache struct {
	accepted  []uint32   // bitset over token ids
	count     int        // number of accepted tokens
	sub       []trieNode // trie of the uncertain tokens (indices into trie.order)
	subDepth  int
	overflow  error // some token was too ambiguous to follow and is left out
	uncertain int   // number of uncertain tokens
}

// A position cache is keyed by the top levels of a stack. One level (the rule
// alternative on top) is shared by every context the rule is used in, but it can be
// too shallow, for instance where the parser made a group its own rule: the frame
// ends after one character and nearly every token is uncertain. So the depth is
// adaptive: a stack uses the shallowest key whose cache leaves at most maxUncertain
// tokens uncertain, up to maxKeyDepth levels.
const (
	maxKeyDepth  = 4
	maxUncertain = 1024
)

// slotOf picks the position cache for stack node n (see maxKeyDepth).
func (g *Grammar) slotOf(a *arena, n int32) *posSlot {
	for d := 1; ; d++ {
		s := g.slotFor(a, n, d)
		if d >= maxKeyDepth || s.bottom || s.cache(g).uncertain <= maxUncertain {
			return s
		}
	}
}

// posSlot is the lazily computed cache for one stack prefix.
type posSlot struct {
	elems  []int32 // top first
	bottom bool    // the stack ends below elems (no caller frame: exact)
	pc     atomic.Pointer[posCache]
}

// slotFor returns the slot of the top depth levels of stack node n in arena a.
func (g *Grammar) slotFor(a *arena, n int32, depth int) *posSlot {
	var buf [maxKeyDepth]int32
	k := 0
	t := n
	for k < depth && t > nodeExit {
		buf[k] = a.nodes[t].elem
		t = a.nodes[t].tail
		k++
	}
	bottom := t == nodeBottom
	key := make([]byte, 0, 4*k+1)
	for _, e := range buf[:k] {
		key = binary.LittleEndian.AppendUint32(key, uint32(e))
	}
	if bottom {
		key = append(key, 1)
	}
	g.posMu.Lock()
	defer g.posMu.Unlock()
	if s, ok := g.slots[string(key)]; ok {
		return s
	}
	s := &posSlot{elems: append([]int32(nil), buf[:k]...), bottom: bottom}
	g.slots[string(key)] = s
	return s
}

// cache returns the slot's cache, computing it on first use.
func (s *posSlot) cache(g *Grammar) *posCache {
	if pc := s.pc.Load(); pc != nil {
		return pc
	}
	g.posMu.Lock()
	defer g.posMu.Unlock()
	if pc := s.pc.Load(); pc != nil {
		return pc
	}
	pc := g.analyze(s)
	s.pc.Store(pc)
	return pc
}

// analyze walks the whole token trie from the slot's stack prefix.
func (g *Grammar) analyze(s *posSlot) *posCache {
	a := g.local
	t := g.trie
	words := (g.size + 31) / 32
	pc := &posCache{accepted: make([]uint32, words)}
	follow := &g.follow[g.ruleOf[s.elems[len(s.elems)-1]]]
	var unc []int32 // uncertain tokens, as indices into t.order (preorder = sorted)

	cfg := make([]int32, t.maxDepth+1)
	exited := make([]bool, t.maxDepth+1) // some path left the frame at or above this depth
	cfg[0] = a.startAt(s.elems, s.bottom)
	nodes := t.nodes
	order := t.order
	acc := pc.accepted
	for i := int32(1); i < int32(len(nodes)); {
		nd := &nodes[i]
		d := nd.depth
		parent := cfg[d-1]
		nx := cfgDead
		if parent != cfgDead {
			if tb := a.tabs[parent]; tb != nil && tb[nd.b] != cfgUnknown {
				nx = tb[nd.b]
			} else {
				nx = a.stepSlow(parent, nd.b)
			}
		}
		if nx == cfgDead {
			if exited[d-1] {
				// Leaving the frame: the next byte must be able to follow the rule.
				if !exitAllowed(follow, exited, nodes, i) {
					i = nd.next
					continue
				}
				// this token and every token below it are uncertain
				for j := i; j < nd.next; j++ {
					for k := nodes[j].lo; k < nodes[j].hi; k++ {
						unc = append(unc, k)
					}
				}
			}
			i = nd.next
			continue
		}
		for k := nd.lo; k < nd.hi; k++ {
			id := order[k]
			acc[id>>5] |= 1 << (uint32(id) & 31)
			pc.count++
		}
		inf := a.info[nx]
		exited[d] = exited[d-1] || inf&exitBit != 0
		cfg[d] = inf &^ exitBit
		i++
	}
	pc.overflow, a.overflow = a.overflow, nil
	pc.uncertain = len(unc)
	if len(unc) > 0 {
		pc.sub, pc.subDepth = buildNodes(len(unc),
			func(k int) []byte { return g.vocab.TokenBytes(int(t.order[unc[k]])) },
			func(k int) int32 { return unc[k] })
	}
	// Bound the analysis arena: transition tables are a cache.
	a.trim(1 << 14)
	return pc
}

// exitAllowed reports whether the byte of node i, coming right after a path left the
// frame, can start what follows the frame's rule. It is only an early filter: the
// byte is checked where the frame was left, which is the node's parent level when
// the exit happened there.
func exitAllowed(follow *[8]uint32, exited []bool, nodes []trieNode, i int32) bool {
	nd := &nodes[i]
	d := nd.depth
	// Only when the exit happened exactly at the parent (not higher up) is this
	// byte the first one after the frame.
	if d >= 2 && exited[d-2] {
		return true
	}
	return follow[nd.b>>5]&(1<<(uint(nd.b)&31)) != 0
}
