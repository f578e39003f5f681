package engine

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tetherlm/tether/gocore/tokenmask"

	"github.com/tetherlm/tether/gocore/gbnf"
)

// Token-level elements of bnf_sampler's dialect (gbnf.ParseBNF).
//
// <any!> (gbnf.Element{Kind: Token, Token: gbnf.AnyToken}) compiles to the token
// element "any token but anyTokenArg": an id no token has, so it matches every
// token that `!<[N]>` could match (every id of the vocabulary, end-of-generation
// tokens excepted, which stay governed by whether the grammar can end).

// anyTokenArg is the argument of a negated token element that excludes nothing.
const anyTokenArg = -1

// PossibleTokens lists the tokens that may come next (the ids FillMask allows, in
// increasing order), or the error FillMask returns.
//
// With longestOnly it follows bnf_sampler's listing rule (its all_possible_tokens):
// a token that text-level elements allow is left out when a longer allowed token
// begins with its bytes (so the literal "apple" lists apple, not a, ap, app, appl),
// while tokens that token-level elements allow (<any!>, <except!>, <[N]>, !<[N]>) are all
// listed, as are end-of-generation and special tokens.
func (m *Matcher) PossibleTokens(longestOnly bool) ([]int, error) {
	ids, err := m.AllowedTokens(nil)
	if err != nil || !longestOnly || len(ids) < 2 {
		return ids, err
	}
	keep := m.tokenLevel(ids)
	type tok struct {
		id int
		b  []byte
	}
	var text []tok
	for i, id := range ids {
		if !keep[i] {
			text = append(text, tok{id, m.g.vocab.TokenBytes(id)})
		}
	}
	// Sorted by bytes, a token's extensions follow it directly.
	slices.SortFunc(text, func(a, b tok) int {
		if c := bytes.Compare(a.b, b.b); c != 0 {
			return c
		}
		return a.id - b.id
	})
	listed := map[int]bool{}
	for i, t := range text {
		j := i + 1
		for j < len(text) && bytes.Equal(text[j].b, t.b) {
			j++
		}
		if j < len(text) && len(t.b) > 0 && bytes.HasPrefix(text[j].b, t.b) {
			continue
		}
		listed[t.id] = true
	}
	out := ids[:0]
	for i, id := range ids {
		if keep[i] || listed[id] {
			out = append(out, id)
		}
	}
	return out, nil
}

// tokenLevel marks the allowed ids that are listed whatever their bytes: those a
// token element on top of a stack accepts, end-of-generation and special tokens.
func (m *Matcher) tokenLevel(ids []int) []bool {
	keep := make([]bool, len(ids))
	m.fam.mu.Lock()
	defer m.fam.mu.Unlock()
	var plan *maskPlan
	if !m.awaiting && m.cfg != cfgDead {
		plan = m.fam.a.planFor(m.cfg)
	}
	for i, id := range ids {
		switch {
		case m.awaiting:
			keep[i] = true
		case m.g.isEOG[id] || m.g.special[id]:
			keep[i] = true
		case plan != nil && len(plan.neg) > 0:
			keep[i] = len(plan.neg) > 1 || int32(id) != plan.neg[0]
		case plan != nil && slices.Contains(plan.pos, int32(id)):
			keep[i] = true
		case plan != nil && len(plan.exc) > 0:
			for _, n := range plan.exc {
				s := m.g.excepts[exceptIndex(m.g.elems[m.fam.a.nodes[n].elem].arg)]
				if s.cut[id] != cutNone {
					keep[i] = true
				}
			}
		}
	}
	return keep
}

// <except!(...)> (gbnf.Element{Kind: gbnf.Except}) compiles to a negated token
// element whose argument, exceptArg0 or below, indexes Grammar.excepts. Its meaning
// is bnf_sampler's, decided per token once at Compile:
//
//   - a token (with text; not special, not end-of-generation) that contains none of
//     the excepted literals matches whole;
//   - a token that contains one matches its bytes before the first place an
//     excepted literal starts, when that slice is not empty and some prefix of it
//     is a token of the vocabulary; the rest of the token goes on to what follows
//     the element, byte by byte, like any text;
//   - other tokens do not match.
//
// The excepted literals of <except!([rule])> are the tokens of the vocabulary that
// the rule matches whole. The element matches at a token's start only: a stack
// that reaches it inside a token (after a terminal that took the token's first
// bytes) ends there, as a token element does.

