package gbnf

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tetherlm/tether/gocore/safecall"
)

// Grammar analyses over the IR, in one place: which rules can match the empty
// string (Nullable), which can match anything at all (Productive), and which
// character elements can match nothing (ClassEmpty). The parser uses them to refuse
// left recursion (leftrec.go) and dead ends (checkDeadEnds); the engine uses them on
// hand-built IR.

// surrogateLo and surrogateHi bound the UTF-16 surrogate code points, which are not
// characters: no UTF-8 text contains them, so no element can match one.
const (
	surrogateLo = 0xD800
	surrogateHi = 0xDFFF
)

// ClassEmpty reports whether a character element with these ranges (normalized or
// not) and negation matches no valid code point: an empty class, one of surrogates
// only ([\uD800-\uDFFF], a literal "\uD800"), or a negated class that covers every
// character ([^\x00-\U0010FFFF]).
func ClassEmpty(ranges []Range, negated bool) bool {
	if !negated {
		// Any nonempty range with a point outside the surrogates (merging
		// changes nothing).
		for _, r := range ranges {
			if r.Lo <= r.Hi && (r.Lo < surrogateLo || r.Hi > surrogateHi) {
				return false
			}
		}
		return true
	}
	// Negated: empty iff [0, D7FF] and [E000, 10FFFF] are both covered. Once the
	// ranges are merged, each part must lie inside one range. Ranges sorted by
	// their start (a parsed class's are) merge as they are read, with no copy.
	var lo, hi rune // the run of merged ranges so far
	started, low, high, sorted := false, false, false, true
	for _, r := range ranges {
		if r.Lo > r.Hi {
			continue
		}
		switch {
		case started && r.Lo < lo:
			sorted = false
		case started && r.Lo <= hi+1:
			hi = max(hi, r.Hi)
		default:
			lo, hi, started = r.Lo, r.Hi, true
		}
		if !sorted {
			break
		}
		low = low || lo <= 0 && hi >= surrogateLo-1
		high = high || lo <= surrogateHi+1 && hi >= 0x10FFFF
	}
	if sorted {
		return low && high
	}
	rs := NormalizeRanges(ranges)
	covered := func(lo, hi rune) bool {
		for _, r := range rs {
			if r.Lo <= lo && r.Hi >= hi {
				return true
			}
		}
		return false
	}
	return covered(0, surrogateLo-1) && covered(surrogateHi+1, 0x10FFFF)
}

// Nullable reports, per rule, whether it can match the empty string (a worklist
// over the alternatives made only of rule references: linear in the grammar).
func Nullable(g *Grammar) []bool {
	return fixpoint(g, func(e *Element) (known, ok bool) {
		switch e.Kind {
		case RuleRef:
			return false, false
		case Repeat:
			return e.Min == 0, true // else: as its rule
		}
		return true, false
	})
}

// Productive reports, per rule, whether it can match some text (or token
// sequence) at all: a rule whose every alternative needs an element that matches
// nothing, or a rule that can only call itself (a ::= b, b ::= a), is not.
func Productive(g *Grammar) []bool {
	return fixpoint(g, func(e *Element) (known, ok bool) {
		switch e.Kind {
		case Char:
			return true, !ClassEmpty(e.Ranges, e.Negated)
		case Token, Except:
			return true, true
		case Byte:
			return true, len(e.Ranges) > 0
		case Repeat:
			return e.Min == 0, true // else: as its rule
		}
		return false, false
	})
}

// fixpoint computes the least set of rules that have an alternative whose every
// element holds, where leaf(e) decides the elements that are not rule references
// (known) and whether they hold (ok), and a reference holds when its rule is in the
// set. It is a worklist: each alternative is counted down once per reference.
func fixpoint(g *Grammar, leaf func(*Element) (known, ok bool)) []bool {
	n := len(g.Rules)
	in := make([]bool, n)
	var work []int
	add := func(r int) {
		if !in[r] {
			in[r] = true
			work = append(work, r)
		}
	}
	// Candidate alternatives (no leaf fails; at least one reference): their
	// pending counts, owners and references (refs[refAt[c]:refAt[c+1]]);
	// uses[refsTo[r]:refsTo[r+1]] lists the candidates that refer to rule r. All
	// flat, and leaf runs once per element, so a grammar of many rules costs few
	// allocations.
	var pending, owner, refs []int32
	refAt := []int32{0}
	refsTo := make([]int32, n+1)
	for r, rule := range g.Rules {
	alts:
		for _, alt := range rule.Alts {
			mark := len(refs)
			for i := range alt {
				e := &alt[i] // by pointer: an Element is 64 bytes
				if known, ok := leaf(e); known {
					if !ok {
						refs = refs[:mark]
						continue alts
					}
					continue
				}
				if (e.Kind != RuleRef && e.Kind != Repeat) || e.Rule < 0 || int(e.Rule) >= n {
					refs = refs[:mark]
					continue alts
				}
				refs = append(refs, int32(e.Rule))
			}
			if len(refs) == mark {
				add(r)
				continue
			}
			pending = append(pending, int32(len(refs)-mark))
			owner = append(owner, int32(r))
			refAt = append(refAt, int32(len(refs)))
			for _, s := range refs[mark:] {
				refsTo[s+1]++
			}
		}
	}
	for r := 0; r < n; r++ {
		refsTo[r+1] += refsTo[r]
	}
	uses := make([]int32, refsTo[n])
	fill := slices.Clone(refsTo[:n])
	for c := range pending {
		for _, s := range refs[refAt[c]:refAt[c+1]] {
			uses[fill[s]] = int32(c)
			fill[s]++
		}
	}
	for len(work) > 0 {
		r := work[len(work)-1]
		work = work[:len(work)-1]
		for _, c := range uses[refsTo[r]:refsTo[r+1]] {
			pending[c]--
			if pending[c] == 0 {
				add(int(owner[c]))
			}
		}
	}
	return in
}

