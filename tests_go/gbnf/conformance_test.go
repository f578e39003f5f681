package gbnf_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/gbnf"
	"github.com/tetherlm/tether/tests_go/internal/testdata"
)

// llamaCases is the part of shared/conformance/llamacpp_cases.json that is a
// question for the parser alone.
type llamaCases struct {
	GrammarCases []struct {
		Name    string `json:"name"`
		Grammar string `json:"grammar"`
	} `json:"grammar_cases"`
	MustFail []struct {
		Name    string `json:"name"`
		Grammar string `json:"grammar"`
		Why     string `json:"why"`
	} `json:"grammar_must_fail"`
	MustParse []struct {
		Name    string `json:"name"`
		Grammar string `json:"grammar"`
	} `json:"grammar_must_parse"`
	Files []struct {
		Name    string `json:"name"`
		Grammar string `json:"grammar"`
	} `json:"grammar_files"`
}

func loadCases(t testing.TB) *llamaCases {
	t.Helper()
	var c llamaCases
	testdata.SharedJSON(t, "conformance/llamacpp_cases.json", &c)
	return &c
}

// The grammars llama.cpp's tests reject, tether rejects, with an *Error.
func TestConformanceMustFail(t *testing.T) {
	cases := loadCases(t)
	require.NotEmpty(t, cases.MustFail)
	for _, c := range cases.MustFail {
		t.Run(c.Name, func(t *testing.T) {
			g, err := gbnf.Parse(c.Grammar)
			if strings.Contains(c.Why, "left recursion") {
				// Divergence (issue 17): tether rewrites left recursion.
				require.NoError(t, err, "left recursion is rewritten: %s", c.Why)
				checkInvariants(t, g)
				return
			}
			require.Error(t, err, "llama.cpp rejects this grammar: %s", c.Why)
			assert.Nil(t, g)
			var e *gbnf.Error
			require.ErrorAs(t, err, &e)
			t.Logf("%v (%v)", err, e.Code)
		})
	}
}

// The grammars llama.cpp's tests accept, tether accepts.
func TestConformanceMustParse(t *testing.T) {
	cases := loadCases(t)
	require.NotEmpty(t, cases.MustParse)
	for _, c := range cases.MustParse {
		t.Run(c.Name, func(t *testing.T) {
			g, err := gbnf.Parse(c.Grammar)
			require.NoError(t, err)
			checkInvariants(t, g)
		})
	}
}

// llama.cpp's example grammars parse.
func TestConformanceGrammarFiles(t *testing.T) {
	cases := loadCases(t)
	require.NotEmpty(t, cases.Files)
	for _, c := range cases.Files {
		t.Run(c.Name, func(t *testing.T) {
			g, err := gbnf.Parse(c.Grammar)
			require.NoError(t, err)
			checkInvariants(t, g)
			checkRoundTrip(t, g)
		})
	}
}

// The grammars of llama.cpp's integration cases parse, except "hang", which is
// also a must-fail case: rejecting it quickly with a clear error is the answer
// the conformance README allows.
func TestConformanceGrammarCasesParse(t *testing.T) {
	cases := loadCases(t)
	require.NotEmpty(t, cases.GrammarCases)
	for _, c := range cases.GrammarCases {
		t.Run(c.Name, func(t *testing.T) {
			g, err := gbnf.Parse(c.Grammar)
			if c.Name == "hang" {
				var e *gbnf.Error
				require.ErrorAs(t, err, &e)
				assert.Equal(t, gbnf.ErrTooLarge, e.Code)
				return
			}
			require.NoError(t, err)
			checkInvariants(t, g)
			checkRoundTrip(t, g)
		})
	}
}