// exceptArg0 is the argument of the first except element; exceptIndex inverts it.
const exceptArg0 = -3

func isExceptArg(neg bool, arg int32) bool { return neg && arg <= exceptArg0 }

func exceptIndex(arg int32) int { return int(exceptArg0 - arg) }

const (
	cutWhole = -1 // the token matches whole
	cutNone  = -2 // the token does not match
)

// exceptSet is one compiled except element.
type exceptSet struct {
	rule     int32    // the [rule] form: the rule whose whole tokens are excepted; -1
	literals [][]byte // the literal form
	ruleName string
	cut      []int32 // per token id: cutWhole, cutNone, or where the matched slice ends
	whole    tokenmask.Mask
	partial  []int32 // ids with a cut > 0, in increasing order
}

func (s *exceptSet) describe() string {
	if s.rule >= 0 {
		return "a token without a token of <" + s.ruleName + ">"
	}
	parts := make([]string, len(s.literals))
	for i, l := range s.literals {
		parts[i] = strconv.Quote(string(l))
	}
	return "a token without " + strings.Join(parts, " or ")
}

// addExcept records the except element e of rule r and returns its argument.
func (gr *Grammar) addExcept(e gbnf.Element, r gbnf.Rule) (int32, error) {
	s := &exceptSet{rule: -1}
	switch {
	case e.Rule >= 0:
		if int(e.Rule) >= len(gr.rules) {
			return 0, &CompileError{Rule: r.Name, Pos: r.Pos, Msg: fmt.Sprintf("<except!([...])> names undefined rule index %d", e.Rule)}
		}
		s.rule = e.Rule
	case e.Name != "":
		s.literals = [][]byte{[]byte(e.Name)}
	default:
		return 0, &CompileError{Rule: r.Name, Pos: r.Pos, Msg: "<except!(...)> with no literal and no rule"}
	}
	gr.excepts = append(gr.excepts, s)
	return int32(exceptArg0 - (len(gr.excepts) - 1)), nil
}

// computeExcepts decides every token for every except element (see above).
func (gr *Grammar) computeExcepts() error {
	if len(gr.excepts) == 0 {
		return nil
	}
	v := gr.vocab
	isToken := make(map[string]bool, gr.size)
	for id := 0; id < gr.size; id++ {
		if b := v.TokenBytes(id); len(b) > 0 && !gr.special[id] && !gr.isEOG[id] {
			isToken[string(b)] = true
		}
	}
	for _, s := range gr.excepts {
		lits := s.literals
		if s.rule >= 0 {
			s.ruleName = gr.names[s.rule]
			var err error
			if lits, err = gr.wholeTokens(s.rule); err != nil {
				return err
			}
		}
		set := make(map[string]bool, len(lits))
		maxLen := 0
		for _, l := range lits {
			set[string(l)] = true
			maxLen = max(maxLen, len(l))
		}
		s.cut = make([]int32, gr.size)
		s.whole = tokenmask.New(gr.size)
		for id := 0; id < gr.size; id++ {
			t := v.TokenBytes(id)
			if len(t) == 0 || gr.special[id] || gr.isEOG[id] {
				s.cut[id] = cutNone
				continue
			}
			at := firstLiteral(t, set, maxLen)
			switch {
			case at < 0:
				s.cut[id] = cutWhole
				s.whole.Set(id)
			case at > 0 && hasTokenPrefix(t[:at], isToken):
				s.cut[id] = int32(at)
				s.partial = append(s.partial, int32(id))
			default:
				s.cut[id] = cutNone
			}
		}
	}
	return nil
}

// firstLiteral returns where in t the first of the literals starts, or -1.
func firstLiteral(t []byte, set map[string]bool, maxLen int) int {
	if len(set) == 0 {
		return -1
	}
	for i := range t {
		for l := 1; l <= maxLen && i+l <= len(t); l++ {
			if set[string(t[i:i+l])] {
				return i
			}
		}
	}
	return -1
}

