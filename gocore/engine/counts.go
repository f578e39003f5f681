package engine

import (
	"encoding/binary"
	"math"
	"slices"
	"sort"
)

// Count siblings: the position caches of keys that differ only in their counters'
// counts, derived from one another.
//
// A string with a maxLength (or minLength) is a counter, `char{0,100}`, and a
// position cache key holds a counter level's counts (rounds still needed, rounds
// still allowed; see slotOf). Each character of such a string is then a position
// of its own, and each would analyze nearly the whole vocabulary afresh.
//
// But a token of k characters completes at most k rounds of a counter (a counter's
// rule never matches the empty string), so its walk depends on a count c only
// through min(c, k+1): two keys with the same elements whose differing counts are
// all at least m give every token of fewer than m characters the same verdict.
// So a key's cache is its sibling's (the last computed key with the same elements)
// for those tokens, and only the tokens of m characters or more, with the
// sibling's uncertain ones, are walked again (analyze's derived walk over a list).
// Along a string with a maxLength of 100, the key of the next character differs
// in one count, by one, so only the few tokens of ~100 characters are walked.

// The same holds along a repetition gbnf unrolled into a chain of rules (counts up
// to 64 are unrolled: `char{0,40}` is R40 ::= char R39 | "", ..., R1 ::= char | ""),
// where the count is which rule of the chain a level is in. findChains finds such
// chains, and a key's level in one is written as its place in the chain's body
// and the rounds it still allows (see siblingKey), so that the keys along one
// string are count siblings too.

// maxCountRewalk bounds the long tokens a count sibling's cache is derived with:
// walking a token alone costs about as much as a fresh analysis spends on 2-5k
// tokens (it settles most of the trie by runs).
const maxCountRewalk = 2048

// siblingKey returns the key of slot s's elements and bottom without its counts,
// and the counts: per counter level its (need, left), per level in a chain (see
// findChains) the rounds it still allows. ok is false when no level is counted.
func (g *Grammar) siblingKey(s *posSlot) (key string, counts []int32, ok bool) {
	if !slices.ContainsFunc(s.elems, func(e int32) bool {
		return g.elems[e].op == opRepeat || g.chainOf[g.ruleOf[e]] >= 0
	}) {
		return "", nil, false // the common case, without building a key
	}
	b := make([]byte, 0, 9*len(s.elems)+1)
	for i, e := range s.elems {
		r := g.ruleOf[e]
		switch {
		case s.cnts != nil && g.elems[e].op == opRepeat:
			b = append(b, 'N')
			b = binary.LittleEndian.AppendUint32(b, uint32(e))
			counts = append(counts, s.cnts[i][0], s.cnts[i][1])
		case g.chainOf[r] >= 0 && g.isTramp(e):
			// "Call R, then return", R in a chain: R's rounds.
			b = append(b, 'T')
			b = binary.LittleEndian.AppendUint32(b, uint32(g.chainOf[r]))
			counts = append(counts, g.chainDepth[r])
		case g.chainOf[r] >= 0 && g.inChainAlt(e, r):
			// Inside R's alternative: its place there, and the rounds of
			// the rules R calls after it.
			b = append(b, 'C')
			b = binary.LittleEndian.AppendUint32(b, uint32(g.chainOf[r]))
			b = binary.LittleEndian.AppendUint32(b, uint32(e-g.rules[r][g.chainAlt(r)]))
			counts = append(counts, g.chainDepth[r]-1)
		default:
			b = append(b, 'E')
			b = binary.LittleEndian.AppendUint32(b, uint32(e))
			continue
		}
		ok = true
	}
	if s.bottom {
		b = append(b, 1)
	}
	return string(b), counts, ok
}

