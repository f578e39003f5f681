package engine_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/engine"
	"github.com/tetherlm/tether/gocore/gbnf"
	"github.com/tetherlm/tether/gocore/vocab"
)

// TestCountedRepetitionIsACounter: x{m,n} with large counts is kept as a counter,
// so compiling it and its first mask cost the same for n = 10^2 and 10^6, and it
// matches exactly m..n rounds.
func TestCountedRepetitionIsACounter(t *testing.T) {
	v := llama3Vocab(t)
	mask := make([]uint32, (v.Size()+31)/32)
	var first time.Duration
	for _, n := range []int{100, 1000000} {
		start := time.Now()
		g, err := gbnf.Parse(fmt.Sprintf(`root ::= [a-z]{0,%d} "."`, n))
		require.NoError(t, err)
		assert.Less(t, len(g.Rules), 5, "not unrolled")
		gr, err := engine.Compile(g, v)
		require.NoError(t, err)
		require.NoError(t, gr.NewMatcher().FillMask(mask))
		d := time.Since(start)
		if n == 100 {
			first = d
		} else {
			t.Logf("n=100: %v, n=10^6: %v", first, d)
			assert.Less(t, d, time.Second)
		}
	}
	bv := newListVocab("a", "b", ".", "aa", "aaa", "a.")
	for _, c := range []struct {
		src        string
		ok, refuse []string
	}{
		{`root ::= [a-z]{3,70} "."`, []string{strings.Repeat("a", 3) + ".", strings.Repeat("ab", 35) + "."},
			[]string{"aa.", strings.Repeat("a", 71) + "."}},
		{`root ::= "ab"{65,}`, []string{strings.Repeat("ab", 65), strings.Repeat("ab", 200)}, []string{strings.Repeat("ab", 64), strings.Repeat("ab", 65) + "a"}},
		{`root ::= ("a" | "aa"){0,100}`, []string{"", strings.Repeat("a", 200)}, []string{strings.Repeat("a", 201)}},
		{`root ::= ("a"?){0,100} "."`, []string{".", "aaaa."}, []string{strings.Repeat("a", 101) + "."}},
	} {
		gr := compile(t, c.src, bv)
		for _, s := range c.ok {
			m := gr.NewMatcher()
			require.NoError(t, m.AcceptBytes([]byte(s)), "%s: %q", c.src, s)
			assert.True(t, m.CanEnd(), "%s: %q", c.src, s)
		}
		for _, s := range c.refuse {
			m := gr.NewMatcher()
			err := m.AcceptBytes([]byte(s))
			assert.True(t, err != nil || !m.CanEnd(), "%s: %q accepted", c.src, s)
		}
	}
}

// TestCountersMaskEqualsBruteForce walks counters to and past their bounds with
// the real Llama-3 vocabulary, taking the longest allowed token each step (so the
// count moves fast and crosses the minimum and the maximum inside tokens), and
// checks every mask against the per-token verdicts of every token.
func TestCountersMaskEqualsBruteForce(t *testing.T) {
	v := llama3Vocab(t)
	mask := make([]uint32, (v.Size()+31)/32)
	for _, src := range []string{
		`root ::= [a-z]{66,70} " "`,
		`root ::= ("ab" | "a" | "b"){0,80} "."`,
		`root ::= "é"{100,130} "!"`,
		`root ::= ("x" [0-9]){65,} ";"`,
		`root ::= ([a-z]{0,65} ",")+`,
	} {
		t.Run(src, func(t *testing.T) {
			m := compile(t, src, v).NewMatcher()
			for step := 0; step < 60; step++ {
				maskErr := m.FillMask(mask)
				require.NoError(t, maskErr)
				if bad := bruteForceDisagreements(m, v, mask, nil, step%10 == 0); len(bad) > 0 {
					t.Fatalf("step %d: %d disagreements, first: %v", step, len(bad), bad[:min(5, len(bad))])
				}
				allowed, err := m.AllowedTokens(nil)
				require.NoError(t, err)
				require.NotEmpty(t, allowed)
				best := -1
				for _, id := range allowed {
					if !v.IsEOG(id) && (best < 0 || len(v.TokenBytes(id)) > len(v.TokenBytes(best))) {
						best = id
					}
				}
				if best < 0 {
					require.True(t, m.CanEnd())
					return
				}
				require.NoError(t, m.AcceptToken(best))
			}
		})
	}
}

