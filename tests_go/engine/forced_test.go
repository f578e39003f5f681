package engine_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/engine"
)

// TestForcedBytes: the bytes every continuation begins with, stopping where the grammar
// could end, could branch, or names a special token; the matcher is left unchanged.
func TestForcedBytes(t *testing.T) {
	byteVocab := engine.ByteVocabulary{Specials: 1024}
	cases := []struct {
		name, grammar, before string
		max                   int
		want                  string
	}{
		{"literal", `root ::= "hello"`, "", 64, "hello"},
		{"stops at max", `root ::= "hello"`, "", 3, "hel"},
		{"stops at a branch", `root ::= "ab" ("c" | "d")`, "", 64, "ab"},
		{"after input", `root ::= "{\"k\": " [0-9]+ "}"`, `{"`, 64, `k": `},
		{"stops where it can end", `root ::= "x" "y"?`, "", 64, "x"},
		{"nothing at a choice", `root ::= [a-z]`, "", 64, ""},
		{"nothing at the end", `root ::= "a"`, "a", 64, ""},
		{"multi-byte character", `root ::= "é!"`, "", 64, "é!"},
		{"shared lead byte only", `root ::= "é" | "è"`, "", 64, "\xc3"},
		{"through rules", "root ::= a \"-\" b\na ::= \"x\"\nb ::= \"y\" | \"z\"", "", 64, "x-"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := compile(t, tc.grammar, byteVocab)
			m := g.NewMatcher()
			if tc.before != "" {
				require.NoError(t, m.AcceptBytes([]byte(tc.before)))
			}
			hist := m.History()
			got, err := m.ForcedBytes(tc.max)
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(got))
			assert.Equal(t, hist, m.History(), "ForcedBytes must not change the matcher")
			if len(got) > 0 {
				require.NoError(t, m.AcceptBytes(got), "forced bytes are accepted")
			}
		})
	}
}

// TestForcedBytesLazy: a lazy matcher awaiting its trigger is forced to nothing.
func TestForcedBytesLazy(t *testing.T) {
	lazy := compile(t, `root ::= "ab"`, engine.ByteVocabulary{Specials: 1024}, engine.WithLazy(engine.Triggers{Words: []string{"ab"}}))
	got, err := lazy.NewMatcher().ForcedBytes(16)
	require.NoError(t, err)
	assert.Empty(t, got)
	assert.Same(t, lazy, lazy.NewMatcher().Grammar())
}