func hasTokenPrefix(s []byte, isToken map[string]bool) bool {
	for k := 1; k <= len(s); k++ {
		if isToken[string(s[:k])] {
			return true
		}
	}
	return false
}

// wholeTokens returns the bytes of the tokens (with text) that rule r matches whole.
func (gr *Grammar) wholeTokens(r int32) ([][]byte, error) {
	a := newArena(gr)
	a.out = a.out[:0]
	a.beginClosure()
	a.expandRule(r, nodeBottom)
	start := a.finish()
	if start == cfgLimit {
		return nil, a.hit
	}
	var out [][]byte
	for id := 0; id < gr.size; id++ {
		t := gr.vocab.TokenBytes(id)
		if len(t) == 0 || gr.special[id] || gr.isEOG[id] {
			continue
		}
		c, off := a.walkBytes(start, t)
		if a.hit != nil {
			return nil, a.hit
		}
		if off == len(t) && a.cfgs[c].canEnd {
			out = append(out, t)
		}
	}
	return out, nil
}

// stepExcept finishes stepToken when stacks with an except element on top are in
// a.excNodes: they take the token whole, or the slice before its first excepted
// literal followed by the rest of the token as text.
func (a *arena) stepExcept(id int32) int32 {
	g := a.g
	type part struct {
		n   int32
		cut int32
	}
	var parts []part
	for _, n := range a.excNodes {
		s := g.excepts[exceptIndex(g.elems[a.nodes[n].elem].arg)]
		switch c := s.cut[id]; {
		case c == cutWhole:
			a.advance(n)
		case c > 0:
			parts = append(parts, part{n, c})
		}
	}
	a.excNodes = a.excNodes[:0]
	base := a.finish()
	if base == cfgLimit || len(parts) == 0 {
		return base
	}
	text := g.vocab.TokenBytes(int(id))
	for _, p := range parts {
		after := a.afterExcept(p.n)
		if after == cfgLimit {
			return cfgLimit
		}
		last, off := a.walkBytes(after, text[p.cut:])
		if a.hit != nil {
			return cfgLimit
		}
		if after == cfgDead || off < len(text)-int(p.cut) {
			continue
		}
		if base == cfgDead {
			base = last
		} else if base = a.union(base, last); base == cfgLimit {
			return cfgLimit
		}
	}
	return base
}

// afterExcept is the configuration of the stacks that follow the except element on
// top of node n.
func (a *arena) afterExcept(n int32) int32 {
	a.out = a.out[:0]
	a.beginClosure()
	a.advance(n)
	return a.finish()
}

// fillExcept adds to mask the tokens the except element on top of node n allows.
func (m *Matcher) fillExcept(n int32, mask tokenmask.Mask, limit int) {
	g := m.g
	a := m.fam.a
	s := g.excepts[exceptIndex(g.elems[a.nodes[n].elem].arg)]
	mask.Or(s.whole)
	if len(s.partial) == 0 {
		return
	}
	after := a.afterExcept(n)
	if after <= cfgDead {
		return // a limit is left in a.hit
	}
	for _, id := range s.partial {
		if int(id) >= limit || mask.Has(int(id)) {
			continue
		}
		rest := g.vocab.TokenBytes(int(id))[s.cut[id]:]
		if _, off := a.walkBytes(after, rest); off == len(rest) {
			mask.Set(int(id))
		}
	}
}

// exceptVerdict decides token id for the except element on top of node n, as
// fillExcept decides its bit.
func (m *Matcher) exceptVerdict(n int32, id int) bool {
	g := m.g
	a := m.fam.a
	s := g.excepts[exceptIndex(g.elems[a.nodes[n].elem].arg)]
	switch c := s.cut[id]; {
	case c == cutWhole:
		return true
	case c > 0:
		after := a.afterExcept(n)
		if after <= cfgDead {
			return false
		}
		rest := g.vocab.TokenBytes(id)[c:]
		_, off := a.walkBytes(after, rest)
		return off == len(rest)
	}
	return false
}
