package engine

import (
	"bytes"
	"slices"
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
// while tokens that token-level elements allow (<any!>, <[N]>, !<[N]>) are all
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
		}
	}
	return keep
}
