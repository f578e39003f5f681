package engine_test

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/engine"
	"github.com/tetherlm/tether/gocore/gbnf"
	"github.com/tetherlm/tether/gocore/schema"
	"github.com/tetherlm/tether/gocore/vocab"
)

// Ambiguous grammars keep many parses alive at once. The engine merges the stacks
// that share a top into one over the union of their tails (a graph-structured
// stack), so a state's size stays bounded by the grammar however many parses it
// stands for: these tests nest and repeat ambiguity far past the point where a
// set of separate stacks would have met the stack limit, and check every state
// against the per-token check.

// exactDisagreements checks the matcher's current state, whose FillMask gave mask
// and maskErr, against a real Clone+AcceptToken (and IsAllowed) of every token whose
// first byte the matcher can take; every other token must be out of the mask. A
// mask error of any kind is a disagreement here: these grammars must not meet a
// limit.
//
// Every sampleEvery-th such token, and every token in the mask, gets the real
// AcceptToken; the others IsAllowed.
func exactDisagreements(m *engine.Matcher, v *vocab.Vocab, mask []uint32, maskErr error, sampleEvery int) []string {
	if maskErr != nil {
		return []string{fmt.Sprintf("FillMask: %v", maskErr)}
	}
	var viable [256]bool
	for b := 0; b < 256; b++ {
		err := m.Clone().AcceptBytes([]byte{byte(b)})
		if isLimit(err) {
			return []string{fmt.Sprintf("byte %#x: %v", b, err)}
		}
		viable[b] = err == nil
	}
	var bad, ids []int
	var out []string
	for id := 0; id < v.Size(); id++ {
		tb := v.TokenBytes(id)
		if len(tb) == 0 || v.IsSpecial(id) || v.IsEOG(id) || viable[tb[0]] {
			ids = append(ids, id)
		} else if bitSet(mask, id) {
			bad = append(bad, id)
		}
	}
	for _, id := range bad {
		out = append(out, fmt.Sprintf("token %d %q: in the mask, but its first byte is refused", id, v.TokenBytes(id)))
	}
	out = append(out, stateDisagreements(m, v, mask, maskErr, ids, sampleEvery)...)
	for k, id := range ids {
		if k%sampleEvery != 0 && bitSet(mask, id) {
			if err := m.Clone().AcceptToken(id); err != nil {
				out = append(out, fmt.Sprintf("token %d %q: in the mask, AcceptToken %v", id, v.TokenBytes(id), err))
			}
		}
	}
	return out
}

// TestOverlappingAnyOfNested100 is issue 12's schema whose two anyOf branches
// overlap (every nesting level doubled the stacks, and depth 13 met the 16,384-stack
// limit), nested 100 deep and closed again along a greedy-like walk: every
// prefix's mask equals the per-token check, "[" and "]" are allowed exactly where
// they should be, the end exactly when the brackets balance, and no state meets a
// limit even with the stack limit set to 64.
func TestOverlappingAnyOfNested100(t *testing.T) {
	v := llama3Vocab(t)
	src, _, err := schema.FromJSONSchema([]byte(overlappingAnyOf))
	require.NoError(t, err)
	g, err := gbnf.Parse(src)
	require.NoError(t, err)
	const depth = 100
	for _, c := range []struct {
		name string
		opts []engine.Option
	}{
		{"default limits", nil},
		{"64 stacks", []engine.Option{engine.WithMaxStacks(64)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			gr, err := engine.Compile(g, v, c.opts...)
			require.NoError(t, err)
			open, ok := v.TokenID("[")
			require.True(t, ok)
			closeID, ok := v.TokenID("]")
			require.True(t, ok)
			eos := v.EOGTokens()[0]
			m := gr.NewMatcher()
			mask := make([]uint32, (v.Size()+31)/32)
			full := c.opts == nil // the full per-token check once; the walk alone under 64 stacks
			for step := 0; step <= 2*depth; step++ {
				d := step
				if step > depth {
					d = 2*depth - step
				}
				start := time.Now()
				maskErr := m.FillMask(mask)
				require.NoError(t, maskErr, "step %d (depth %d)", step, d)
				assert.Less(t, time.Since(start), 2*time.Second, "step %d: mask time", step)
				if full {
					// Every prefix; the real AcceptToken of every token at the
					// shallow and deep ends, of a seventh of them in between.
					every := 7
					if d <= 10 || d >= depth-10 {
						every = 1
					}
					require.Empty(t, exactDisagreements(m, v, mask, maskErr, every), "step %d (depth %d)", step, d)
				}
				ended := step > 0 && d == 0
				// "[" opens while nesting; after a "]" only "," or "]" may follow.
				require.Equal(t, step <= depth, bitSet(mask, open), "step %d (depth %d): [", step, d)
				require.Equal(t, d > 0, bitSet(mask, closeID), "step %d (depth %d): ]", step, d)
				require.Equal(t, ended, m.CanEnd(), "step %d (depth %d): can end", step, d)
				require.Equal(t, ended, bitSet(mask, eos), "step %d (depth %d): end token", step, d)
				if ended {
					break
				}
				tok := open
				if step >= depth {
					tok = closeID
				}
				require.NoError(t, m.AcceptToken(tok), "step %d (depth %d)", step, d)
			}
			require.True(t, m.CanEnd())
		})
	}
}

