package engine_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/engine"
	"github.com/tetherlm/tether/gocore/gbnf"
)

// TestDeadEndsRefused: issue 12's grammars that compiled and then reached a state
// allowing no token and no end are refused when parsed, and hand-built IR with a
// dead end is refused by Compile (with the rule).
func TestDeadEndsRefused(t *testing.T) {
	for _, src := range []string{
		`root ::= [\uD800-\uDFFF]`,
		`root ::= "a" [^\x00-\U0010FFFF]`,
		"root ::= a\na ::= b\nb ::= a",
	} {
		_, err := gbnf.Parse(src)
		var ge *gbnf.Error
		require.ErrorAs(t, err, &ge, "%q", src)
		assert.Equal(t, gbnf.ErrDeadEnd, ge.Code)
		assert.Positive(t, ge.Pos.Line)
	}
	ch := func(lo, hi rune, neg bool) gbnf.Element {
		return gbnf.Element{Kind: gbnf.Char, Ranges: []gbnf.Range{{Lo: lo, Hi: hi}}, Negated: neg}
	}
	for name, g := range map[string]*gbnf.Grammar{
		"surrogates":         {Rules: []gbnf.Rule{{Name: "root", Alts: []gbnf.Sequence{{ch('a', 'a', false), ch(0xD800, 0xDBFF, false)}}}}},
		"everything negated": {Rules: []gbnf.Rule{{Name: "root", Alts: []gbnf.Sequence{{ch(0, 0x10FFFF, true)}}}}},
		"cycle": {Rules: []gbnf.Rule{
			{Name: "root", Alts: []gbnf.Sequence{{{Kind: gbnf.RuleRef, Rule: 1}}}},
			{Name: "a", Alts: []gbnf.Sequence{{{Kind: gbnf.RuleRef, Rule: 2}}}},
			{Name: "b", Alts: []gbnf.Sequence{{{Kind: gbnf.RuleRef, Rule: 1}}}},
		}},
		"cycle through a counted repetition": {Rules: []gbnf.Rule{
			{Name: "root", Alts: []gbnf.Sequence{{ch('a', 'a', false), {Kind: gbnf.RuleRef, Rule: 1}}}},
			{Name: "a", Alts: []gbnf.Sequence{{ch('x', 'x', false), {Kind: gbnf.Repeat, Rule: 2, Min: 2, Max: 3}}}},
			{Name: "b", Alts: []gbnf.Sequence{{{Kind: gbnf.RuleRef, Rule: 1}}}},
		}},
		"empty raw byte set": {Rules: []gbnf.Rule{{Name: "root", Alts: []gbnf.Sequence{{ch('a', 'a', false), {Kind: gbnf.Byte}}}}}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := engine.Compile(g, newListVocab("a", "b"))
			var ce *engine.CompileError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, "root", ce.Rule)
			assert.Contains(t, err.Error(), "dead end")
		})
	}
}

// TestUnreachableDeadRuleCompiles: a rule that can never match but that the root
// cannot reach is no dead end (Compile's quick check only decides when the full
// check runs).
func TestUnreachableDeadRuleCompiles(t *testing.T) {
	g := &gbnf.Grammar{Rules: []gbnf.Rule{
		{Name: "root", Alts: []gbnf.Sequence{{{Kind: gbnf.Char, Ranges: []gbnf.Range{{Lo: 'a', Hi: 'a'}}}}}},
		{Name: "loop", Alts: []gbnf.Sequence{{{Kind: gbnf.RuleRef, Rule: 1}}}},
		{Name: "never", Alts: []gbnf.Sequence{{{Kind: gbnf.Char, Ranges: []gbnf.Range{{Lo: 0xD800, Hi: 0xDFFF}}}}}},
	}}
	gr, err := engine.Compile(g, newListVocab("a", "b"))
	require.NoError(t, err)
	m := gr.NewMatcher()
	require.NoError(t, m.AcceptBytes([]byte("a")))
	assert.True(t, m.CanEnd())
}

// TestTokenIDCheckedBeforeAllocating: a huge token id is an error before any
// vocabulary is sized by it (it allocated 24 GB and died), with a real tokenizer and
// without one.
func TestTokenIDCheckedBeforeAllocating(t *testing.T) {
	g, err := gbnf.Parse(`root ::= <[1000000000]>`)
	require.NoError(t, err)
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	_, err = engine.ByteVocabularyFor(g)
	var ce *engine.CompileError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "root", ce.Rule)
	assert.Contains(t, err.Error(), "token id 1000000000 is out of range")
	_, err = engine.Compile(g, llama3Vocab(t))
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, err.Error(), "outside the vocabulary")
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<20), "bytes allocated")
	assert.Less(t, time.Since(start), time.Second)

	g, err = gbnf.Parse(`root ::= <[300]> "a"`)
	require.NoError(t, err)
	v, err := engine.ByteVocabularyFor(g, 500, 1<<30)
	require.NoError(t, err)
	assert.Equal(t, 501, v.Specials, "ids from the input count, huge ones do not")
}

// TestCountedRepetitionOfNullableRuleRefused: hand-built IR whose Repeat names a
// rule that can match the empty string is refused by Compile (gbnf.Parse unrolls
// such repetitions), with the rule that holds it, and before any later error in
// the IR. A large program (where Compile finds the nullable rules on a goroutine
// of its own, beside the flattening) answers as a small one does.
func TestCountedRepetitionOfNullableRuleRefused(t *testing.T) {
	ch := func(c rune) gbnf.Element {
		return gbnf.Element{Kind: gbnf.Char, Ranges: []gbnf.Range{{Lo: c, Hi: c}}}
	}
	for _, filler := range []int{0, 40_000} {
		build := func(badRef bool) *gbnf.Grammar {
			g := &gbnf.Grammar{Rules: []gbnf.Rule{
				{Name: "root", Alts: []gbnf.Sequence{{ch('a'), {Kind: gbnf.RuleRef, Rule: 1}, {Kind: gbnf.RuleRef, Rule: 2}}}},
				{Name: "holder", Alts: []gbnf.Sequence{{{Kind: gbnf.Repeat, Rule: 3, Min: 2, Max: 100}}}},
				{Name: "later", Alts: []gbnf.Sequence{{ch('b')}}},
				{Name: "maybe", Alts: []gbnf.Sequence{{ch('x')}, {}}},
			}}
			long := make(gbnf.Sequence, filler)
			for i := range long {
				long[i] = ch('y')
			}
			g.Rules[2].Alts = append(g.Rules[2].Alts, long)
			if badRef {
				g.Rules[2].Alts[0] = append(g.Rules[2].Alts[0], gbnf.Element{Kind: gbnf.RuleRef, Rule: 99})
			}
			return g
		}
		for _, badRef := range []bool{false, true} {
			_, err := engine.Compile(build(badRef), newListVocab("a", "b", "x", "y"))
			var ce *engine.CompileError
			require.ErrorAs(t, err, &ce, "filler %d, bad ref %v", filler, badRef)
			assert.Equal(t, "holder", ce.Rule)
			assert.Contains(t, err.Error(), `counted repetition of rule "maybe", which can match the empty string`)
		}
		// Without the repetition, the later error is the one reported.
		g := build(true)
		g.Rules[1].Alts[0][0] = gbnf.Element{Kind: gbnf.RuleRef, Rule: 3}
		_, err := engine.Compile(g, newListVocab("a", "b", "x", "y"))
		var ce *engine.CompileError
		require.ErrorAs(t, err, &ce, "filler %d", filler)
		assert.Equal(t, "later", ce.Rule)
		assert.Contains(t, err.Error(), "undefined rule index 99")
	}
}
