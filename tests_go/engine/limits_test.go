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
)

// overlappingAnyOf is issue 12's recursive schema whose two anyOf branches overlap:
// every nesting level doubles the stacks.
const overlappingAnyOf = `{"$ref":"#/$defs/n","$defs":{"n":{"anyOf":[{"type":"array","items":{"$ref":"#/$defs/n"}},
	{"type":"array","items":{"$ref":"#/$defs/n"},"maxItems":99}]}}}`

// nestedOptionals writes a grammar of n levels, l1 ::= open l2? close?, and so on:
// after k opens, the close of every level opened so far may come next, so a state
// holds k+2 stacks with different tops. Merging stacks that share a top (see
// TestOverlappingAnyOfNested100) cannot shrink it: it meets any stack limit.
func nestedOptionals(n int, open, close string) string {
	var b strings.Builder
	b.WriteString("root ::= l1\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "l%d ::= %q l%d? %q?\n", i, open, i+1, close)
	}
	fmt.Fprintf(&b, "l%d ::= %q %q?\n", n, open, close)
	return b.String()
}

// manyAlternatives writes root ::= "a" x, with x one of n literals starting with
// close: after "a", n stacks with different tops.
func manyAlternatives(n int, lead, close string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "root ::= %q x\nx ::= ", lead)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(" | ")
		}
		fmt.Fprintf(&b, "%q", close+strings.Repeat(close, i))
	}
	return b.String() + "\n"
}

// TestLimitNeverLetsThroughWhatItRefuses nests "[" into a grammar whose states grow
// with the depth (nestedOptionals) past the depth where the stack limit is met: at
// every depth, either "[" is in an exact mask and accepted, or the mask, IsAllowed
// and AcceptToken all report a *LimitError. A mask that lets "[" through and an
// AcceptToken that refuses it is the bug of issue 12 (greedy generation ended with
// "[[[[[[[[[[[" + EOS on its overlapping-anyOf schema, which no longer meets a
// limit at all).
func TestLimitNeverLetsThroughWhatItRefuses(t *testing.T) {
	v := llama3Vocab(t)
	cases := []struct {
		name, src string
		opts      []engine.Option
	}{
		{"nested optionals, 16 stacks", nestedOptionals(40, "[", "]"), []engine.Option{engine.WithMaxStacks(16)}},
		{"nested optionals, 8 stacks", nestedOptionals(40, "[", "]"), []engine.Option{engine.WithMaxStacks(8)}},
	}
	open, ok := v.TokenID("[")
	require.True(t, ok)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, err := gbnf.Parse(c.src)
			require.NoError(t, err)
			gr, err := engine.Compile(g, v, c.opts...)
			require.NoError(t, err)
			m := gr.NewMatcher()
			mask := make([]uint32, (v.Size()+31)/32)
			limited := 0
			for depth := 0; depth < 40; depth++ {
				start := time.Now()
				maskErr := m.FillMask(mask)
				if maskErr != nil {
					// No mask: the caller gets the error. Per token, the answers
					// stay exact or report the limit too, consistently.
					require.True(t, isLimit(maskErr), "depth %d: %v", depth, maskErr)
					require.Zero(t, popcount(mask), "a mask error leaves the mask cleared")
					bad := stateDisagreements(m, v, mask, maskErr, []int{open}, 1)
					require.Empty(t, bad, "depth %d", depth)
					limited++
					break
				}
				require.True(t, bitSet(mask, open), "depth %d: [ not in the mask", depth)
				require.NoError(t, m.AcceptToken(open), "depth %d: [ in the mask but refused", depth)
				assert.Less(t, time.Since(start), 10*time.Second, "depth %d", depth)
			}
			require.Equal(t, 1, limited, "the limit was never met: raise the depth")
		})
	}
}

func popcount(mask []uint32) int {
	n := 0
	for id := 0; id < len(mask)*32; id++ {
		if bitSet(mask, id) {
			n++
		}
	}
	return n
}

// TestLimitErrorsHaveTheType checks that every hit limit is a *engine.LimitError
// (what the bindings turn into tether.GrammarLimitError and the CLI into exit 2).
func TestLimitErrorsHaveTheType(t *testing.T) {
	v := newListVocab("a", "b", "aa")
	t.Run("compile", func(t *testing.T) {
		g, err := gbnf.Parse(strings.Replace(manyAlternatives(40, "a", "b"), `root ::= "a" x`, `root ::= x`, 1))
		require.NoError(t, err)
		_, err = engine.Compile(g, v, engine.WithMaxStacks(16))
		require.True(t, isLimit(err), "%v", err)
	})
	t.Run("bytes", func(t *testing.T) {
		gr := compile(t, nestedOptionals(300, "a", "b"), v, engine.WithMaxStacks(64))
		m := gr.NewMatcher()
		err := m.AcceptBytes([]byte(strings.Repeat("a", 200)))
		require.True(t, isLimit(err), "%v", err)
		assert.Equal(t, 0, m.History(), "a limit changes nothing")
	})
	t.Run("tokens", func(t *testing.T) {
		gr := compile(t, nestedOptionals(300, "a", "b"), v, engine.WithMaxStacks(64))
		m := gr.NewMatcher()
		mask := make([]uint32, 1)
		var err error
		for i := 0; i < 200; i++ {
			if err = m.FillMask(mask); err != nil {
				break
			}
			require.True(t, bitSet(mask, 0), "step %d", i)
			if err = m.AcceptToken(0); err != nil {
				break
			}
		}
		require.True(t, isLimit(err), "%v", err)
		var le *engine.LimitError
		require.ErrorAs(t, err, &le)
		assert.Equal(t, "stacks", le.Limit)
		assert.Contains(t, err.Error(), fmt.Sprint(le.Value))
	})
}
