package engine

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"sync"
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
	accepted  []uint32   // bitset over token ids, or nil when acceptIDs holds them
	acceptIDs []int32    // the accepted ids, when they are few (sparse form)
	count     int        // number of accepted tokens
	sub       []trieNode // trie of the uncertain tokens (indices into trie.order)
	subDepth  int
	overflow  error // some token was too ambiguous to follow and is left out
	uncertain int   // number of uncertain tokens

	// uncList holds the uncertain tokens (sorted indices into trie.order) instead
	// of sub in a cache that is never used for masks, only to derive deeper keys'
	// caches from: one of a shallower key that leaves too many tokens uncertain.
	uncList []int32

	// truncated: the analysis of such a shallower key stopped once more than
	// maxParentUncertain tokens were uncertain (deriving from it would save little):
	// only uncertain (a lower bound) and overflow are set.
	truncated bool
}

// maxParentUncertainDiv bounds the uncertain tokens a cache never used for masks keeps
// for deriving deeper keys' caches (see posCache.truncated), as a share of the
// trie's tokens.
const maxParentUncertainDiv = 8

// orInto sets the accepted tokens in mask.
func (pc *posCache) orInto(mask []uint32) {
	if pc.accepted != nil {
		orWords(mask, pc.accepted)
		return
	}
	for _, id := range pc.acceptIDs {
		if w := int(id >> 5); w < len(mask) {
			mask[w] |= 1 << (uint32(id) & 31)
		}
	}
}

