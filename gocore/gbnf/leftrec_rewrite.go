package gbnf

import "slices"

// Rewriting left recursion.
//
// A left-recursive rule (expr ::= expr "+" term | term), directly or through other
// rules, is rewritten into an equivalent right-recursive one before the check in
// leftrec.go runs, so only grammars that no rewrite can save are refused. The
// rewrite works on the strongly connected components of the left-corner graph that
// hold a growing edge (a reference with something after it), the ones the check
// would refuse, in two steps:
//
//  1. Leading nullable references are made explicit. An alternative N γ whose first
//     element is a reference to a rule N that can match the empty string becomes
//     N⁺ γ | γ, where N⁺ is a generated rule that matches what N matches except the
//     empty string (built the same way, on demand, and shared). Afterwards every
//     alternative of these rules starts with something that consumes input, so a
//     left-corner path is a chain of first elements.
//  2. Paull's algorithm on each component still left-recursive, in rule order: an
//     alternative of A_i that starts with A_j (j < i) gets A_j's alternatives
//     substituted, and then A_i's direct left recursion
//
//     A ::= A α1 | ... | A αn | β1 | ... | βm
//
//     becomes
//
//     A ::= β1 A' | ... | βm A'     A' ::= α1 A' | ... | αn A' |
//
//     An alternative A ::= A alone (a cycle that consumes nothing and leaves nothing)
//     is dropped: it adds nothing to the language.
//
// A counted repetition kept as a counter (Repeat) that can be empty is made explicit
// in step 1 too (R{0,n} γ becomes R{1,n} γ | γ); left recursion into the rule of a
// counter (a rule that reaches itself first through x{n,m} with m above the
// counter threshold) is not rewritten and stays an error.
//
// Both steps keep the language: masks of the rewritten grammar are those of the
// grammar as written. The work is bounded by WithMaxElements (substitution can
// multiply alternatives); past it the grammar is refused with ErrTooLarge. Whatever
// is still left-recursive afterwards is refused by checkLeftRecursion.

func rewriteLeftRecursion(c *compiler) (changed bool, err error) {
	bad := leftRecursiveRules(c.g)
	if len(bad) == 0 {
		return false, nil
	}
	rw := &rewriter{c: c, nullable: Nullable(c.g), consumes: canConsume(c.g), plus: map[int]int{}}
	// Step 1: leading nullable references, in the left-recursive rules.
	for _, r := range bad {
		alts, err := rw.nonNullLeading(c.g.Rules[r].Alts, r, true)
		if err != nil {
			return true, err
		}
		c.g.Rules[r].Alts = alts
	}
	// Step 2: Paull's algorithm per component still left-recursive.
	comps := map[int][]int{}
	var order []int
	edges, comp := leftGraph(c.g, Nullable(c.g))
	for _, r := range leftRecursiveIn(edges, comp) {
		if _, ok := comps[comp[r]]; !ok {
			order = append(order, comp[r])
		}
		comps[comp[r]] = append(comps[comp[r]], r)
	}
	for _, k := range order {
		if err := rw.paull(comps[k]); err != nil {
			return true, err
		}
	}
	return true, nil
}

type rewriter struct {
	c        *compiler
	nullable []bool
	consumes []bool      // rule -> it has an alternative that can consume input
	plus     map[int]int // nullable rule -> its generated non-empty version
}

// canConsume reports, per rule, whether some alternative holds an element that can
// consume input (a terminal, or a reference to such a rule). A nullable rule without
// it matches only the empty string, and has no non-empty version.
func canConsume(g *Grammar) []bool {
	out := make([]bool, len(g.Rules))
	for changed := true; changed; {
		changed = false
		for r, rule := range g.Rules {
			if out[r] {
				continue
			}
		alts:
			for _, alt := range rule.Alts {
				for _, e := range alt {
					if e.Kind != RuleRef || out[e.Rule] {
						out[r], changed = true, true
						break alts
					}
				}
			}
		}
	}
	return out
}

// budget charges n elements against WithMaxElements.
func (rw *rewriter) budget(n int, rule int) error {
	c := rw.c
	if n > c.maxElems-c.elems {
		return &Error{Pos: c.g.Rules[rule].Pos, Code: ErrTooLarge,
			Msg: "rewriting the left recursion of rule " + quoteName(c, rule) + " expands the grammar past the limit of elements (WithMaxElements)"}
	}
	c.elems += n
	return nil
}