// sibling returns slot s's siblingKey, worked out on the first call and kept on
// the slot (s.mu must be held: the slot's cache is being computed).
func (g *Grammar) sibling(s *posSlot) (key string, counts []int32, ok bool) {
	if !s.sibDone {
		s.sibKey, s.sibCounts, s.sibOK = g.siblingKey(s)
		s.sibDone = true
	}
	return s.sibKey, s.sibCounts, s.sibOK
}

// noteCounted records s, whose cache is computed, exact and complete, as the
// latest key with its elements (s.mu held).
func (g *Grammar) noteCounted(s *posSlot) {
	k, _, ok := g.sibling(s)
	if !ok {
		return
	}
	g.posMu.Lock()
	defer g.posMu.Unlock()
	if g.counted == nil {
		g.counted = map[string]*posSlot{}
	}
	g.counted[k] = s
}

// fromCountSibling computes slot s's cache from its count sibling's (see the top
// of this file) in arena a, or returns nil when s has no counter, no sibling, or
// one so far from it that most tokens would be walked again.
func (g *Grammar) fromCountSibling(a *arena, s *posSlot) *posCache {
	key, counts, ok := g.sibling(s)
	if !ok {
		return nil
	}
	g.posMu.Lock()
	sib := g.counted[key]
	g.posMu.Unlock()
	if sib == nil || sib == s {
		return nil
	}
	sc := sib.pc.Load()
	if sc == nil || sc.overflow != nil || sc.truncated {
		return nil
	}
	// sib's key was worked out before noteCounted published it (under posMu).
	m := int32(math.MaxInt32)
	for i, x := range counts {
		if y := sib.sibCounts[i]; x != y {
			m = min(m, x, y)
		}
	}
	fs := &g.follow[g.deepRule(s)]
	if *fs != g.follow[g.deepRule(sib)] {
		// The deepest levels' rules differ in what may follow them (one
		// chain's rules all share their follow set; this is a guard).
		return nil
	}
	t := g.trie
	byChars := t.byChars
	// byChars is sorted by characters, most first: the long tokens lead it.
	n := sort.Search(len(byChars), func(i int) bool { return int32(t.tokChars[byChars[i]]) < m })
	if n > maxCountRewalk {
		return nil // a fresh analysis, with its runs, costs less
	}
	// The short tokens keep the sibling's verdicts: its accepted ones stay
	// accepted, its uncertain ones uncertain, unwalked.
	acc, ids, count, keep := g.cutTokens(sc,
		func(f func(int32)) {
			for _, k := range byChars[:n] {
				f(k)
			}
		},
		func(k int32) bool { return int32(t.tokChars[k]) >= m })
	par := &posCache{accepted: acc, acceptIDs: ids, count: count}
	walk := slices.Clone(byChars[:n])
	slices.Sort(walk)
	par.uncList, par.uncertain, par.keepUnc = walk, len(walk), keep
	if len(walk) == 0 {
		par.uncList = []int32{} // walked (none): still the list form
	}
	return g.analyze(a, s, par, fs)
}

// mergeSorted returns the union of the sorted, disjoint lists x and y, sorted.
func mergeSorted(x, y []int32) []int32 {
	out := make([]int32, 0, len(x)+len(y))
	for len(x) > 0 && len(y) > 0 {
		if x[0] < y[0] {
			out, x = append(out, x[0]), x[1:]
		} else {
			out, y = append(out, y[0]), y[1:]
		}
	}
	return append(append(out, x...), y...)
}

// sortByChars returns the indices into order sorted by the characters of their
// tokens (chars[k]), most first, ties in index order: a counting sort.
func sortByChars(chars []uint16) []int32 {
	top := 0
	for _, c := range chars {
		top = max(top, int(c))
	}
	start := make([]int32, top+2) // start[top-c]: where tokens of c characters begin
	for _, c := range chars {
		start[top-int(c)+1]++
	}
	for i := 1; i < len(start); i++ {
		start[i] += start[i-1]
	}
	ks := make([]int32, len(chars))
	for k, c := range chars {
		at := &start[top-int(c)]
		ks[*at] = int32(k)
		*at++
	}
	return ks
}