// DeadEnd is an element of a grammar that the start rule can reach but that can
// never match: a matcher that got there could neither go on nor end.
type DeadEnd struct {
	Rule, Alt, Elem int    // where, in the IR
	Why             string // what cannot match
}

// DeadEnds returns the first dead end reachable from rule root (nil if none): a
// character element that matches no character, or a reference to a rule that can
// match nothing (cycles such as a ::= b, b ::= a). Elements after a dead end in the
// same alternative are not reachable through it. Linear in the grammar.
func DeadEnds(g *Grammar, root int) *DeadEnd {
	if root < 0 || root >= len(g.Rules) {
		return nil
	}
	var prod []bool
	if len(g.Rules) < parallelDeadEndsFrom {
		prod = Productive(g)
	} else {
		// A large grammar: productivity (a fixpoint) is computed on a goroutine
		// while the rules the root reaches are collected. With no reachable
		// element that matches nothing and every reachable rule productive there
		// is no dead end (the usual answer); otherwise the walk below finds the
		// first one, as for a small grammar.
		wait := safecall.Go(func() { prod = Productive(g) })
		empty := false
		reach := WalkReachable(g, root, func(_, _, _ int, e *Element) bool {
			empty = empty || elementEmpty(e)
			return true
		})
		wait()
		if !empty {
			dead := false
			for r, ok := range reach {
				dead = dead || ok && !prod[r]
			}
			if !dead {
				return nil
			}
		}
	}
	var d *DeadEnd
	WalkReachable(g, root, func(r, a, i int, e *Element) bool {
		switch {
		case e.Kind == Char && elementEmpty(e):
			d = &DeadEnd{r, a, i, "a character that matches nothing (" + describeRanges(e.Ranges, e.Negated) + ")"}
		case e.Kind == Byte && elementEmpty(e):
			d = &DeadEnd{r, a, i, "a raw byte element that matches no byte"}
		case (e.Kind == RuleRef || e.Kind == Repeat) && e.Rule >= 0 && int(e.Rule) < len(g.Rules) && !prod[e.Rule]:
			d = &DeadEnd{r, a, i, fmt.Sprintf("rule %q can never match anything (every way through it needs itself or a character that matches nothing)", g.Rules[e.Rule].Name)}
		}
		return d == nil
	})
	return d
}

// elementEmpty reports whether a character or raw byte element matches nothing.
func elementEmpty(e *Element) bool {
	switch e.Kind {
	case Char:
		return ClassEmpty(e.Ranges, e.Negated)
	case Byte:
		return len(e.Ranges) == 0
	}
	return false
}

// WalkReachable calls visit for every element of every rule that root reaches
// through references (depth first; a rule's elements in order, then the rules they
// reach), until visit returns false, and returns the rules it reached. With a
// nil visit it only finds them.
func WalkReachable(g *Grammar, root int, visit func(rule, alt, elem int, e *Element) bool) []bool {
	seen := make([]bool, len(g.Rules))
	seen[root] = true
	work := []int{root}
	for len(work) > 0 {
		r := work[len(work)-1]
		work = work[:len(work)-1]
		for a, alt := range g.Rules[r].Alts {
			for i := range alt {
				e := &alt[i]
				if visit != nil && !visit(r, a, i, e) {
					return seen
				}
				if (e.Kind == RuleRef || e.Kind == Repeat) && e.Rule >= 0 && int(e.Rule) < len(g.Rules) && !seen[e.Rule] {
					seen[e.Rule] = true
					work = append(work, int(e.Rule))
				}
			}
		}
	}
	return seen
}

// parallelDeadEndsFrom is the number of rules from which DeadEnds computes
// productivity beside its walk.
const parallelDeadEndsFrom = 1024

func describeRanges(rs []Range, neg bool) string {
	var b strings.Builder
	b.WriteByte('[')
	if neg {
		b.WriteByte('^')
	}
	for _, r := range rs {
		fmt.Fprintf(&b, "\\U%08X", r.Lo)
		if r.Hi != r.Lo {
			fmt.Fprintf(&b, "-\\U%08X", r.Hi)
		}
	}
	b.WriteByte(']')
	if len(rs) > 0 && !neg {
		b.WriteString(": surrogate code points U+D800..U+DFFF are not characters")
	}
	return b.String()
}

// checkDeadEnds refuses a grammar with a dead end reachable from the root, naming
// the rule and the line:col of the element (of the rule, for generated elements
// whose position is not kept).
func checkDeadEnds(c *compiler) error {
	d := DeadEnds(c.g, c.g.Root)
	if d == nil {
		return nil
	}
	pos := c.g.Rules[d.Rule].Pos
	if off, ok := c.refOffset(refSite{d.Rule, d.Alt, d.Elem}); ok {
		pos = c.p.position(off)
	} else if e := c.g.Rules[d.Rule].Alts[d.Alt][d.Elem]; e.Kind == Char && len(e.Ranges) > 0 {
		if off, ok := c.charOff[&e.Ranges[0]]; ok {
			pos = c.p.position(off)
		}
	}
	name := c.g.Rules[c.owner[d.Rule]].Name
	return &Error{Pos: pos, Code: ErrDeadEnd, Msg: fmt.Sprintf("dead end in rule %q: %s; a matcher reaching it could neither go on nor end", name, d.Why)}
}