// acceptedBits returns a fresh bitset of the accepted tokens.
func (pc *posCache) acceptedBits(words int) []uint32 {
	if pc.accepted != nil {
		return slices.Clone(pc.accepted)
	}
	bits := make([]uint32, words)
	for _, id := range pc.acceptIDs {
		bits[id>>5] |= 1 << (uint32(id) & 31)
	}
	return bits
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

// slotOf picks the position cache for stack node n (see maxKeyDepth). A deeper
// key's cache is derived from the shallower one's (see analyze), so escalating only
// re-walks the tokens the shallower key left uncertain.
func (g *Grammar) slotOf(a *arena, n int32) *posSlot {
	var prev *posCache
	for d := 1; ; d++ {
		s := g.slotFor(a, n, d)
		if d >= maxKeyDepth || s.bottom {
			if prev != nil {
				s.get(g, prev)
			}
			return s
		}
		pc := s.get(g, prev)
		if pc.uncertain <= maxUncertain {
			return s
		}
		prev = pc
	}
}

// posSlot is the lazily computed cache for one stack prefix.
type posSlot struct {
	elems  []int32 // top first
	bottom bool    // the stack ends below elems (no caller frame: exact)
	pc     atomic.Pointer[posCache]
	mu     sync.Mutex // held while the cache is computed
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
	var kb [4*maxKeyDepth + 1]byte
	key := kb[:0]
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
func (s *posSlot) cache(g *Grammar) *posCache { return s.get(g, nil) }

// get returns the slot's cache, computing it on first use; parent, if not nil, is
// the cache of the slot one level shallower (the same elems but the last, over a
// caller frame), which the computation may start from. Different slots are computed
// concurrently; one slot's computation is done once.
func (s *posSlot) get(g *Grammar, parent *posCache) *posCache {
	if pc := s.pc.Load(); pc != nil {
		return pc
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if pc := s.pc.Load(); pc != nil {
		return pc
	}
	pc := g.computeCache(s, parent)
	s.pc.Store(pc)
	return pc
}

// computeCache finds the slot's cache in the vocabulary's shared table or analyzes
// the slot (and shares the result).
func (g *Grammar) computeCache(s *posSlot, parent *posCache) *posCache {
	sh := g.trie.shared
	share := !g.opts.noShare
	var key fingerprint
	if share {
		key = g.fingerprint(s)
		if pc := sh.get(key); pc != nil {
			sh.hits.Add(1)
			return pc
		}
		sh.misses.Add(1)
	}
	a := g.getArena()
	pc := g.analyze(a, s, parent)
	sh.analyses.Add(1)
	if pc.overflow != nil {
		// Dead transitions memoized for the overflow would stay in the arena and
		// silently drop tokens from later analyses: let the arena go.
		return pc
	}
	g.putArena(a)
	if share {
		sh.put(key, pc)
	}
	return pc
}

// getArena takes an analysis arena from the grammar's pool (or makes one), so that
// analyses of different slots run concurrently without the grammar-wide lock.
func (g *Grammar) getArena() *arena {
	g.posMu.Lock()
	defer g.posMu.Unlock()
	if n := len(g.arenas); n > 0 {
		a := g.arenas[n-1]
		g.arenas = g.arenas[:n-1]
		return a
	}
	return newArena(g)
}

func (g *Grammar) putArena(a *arena) {
	// Bound the analysis arena: transition tables are a cache.
	a.trim(1 << 14)
	g.posMu.Lock()
	defer g.posMu.Unlock()
	g.arenas = append(g.arenas, a)
}

// analyze computes the slot's cache in arena a (which must hold no transition
// memoized as dead because of an overflow) by walking the token trie from the
// slot's stack prefix.
//
// With parent, the cache of the slot's prefix one level shallower (s.elems minus
// the last, over a caller frame), only the parent's uncertain tokens are walked:
// deepening the key never changes the verdict on the others. A token the parent
// accepts has a path that stays inside the shallower frames or ends where they end,
// and that path lives on in the deeper stack (which is a superset, level for level).
// A token the parent rejects either dies before any path left the shallower frames
// — the deeper stack holds the same stacks up to there — or dies on the first byte
// after leaving them, a byte that cannot follow their deepest rule; the deeper
// level's continuation (and what lies below it) can only start with bytes in that
// rule's follow set, so it dies there too. The walk is per token (a verdict depends
// only on the path to the token), so walking the parent's trie of uncertain tokens
// gives those tokens the verdicts a walk of the whole trie would.
func (g *Grammar) analyze(a *arena, s *posSlot, parent *posCache) *posCache {
	t := g.trie
	words := (g.size + 31) / 32
	pc := &posCache{}
	nodes := t.nodes
	var only []int32 // with a parent of many uncertain tokens: walk just these
	abortAt := 0     // stop when more tokens are uncertain (0: never)
	if !s.bottom && len(s.elems) < maxKeyDepth {
		abortAt = max(len(t.order)/maxParentUncertainDiv, maxUncertain)
	}
	if parent != nil && parent.overflow == nil && !parent.truncated {
		pc.accepted = parent.acceptedBits(words)
		pc.count = parent.count
		if parent.uncList != nil {
			only = parent.uncList
		} else {
			nodes = parent.sub
		}
	} else {
		pc.accepted = make([]uint32, words)
	}
	follow := &g.follow[g.ruleOf[s.elems[len(s.elems)-1]]]
	var unc []int32 // uncertain tokens, as indices into t.order (preorder = sorted)

	cfg := make([]int32, t.maxDepth+1)
	exited := make([]bool, t.maxDepth+1) // some path left the frame at or above this depth
	cfg[0] = a.startAt(s.elems, s.bottom)
	order := t.order
	acc := pc.accepted
	first := t.first
	p := 0 // with only: the next token of only not yet passed
	for i := int32(1); i < int32(len(nodes)); {
		nd := &nodes[i]
		if only != nil {
			// Visit only subtrees holding a token of only (the subtree of node i
			// holds the tokens order[first[i]:first[nd.next]]).
			for p < len(only) && only[p] < first[i] {
				p++
			}
			if p == len(only) {
				break
			}
			if only[p] >= first[nd.next] {
				i = nd.next
				continue
			}
		}
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
				if only != nil {
					end := first[nd.next]
					for q := p; q < len(only) && only[q] < end; q++ {
						unc = append(unc, only[q])
					}
				} else {
					for j := i; j < nd.next; j++ {
						for k := nodes[j].lo; k < nodes[j].hi; k++ {
							unc = append(unc, k)
						}
					}
				}
				if abortAt > 0 && len(unc) > abortAt {
					pc.overflow, a.overflow = a.overflow, nil
					return &posCache{truncated: true, uncertain: len(unc), overflow: pc.overflow}
				}
			}
			i = nd.next
			continue
		}
		for k := nd.lo; k < nd.hi; k++ {
			if only != nil {
				for p < len(only) && only[p] < k {
					p++
				}
				if p == len(only) || only[p] != k {
					continue
				}
			}
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
	switch {
	case len(unc) > maxUncertain && !s.bottom && len(s.elems) < maxKeyDepth:
		// Never used for a mask (see slotOf): keep the list, not a trie.
		pc.uncList = unc
	case len(unc) > 0:
		pc.sub, pc.subDepth = buildNodes(len(unc),
			func(k int) []byte { return g.vocab.TokenBytes(int(t.order[unc[k]])) },
			func(k int) int32 { return unc[k] })
	}
	if pc.count <= words/4 {
		ids := make([]int32, 0, pc.count)
		for w, x := range acc {
			for ; x != 0; x &= x - 1 {
				ids = append(ids, int32(w*32+bits.TrailingZeros32(x)))
			}
		}
		pc.accepted, pc.acceptIDs = nil, ids
	}
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