func quoteName(c *compiler, r int) string {
	return `"` + c.g.Rules[c.owner[r]].Name + `"`
}

// nonNullLeading rewrites alternatives so that none starts with a reference to a
// nullable rule. keepEmpty keeps empty alternatives (the rule as a whole keeps its
// language); the non-empty version of a rule drops them.
func (rw *rewriter) nonNullLeading(alts []Sequence, rule int, keepEmpty bool) ([]Sequence, error) {
	var out []Sequence
	var expand func(seq Sequence, whole bool) error
	expand = func(seq Sequence, whole bool) error {
		if len(seq) == 0 {
			if keepEmpty {
				out = append(out, Sequence{})
			}
			return nil
		}
		e := seq[0]
		if e.Kind == Repeat && e.Min == 0 {
			// R{0,n} γ  ->  R{1,n} γ | γ  (R itself never matches the empty string)
			if err := rw.budget(len(seq), rule); err != nil {
				return err
			}
			alt := append(Sequence{{Kind: Repeat, Rule: e.Rule, Min: 1, Max: e.Max}}, seq[1:]...)
			out = append(out, alt)
			return expand(seq[1:], false)
		}
		if e.Kind != RuleRef || !rw.nullable[e.Rule] {
			if !whole {
				if err := rw.budget(len(seq), rule); err != nil {
					return err
				}
			}
			out = append(out, seq)
			return nil
		}
		if !rw.consumes[e.Rule] {
			return expand(seq[1:], false) // N matches only the empty string
		}
		p, err := rw.plusOf(int(e.Rule))
		if err != nil {
			return err
		}
		if !(len(seq) == 1 && p == rule) { // N⁺ ::= N⁺ adds nothing
			if err := rw.budget(len(seq), rule); err != nil {
				return err
			}
			alt := make(Sequence, 0, len(seq))
			alt = append(alt, Element{Kind: RuleRef, Rule: int32(p)})
			out = append(out, append(alt, seq[1:]...))
		}
		return expand(seq[1:], false)
	}
	for _, alt := range alts {
		if err := expand(alt, true); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// plusOf returns the generated rule that matches what nullable rule n matches, the
// empty string excepted.
func (rw *rewriter) plusOf(n int) (int, error) {
	if p, ok := rw.plus[n]; ok {
		return p, nil
	}
	c := rw.c
	p := c.helper(c.owner[n], c.g.Rules[n].Pos)
	rw.nullable = append(rw.nullable, false)
	rw.consumes = append(rw.consumes, true)
	rw.plus[n] = p
	alts, err := rw.nonNullLeading(c.g.Rules[n].Alts, p, false)
	if err != nil {
		return 0, err
	}
	c.g.Rules[p].Alts = alts
	return p, nil
}

// paull removes the left recursion of one component (rules in index order).
func (rw *rewriter) paull(rules []int) error {
	c := rw.c
	slices.Sort(rules)
	for i, ai := range rules {
		// Substitute lower rules of the component at the left edge.
		for _, aj := range rules[:i] {
			var alts []Sequence
			for _, alt := range c.g.Rules[ai].Alts {
				if len(alt) == 0 || alt[0].Kind != RuleRef || int(alt[0].Rule) != aj {
					alts = append(alts, alt)
					continue
				}
				for _, d := range c.g.Rules[aj].Alts {
					if err := rw.budget(len(d)+len(alt)-1, ai); err != nil {
						return err
					}
					s := make(Sequence, 0, len(d)+len(alt)-1)
					s = append(append(s, d...), alt[1:]...)
					alts = append(alts, s)
				}
			}
			c.g.Rules[ai].Alts = alts
		}
		// Direct left recursion.
		var rec, base []Sequence
		for _, alt := range c.g.Rules[ai].Alts {
			switch {
			case len(alt) > 0 && alt[0].Kind == RuleRef && int(alt[0].Rule) == ai:
				if len(alt) > 1 {
					rec = append(rec, alt[1:])
				}
			default:
				base = append(base, alt)
			}
		}
		if len(rec) == 0 {
			if len(base) != len(c.g.Rules[ai].Alts) {
				c.g.Rules[ai].Alts = base // only A ::= A was dropped
			}
			continue
		}
		if len(base) == 0 {
			// No way out of the recursion: the rule matches nothing. Keep it as
			// written; the dead-end check names it.
			continue
		}
		tail := c.helper(c.owner[ai], c.g.Rules[ai].Pos)
		ref := Element{Kind: RuleRef, Rule: int32(tail)}
		if err := rw.budget(len(base)+2*len(rec)+1, ai); err != nil {
			return err
		}
		alts := make([]Sequence, 0, len(base))
		for _, b := range base {
			alts = append(alts, append(slices.Clip(b), ref))
		}
		c.g.Rules[ai].Alts = alts
		talts := make([]Sequence, 0, len(rec)+1)
		for _, a := range rec {
			talts = append(talts, append(slices.Clip(a), ref))
		}
		c.g.Rules[tail].Alts = append(talts, Sequence{})
	}
	return nil
}

// leftGraph returns the left-corner edges of g and their strongly connected
// components.
func leftGraph(g *Grammar, nullable []bool) ([][]leftEdge, []int) {
	edges := make([][]leftEdge, len(g.Rules))
	for r, rule := range g.Rules {
		for a, alt := range rule.Alts {
			for i, e := range alt {
				// As checkLeftRecursion: a counter's frame stays below its rule.
				if e.Kind != RuleRef && e.Kind != Repeat {
					break
				}
				grows := i < len(alt)-1 || e.Kind == Repeat
				edges[r] = append(edges[r], leftEdge{to: int(e.Rule), grows: grows, site: refSite{r, a, i}})
				if !nullable[e.Rule] && !(e.Kind == Repeat && e.Min == 0) {
					break
				}
			}
		}
	}
	return edges, components(edges)
}

// leftRecursiveIn returns the rules whose component holds a growing edge.
func leftRecursiveIn(edges [][]leftEdge, comp []int) []int {
	badComp := map[int]bool{}
	for r := range edges {
		for _, e := range edges[r] {
			if e.grows && comp[r] == comp[e.to] {
				badComp[comp[r]] = true
			}
		}
	}
	var out []int
	for r := range edges {
		if badComp[comp[r]] {
			out = append(out, r)
		}
	}
	return out
}

// leftRecursiveRules returns the rules that checkLeftRecursion would refuse a
// component of.
func leftRecursiveRules(g *Grammar) []int {
	if !mayRecurseLeft(g) {
		return nil
	}
	edges, comp := leftGraph(g, Nullable(g))
	return leftRecursiveIn(edges, comp)
}

// mayRecurseLeft reports whether a rule can reach itself through the
// references that lead its alternatives, taking every reference as possibly
// empty: all the references before an alternative's first other element lead
// it. That graph holds leftGraph's, so without a cycle in it (the usual case:
// generated grammars put a character before every recursion) there is no left
// recursion, and the nullable analysis and the components are not needed.
func mayRecurseLeft(g *Grammar) bool {
	n := len(g.Rules)
	const white, grey, black = 0, 1, 2
	color := make([]uint8, n)
	type frame struct{ rule, alt, elem int }
	var stack []frame
	for start := range n {
		if color[start] != white {
			continue
		}
		color[start] = grey
		stack = append(stack[:0], frame{start, 0, 0})
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			alts := g.Rules[f.rule].Alts
			next := -1
			for next < 0 && f.alt < len(alts) {
				alt := alts[f.alt]
				if f.elem < len(alt) && (alt[f.elem].Kind == RuleRef || alt[f.elem].Kind == Repeat) {
					next = int(alt[f.elem].Rule)
					f.elem++
					continue
				}
				f.alt, f.elem = f.alt+1, 0
			}
			if next < 0 || next >= n {
				if next < 0 {
					color[f.rule] = black
					stack = stack[:len(stack)-1]
				}
				continue
			}
			switch color[next] {
			case grey:
				return true
			case white:
				color[next] = grey
				stack = append(stack, frame{next, 0, 0})
			}
		}
	}
	return false
}