// TestAmbiguityNoLongerMeetsTheLimit: grammars that met the stack limit while the
// engine kept one stack per parse (the number of parses of "a"^n grows
// exponentially) now follow long inputs under a small limit.
func TestAmbiguityNoLongerMeetsTheLimit(t *testing.T) {
	v := newListVocab("a", "b", "aa")
	for _, c := range []struct{ name, src, text string }{
		{"t root", "root ::= t root | \"\"\nt ::= \"a\" | \"a\" t \"b\"", strings.Repeat("a", 200) + strings.Repeat("b", 150)},
		{"optional counter", `root ::= ("a"? ){0,60} "b"`, strings.Repeat("a", 60) + "b"},
	} {
		t.Run(c.name, func(t *testing.T) {
			gr := compile(t, c.src, v, engine.WithMaxStacks(16))
			m := gr.NewMatcher()
			require.NoError(t, m.AcceptBytes([]byte(c.text)))
			require.True(t, m.CanEnd())
			mask := make([]uint32, 1)
			require.NoError(t, m.FillMask(mask))
		})
	}
}

// TestAmbiguousGrammarsExact walks grammars with exponentially many parses (of a
// repetition, of nested recursion, of both) along random tokens of their masks,
// checking every state against the per-token check, with a stack limit of 64
// that no state reaches.
func TestAmbiguousGrammarsExact(t *testing.T) {
	v := llama3Vocab(t)
	cases := []struct {
		name, src string
		steps     int
	}{
		{"repetition", `root ::= a*
a ::= "x" | "x" | ("x" "x") | "xx"`, 60},
		{"nested recursion", `root ::= s
s ::= "(" s ")" | "(" s ")" | "(" t ")" | "x" | ""
t ::= s | s s | "x"`, 80},
		{"recursion and repetition", `root ::= e
e ::= "[" (e | f)* "]" | "[" (f | e)* "]" | "[" e? "]"
f ::= e | "x" | "x" "y"? | "xy"`, 80},
		{"overlapping lists", `root ::= n
n ::= "[" (n ("," n)*)? "]" | "[" (n ("," n){0,98})? "]" | "[" n? ("," n)* "]"`, 80},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			gr := compile(t, c.src, v, engine.WithMaxStacks(64))
			r := rand.New(rand.NewSource(12))
			m := gr.NewMatcher()
			mask := make([]uint32, (v.Size()+31)/32)
			var text strings.Builder
			for step := 0; step < c.steps; step++ {
				maskErr := m.FillMask(mask)
				require.Empty(t, exactDisagreements(m, v, mask, maskErr, 1), "after %q", text.String())
				// Prefer opening tokens early and short tokens, so the walk nests deep.
				var opts []int
				for id := 0; id < v.Size(); id++ {
					if bitSet(mask, id) && !v.IsEOG(id) {
						opts = append(opts, id)
					}
				}
				if len(opts) == 0 {
					break
				}
				id := opts[r.Intn(len(opts))]
				if step < c.steps/2 {
					for _, o := range opts {
						if tb := v.TokenBytes(o); len(tb) == 1 && (tb[0] == '(' || tb[0] == '[') {
							id = o
						}
					}
				}
				require.NoError(t, m.AcceptToken(id), "after %q", text.String())
				text.Write(v.TokenBytes(id))
			}
			t.Logf("walked %q", text.String())
		})
	}
}
