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
	"github.com/tetherlm/tether/gocore/schema"
)

// overlappingAnyOf is issue 12's recursive schema whose two anyOf branches overlap:
// every nesting level doubles the stacks.
const overlappingAnyOf = `{"$ref":"#/$defs/n","$defs":{"n":{"anyOf":[{"type":"array","items":{"$ref":"#/$defs/n"}},
	{"type":"array","items":{"$ref":"#/$defs/n"},"maxItems":99}]}}}`

// TestLimitNeverLetsThroughWhatItRefuses nests "[" into the overlapping-anyOf
// schema (and a GBNF grammar of the same shape) past the depth where the stack limit
// is met (depth 12 with 8,192 stacks): at every depth, either "[" is in an exact mask
// and accepted, or the mask, IsAllowed and AcceptToken all report a *LimitError. A
// mask that lets "[" through and an AcceptToken that refuses it is the bug of issue
// 12 (greedy generation ended with "[[[[[[[[[[[" + EOS).
func TestLimitNeverLetsThroughWhatItRefuses(t *testing.T) {
	v := llama3Vocab(t)
	src, _, err := schema.FromJSONSchema([]byte(overlappingAnyOf))
	require.NoError(t, err)
	cases := []struct {
		name, src string
		opts      []engine.Option
	}{
		{"schema, 8192 stacks", src, []engine.Option{engine.WithMaxStacks(8192)}},
		{"gbnf, 1024 stacks", `root ::= n
n ::= "[" (n ("," n)*)? "]" | "[" (n ("," n){0,98})? "]"`, []engine.Option{engine.WithMaxStacks(1024)}},
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
			for depth := 0; depth < 24; depth++ {
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
		g, err := gbnf.Parse(`root ::= ("a"? ){0,60} "b"`)
		require.NoError(t, err)
		_, err = engine.Compile(g, v, engine.WithMaxStacks(16))
		require.True(t, isLimit(err), "%v", err)
	})
	t.Run("bytes", func(t *testing.T) {
		gr := compile(t, "root ::= t root | \"\"\nt ::= \"a\" | \"a\" t \"b\"", v, engine.WithMaxStacks(64))
		m := gr.NewMatcher()
		err := m.AcceptBytes([]byte(strings.Repeat("a", 200)))
		require.True(t, isLimit(err), "%v", err)
		assert.Equal(t, 0, m.History(), "a limit changes nothing")
	})
	t.Run("tokens", func(t *testing.T) {
		gr := compile(t, "root ::= t root | \"\"\nt ::= \"a\" | \"a\" t \"b\"", v, engine.WithMaxStacks(64))
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
