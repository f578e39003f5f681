package engine

import (
	"math/bits"
	"slices"

	"github.com/tetherlm/tether/gocore/gbnf"
	"github.com/tetherlm/tether/gocore/tokenmask"
)

// Widened twins: one analysis for positions whose classes differ only in ASCII
// characters.
//
// A JSON object that allows properties besides those it names matches a key that is
// none of the names with an automaton whose states each refuse a few letters (the
// next letter of every name still possible), like
// `([^"\\\x00-\x1Flru] | esc) rest`. Each state is a position of its own whose
// analysis walks nearly the whole vocabulary (a string body), once per state and
// per schema, and no two share a fingerprint, since their classes differ.
//
// The twin of such a class C is W = C ∪ ASCII, compiled as a copy of the rest of
// C's alternative starting with W instead, reached by no rule (like the
// trampolines). A key whose top element is the twin stands for every such state at
// once: their twins' fingerprints agree, so the twin's cache is analyzed once and
// shared across states and schemas. A state's cache is the twin's with the tokens
// whose first byte is an ASCII character outside C taken out (restrictFirst):
//   - a token whose first byte is an ASCII character in C: W and C take that
//     character to the same stacks (the element after the class), so the walk
//     from there, and the verdict, are the same;
//   - a token whose first byte is not ASCII: W and C hold the same characters
//     >= 0x80, so both take every completion of it alike;
//   - a token whose first byte C refuses dies on that byte, inside the frame
//     (the key's top is a character, so no path has left the frame before it):
//     rejected whatever lies below.

// twinRestMax bounds the elements copied after a class to make its twin.
const twinRestMax = 16

// addTwins appends the twins of the worthy classes (twinWorthy) to the program's
// elements, and records them in gr.twins. It runs once the rules are
// flattened and before the analyses (which then cover the twins too).
func (gr *Grammar) addTwins() {
	// Per class: 0 not looked at, 1 not worthy, else 2 + its widened class.
	wide := make([]int32, len(gr.classes))
	n := len(gr.elems)
	for i := 0; i < n; i++ {
		e := gr.elems[i]
		if e.op != opChar || wide[e.arg] == 1 {
			continue
		}
		if wide[e.arg] == 0 {
			if !twinWorthy(&gr.classes[e.arg]) {
				wide[e.arg] = 1
				continue
			}
			wide[e.arg] = 2 + int32(len(gr.classes))
			gr.classes = append(gr.classes, widened(&gr.classes[e.arg]))
		}
		end := int32(i + 1)
		for gr.elems[end].op != opEnd {
			end++
		}
		if int(end)-i > twinRestMax {
			continue
		}
		w := wide[e.arg] - 2
		if gr.twins == nil {
			gr.twins = map[int32]int32{}
		}
		gr.twins[int32(i)] = int32(len(gr.elems))
		r := gr.ruleOf[i]
		gr.elems = append(gr.elems, elem{op: opChar, arg: w})
		gr.ruleOf = append(gr.ruleOf, r)
		for k := int32(i + 1); k <= end; k++ {
			gr.elems = append(gr.elems, gr.elems[k])
			gr.ruleOf = append(gr.ruleOf, r)
		}
	}
}

// twinWorthy reports whether class c is one of many states that differ in a few
// ASCII characters: a negated class (its twin then refuses only what c refuses
// beyond ASCII, so the twin's walk is hardly longer than c's) that holds most ASCII
// letters and digits but not all of them.
func twinWorthy(c *class) bool {
	// ASCII letters and digits: bits 48-57 of word 1, 65-90 of word 2, 97-122 of word 3.
	const digits, upper, lower = 0x03FF0000, 0x07FFFFFE, 0x07FFFFFE
	in := bits.OnesCount32(c.ascii[1]&digits) + bits.OnesCount32(c.ascii[2]&upper) + bits.OnesCount32(c.ascii[3]&lower)
	return c.neg && in < 62 && in >= 48
}

// widened returns c ∪ ASCII.
func widened(c *class) class {
	ascii := gbnf.Range{Lo: 0, Hi: 0x7F}
	if !c.neg {
		return newClass(append(slices.Clone(c.ranges), ascii), false)
	}
	// Negated: the characters it leaves out, less the ASCII ones.
	var out []gbnf.Range
	for _, r := range c.ranges {
		if r.Hi < 0x80 {
			continue
		}
		out = append(out, gbnf.Range{Lo: max(r.Lo, 0x80), Hi: r.Hi})
	}
	return newClass(out, true)
}

// fromTwin computes slot s's cache from the cache of its twin key (see the top of
// this file), or returns nil when s's top has no twin or the twin's cache is not
// exact and complete (a limit met, or an analysis stopped early).
func (g *Grammar) fromTwin(s *posSlot) *posCache {
	tw, ok := g.twins[s.elems[0]]
	if !ok {
		return nil
	}
	key := append([]int32{tw}, s.elems[1:]...)
	base := g.slotForKey(key, s.cnts, s.bottom).cache(g)
	if base.overflow != nil || base.truncated {
		return nil
	}
	return g.restrictFirst(base, &g.classes[g.elems[s.elems[0]].arg], s)
}

// restrictFirst returns pc without the tokens whose first byte is an ASCII
// character c refuses, as slot s's cache (its uncertain tokens as a trie or a list,
// as analyze would keep them for s).
func (g *Grammar) restrictFirst(pc *posCache, c *class, s *posSlot) *posCache {
	t := g.trie
	// The tokens cut are runs of t.order, one per refused first byte.
	var cut [][2]int32
	for b := range 128 {
		if rc := t.rootChild[b]; rc != 0 && !c.has(rune(b)) {
			cut = append(cut, [2]int32{t.first[rc], t.first[t.nodes[rc].next]})
		}
	}
	acc, ids, count, unc := g.cutTokens(pc,
		func(f func(int32)) {
			for _, r := range cut {
				for k := r[0]; k < r[1]; k++ {
					f(k)
				}
			}
		},
		func(k int32) bool {
			for _, r := range cut {
				if k >= r[0] && k < r[1] {
					return true
				}
			}
			return false
		})
	out := &posCache{acceptIDs: ids, count: count}
	if acc != nil {
		out.setAccepted(acc, count, tokenmask.Words(g.size))
	}
	g.setUncertain(out, unc, s)
	return out
}
