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

// maxCountRewalk bounds the long tokens a count sibling's cache is derived with:
// walking a token alone costs about as much as a fresh analysis spends on 2-5k
// tokens (it settles most of the trie by runs).
const maxCountRewalk = 2048

// countKey is the key of a slot's elements and bottom, without its counts.
func countKey(s *posSlot) string {
	b := make([]byte, 0, 4*len(s.elems)+1)
	for _, e := range s.elems {
		b = binary.LittleEndian.AppendUint32(b, uint32(e))
	}
	if s.bottom {
		b = append(b, 1)
	}
	return string(b)
}

// noteCounted records s, whose cache is computed, exact and complete, as the
// latest key with its elements.
func (g *Grammar) noteCounted(s *posSlot) {
	k := countKey(s)
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
	if s.cnts == nil {
		return nil
	}
	g.posMu.Lock()
	sib := g.counted[countKey(s)]
	g.posMu.Unlock()
	if sib == nil || sib == s {
		return nil
	}
	sc := sib.pc.Load()
	if sc == nil || sc.overflow != nil || sc.truncated {
		return nil
	}
	m := int32(math.MaxInt32)
	for i := range s.cnts {
		for j := range 2 {
			if x, y := s.cnts[i][j], sib.cnts[i][j]; x != y {
				m = min(m, x, y)
			}
		}
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
	return g.analyze(a, s, par)
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