// TestCountSiblingsMaskEqualsBruteForce walks strings bounded by counters one
// character at a time, so that each position's cache is derived from the one
// before (its count sibling: only tokens at least as long as the counts walked
// again), and checks every mask against the per-token verdicts. Where the
// maximum is near the length of long tokens, a token one character longer than
// what is left must leave the mask, and one that fits must stay.
func TestCountSiblingsMaskEqualsBruteForce(t *testing.T) {
	v := llama3Vocab(t)
	mask := make([]uint32, (v.Size()+31)/32)
	// Counts above 64 stay counters (smaller ones are unrolled into rules).
	words := strings.Repeat("abcdefghij ", 8)
	for _, c := range []struct{ src, text string }{
		{`root ::= "\"" [^"]{0,80} "\""`, words},
		{`root ::= "\"" [a-z ]{0,72} "\""`, words},
		{`root ::= "\"" [^"\n]{66,86} "\"" [0-9]`, words},
		{`root ::= "<" ([a-z] | " ")+ ">" | "\"" ([^"\\] | "\\" ["\\n]){65,78} "\""`, words},
		// few tokens accepted: kept as ids, not a bitset
		{`root ::= "\"" [a-c]{0,90} "\""`, strings.Repeat("abc", 30)},
	} {
		src, text := c.src, c.text
		t.Run(src, func(t *testing.T) {
			walkCheckingMasks(t, compile(t, src, v).NewMatcher(), v, mask, text, 64)
		})
	}
}

// TestChainSiblingsMaskEqualsBruteForce walks strings through repetitions of at
// most 64 rounds, which gbnf unrolls into chains of rules (R40 ::= x R39 | ""),
// and whose positions' caches the engine derives from the previous position's
// (the chain's count siblings), checking each mask against the per-token check,
// with the caches shared across grammars and without.
func TestChainSiblingsMaskEqualsBruteForce(t *testing.T) {
	v := llama3Vocab(t)
	mask := make([]uint32, (v.Size()+31)/32)
	words := strings.Repeat("abcdefghij ", 6)
	for _, c := range []struct{ src, text string }{
		{`root ::= "\"" [^"]{0,60} "\""`, words},
		// the class on top is the chain rule's own element
		{`root ::= "\"" [a-z ]{3,50} "\"" [0-9]`, words},
		// the body is a rule: JSON's escapes take two characters a round
		{`root ::= "\"" ([^"\\] | "\\" ["\\n]){0,64} "\""`, words},
		// two chains side by side: a label of up to 40, then one of up to 20
		{`root ::= "\"" [a-j ]{1,40} ("." [a-j ]{1,20})? "\""`, words},
		// a chain whose rounds end in a class the follow set holds
		{`root ::= "\"" [a-z ]{0,45} "a\""`, words},
	} {
		src, text := c.src, c.text
		for _, share := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/shared=%v", src, share), func(t *testing.T) {
				g, err := gbnf.Parse(src)
				require.NoError(t, err)
				cg, err := engine.Compile(g, v, engine.WithSharedCache(share))
				require.NoError(t, err)
				walkCheckingMasks(t, cg.NewMatcher(), v, mask, text, 20)
			})
		}
	}
}

// walkCheckingMasks opens a string (`"`), then steps m through text one byte at
// a time while it accepts them, checking the mask before each byte against the
// per-token verdicts (every token at every 8th step); the walk must take more
// than minSteps bytes.
func walkCheckingMasks(t *testing.T, m *engine.Matcher, v *vocab.Vocab, mask []uint32, text string, minSteps int) {
	t.Helper()
	require.NoError(t, m.AcceptBytes([]byte(`"`)))
	for step := 0; ; step++ {
		require.NoError(t, m.FillMask(mask))
		if bad := bruteForceDisagreements(m, v, mask, nil, step%8 == 0); len(bad) > 0 {
			t.Fatalf("after %d characters: %d disagreements, first: %v", step, len(bad), bad[:min(5, len(bad))])
		}
		if step == len(text) || m.AcceptBytes([]byte{text[step]}) != nil {
			require.Greater(t, step, minSteps, "the walk stopped early")
			return
		}
	}
}