// findChains finds the chains of rules that gbnf makes of a bounded repetition
// (see gbnf's compiler.repeat): R1 ::= S | "", and Rk ::= S R(k-1) | "" for k
// up to the count, with one body S. Each rule of a chain of two or more gets
// chainOf (the chain's R1) and chainDepth (k); R1 itself is left out (it allows
// no round after the current one, so it has no sibling to share with). Chains
// are only found in grammars without raw-byte elements, where a round of S
// matches at least one character (S never matches the empty string: a
// repetition of a nullable item is not a chain, see chainBody).
func (g *Grammar) findChains() {
	n := len(g.rules)
	g.chainOf = make([]int32, n)
	g.chainDepth = make([]int32, n)
	for r := range g.chainOf {
		g.chainOf[r] = -1
	}
	if len(g.byteSets) > 0 {
		return
	}
	// depth: per rule, 0 unknown, -1 not in a chain, else k (R1's included);
	// body: the length of a chain rule's body.
	depth := make([]int32, n)
	root := make([]int32, n)
	body := make([]int32, n)
	var walk func(r int32) int32
	walk = func(r int32) int32 {
		if depth[r] != 0 {
			return depth[r]
		}
		depth[r] = -1 // a cycle through r is no chain
		at, size, ok := g.chainBody(r)
		if !ok {
			return -1
		}
		last := g.elems[at+size-1]
		if size > 1 && last.op == opRef && last.arg != r {
			if k := walk(last.arg); k > 0 && g.sameElems(at, size-1, last.arg, body[last.arg]) {
				depth[r], root[r], body[r] = k+1, root[last.arg], size-1
				return k + 1
			}
		}
		depth[r], root[r], body[r] = 1, r, size
		return 1
	}
	for r := range n {
		if walk(int32(r)) >= 2 {
			g.chainOf[r], g.chainDepth[r] = root[r], depth[r]
		}
	}
}

// isTramp reports whether element e is a trampoline (see Grammar.tramp).
func (g *Grammar) isTramp(e int32) bool { return g.tramp[g.ruleOf[e]] == e }

// inChainAlt reports whether element e is in chain rule r's nonempty alternative
// (and not, say, a widened twin's copy of one of its elements).
func (g *Grammar) inChainAlt(e, r int32) bool {
	at := g.rules[r][g.chainAlt(r)]
	if e < at {
		return false
	}
	for i := at; i < e; i++ {
		if g.elems[i].op == opEnd {
			return false
		}
	}
	return g.elems[e].op != opEnd
}

// chainAlt is the index of chain rule r's nonempty alternative.
func (g *Grammar) chainAlt(r int32) int {
	if g.elems[g.rules[r][0]].op == opEnd {
		return 1
	}
	return 0
}

// chainBody returns where rule r's nonempty alternative starts in the program and
// its length when r has two alternatives, one of them empty, and the other
// matches at least one byte.
func (g *Grammar) chainBody(r int32) (at, n int32, ok bool) {
	alts := g.rules[r]
	if len(alts) != 2 {
		return 0, 0, false
	}
	if e0, e1 := g.elems[alts[0]].op == opEnd, g.elems[alts[1]].op == opEnd; e0 == e1 {
		return 0, 0, false
	}
	at = alts[g.chainAlt(r)]
	if g.minRest[at] == 0 {
		return 0, 0, false
	}
	for g.elems[at+n].op != opEnd {
		n++
	}
	return at, n, true
}

// sameElems reports whether the n elements from at are, one for one, the first
// m elements of chain rule r's nonempty alternative.
func (g *Grammar) sameElems(at, n, r, m int32) bool {
	if n != m {
		return false
	}
	rt := g.rules[r][g.chainAlt(r)]
	for i := range n {
		if g.elems[rt+i] != g.elems[at+i] {
			return false
		}
	}
	return true
}
