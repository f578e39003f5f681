package engine_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/engine"
	"github.com/tetherlm/tether/gocore/gbnf"
)

// TestConformanceGrammarCases runs llama.cpp's grammar vectors: every valid string is
// accepted and can end; every invalid one is refused somewhere or cannot end.
func TestConformanceGrammarCases(t *testing.T) {
	c := loadCases(t)
	cases := append(append([]grammarCase{}, c.GrammarCases...), c.GrammarFiles...)
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			start := time.Now()
			g, err := gbnf.Parse(tc.Grammar)
			if err != nil {
				// Only the "hang" grammar may be refused (clearly and quickly).
				require.Empty(t, tc.Valid, "grammar refused: %v", err)
				require.Less(t, time.Since(start), time.Second)
				return
			}
			gr, err := engine.Compile(g, tinyVocab)
			if err != nil {
				require.Empty(t, tc.Valid, "grammar refused: %v", err)
				require.Less(t, time.Since(start), time.Second)
				return
			}
			for _, s := range tc.Valid {
				m := gr.NewMatcher()
				require.NoError(t, feed(m, tinyVocab, s, tc.UsesTokenRefs), "valid %q", s)
				assert.True(t, m.CanEnd(), "valid %q: grammar cannot end", s)
			}
			for _, s := range tc.Invalid {
				m := gr.NewMatcher()
				err := feed(m, tinyVocab, s, tc.UsesTokenRefs)
				assert.True(t, err != nil || !m.CanEnd(), "invalid %q accepted", s)
			}
		})
	}
}

// TestConformanceMustFail: these grammars are refused by Parse or Compile, quickly.
func TestConformanceMustFail(t *testing.T) {
	for _, tc := range loadCases(t).GrammarMustFail {
		t.Run(tc.Name, func(t *testing.T) {
			start := time.Now()
			g, err := gbnf.Parse(tc.Grammar)
			if err == nil {
				_, err = engine.Compile(g, tinyVocab)
			}
			if strings.Contains(tc.Why, "left recursion") {
				// Divergence (issue 17): tether rewrites left recursion.
				require.NoError(t, err, tc.Why)
				return
			}
			require.Error(t, err, tc.Why)
			require.Less(t, time.Since(start), time.Second)
		})
	}
}

// TestConformanceMustParse: these grammars compile.
func TestConformanceMustParse(t *testing.T) {
	for _, tc := range loadCases(t).GrammarMustParse {
		t.Run(tc.Name, func(t *testing.T) {
			g, err := gbnf.Parse(tc.Grammar)
			require.NoError(t, err)
			gr, err := engine.Compile(g, tinyVocab)
			require.NoError(t, err)
			mask := make([]uint32, (tinyVocab.Size()+31)/32)
			require.NoError(t, gr.NewMatcher().FillMask(mask))
		})
	}
}
