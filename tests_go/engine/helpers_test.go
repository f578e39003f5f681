package engine_test

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/engine"
	"github.com/tetherlm/tether/gocore/gbnf"
	"github.com/tetherlm/tether/gocore/vocab"
	"github.com/tetherlm/tether/tests_go/internal/testdata"
)

// tinyVocab is the vocabulary llama.cpp's grammar vectors assume: ids below 1024 are
// special tokens "<[N]>", then one token per byte.
var tinyVocab = engine.ByteVocabulary{Specials: 1024}

// compile parses and compiles src, failing the test on error.
func compile(t testing.TB, src string, v engine.Vocabulary, opts ...engine.Option) *engine.Grammar {
	t.Helper()
	g, err := gbnf.Parse(src)
	require.NoError(t, err, "parse %q", src)
	gr, err := engine.Compile(g, v, opts...)
	require.NoError(t, err, "compile %q", src)
	return gr
}

var tokenRef = regexp.MustCompile(`<\[(\d+)\]>`)

// feed accepts s into m: with token refs, "<[N]>" is token N and every other byte
// is its byte token; without, s goes in as bytes, one byte token at a time.
func feed(m *engine.Matcher, v engine.ByteVocabulary, s string, refs bool) error {
	pos := 0
	var locs [][]int
	if refs {
		locs = tokenRef.FindAllStringSubmatchIndex(s, -1)
	}
	for _, l := range locs {
		for ; pos < l[0]; pos++ {
			if err := m.AcceptToken(v.ByteToken(s[pos])); err != nil {
				return err
			}
		}
		n, _ := strconv.Atoi(s[l[2]:l[3]])
		if err := m.AcceptToken(n); err != nil {
			return err
		}
		pos = l[1]
	}
	for ; pos < len(s); pos++ {
		if err := m.AcceptToken(v.ByteToken(s[pos])); err != nil {
			return err
		}
	}
	return nil
}

type grammarCase struct {
	Name          string   `json:"name"`
	Grammar       string   `json:"grammar"`
	Valid         []string `json:"valid"`
	Invalid       []string `json:"invalid"`
	UsesTokenRefs bool     `json:"uses_token_refs"`
	Why           string   `json:"why"`
}

type llamaCases struct {
	GrammarCases     []grammarCase `json:"grammar_cases"`
	GrammarMustFail  []grammarCase `json:"grammar_must_fail"`
	GrammarMustParse []grammarCase `json:"grammar_must_parse"`
	GrammarFiles     []grammarCase `json:"grammar_files"`
}

func loadCases(t testing.TB) *llamaCases {
	t.Helper()
	var c llamaCases
	testdata.SharedJSON(t, "conformance/llamacpp_cases.json", &c)
	return &c
}

// llama3Vocab is the real Llama-3 vocabulary (128,256 tokens).
func llama3Vocab(t testing.TB) *vocab.Vocab { return testdata.Vocab(t, "llama3") }

// isLimit reports whether err is (or wraps) an *engine.LimitError.
func isLimit(err error) bool {
	var le *engine.LimitError
	return errors.As(err, &le)
}

// bitSet reports whether bit id of mask is set.
func bitSet(mask []uint32, id int) bool {
	return id>>5 < len(mask) && mask[id>>5]&(1<<(uint(id)&31)) != 0
}

// stateDisagreements checks the matcher's current state, whose FillMask gave mask
// and maskErr, against the per-token verdicts of the tokens ids (IsAllowed for every
// one, and a real Clone+AcceptToken for every sampleEvery-th), and describes every
// disagreement:
//
//   - a mask error must be a *LimitError; then no mask is compared, but every
//     IsAllowed and AcceptToken answer must be a definite one or a *LimitError, and
//     the two must agree on which;
//   - without a mask error, a token is in the mask iff IsAllowed says so iff
//     AcceptToken succeeds, and neither reports a limit; an end-of-generation token
//     is in the mask iff CanEnd; the matcher is never dead (no dead ends).
func stateDisagreements(m *engine.Matcher, v engine.Vocabulary, mask []uint32, maskErr error, ids []int, sampleEvery int) []string {
	var bad []string
	if maskErr != nil && !isLimit(maskErr) {
		return []string{fmt.Sprintf("FillMask error is not a *LimitError: %v", maskErr)}
	}
	if m.IsDead() {
		bad = append(bad, "dead state reached")
	}
	for k, id := range ids {
		ok, err := m.IsAllowed(id)
		if err != nil && !isLimit(err) {
			bad = append(bad, fmt.Sprintf("token %d: IsAllowed error is not a *LimitError: %v", id, err))
		}
		if maskErr == nil {
			if err != nil {
				bad = append(bad, fmt.Sprintf("token %d %q: IsAllowed hit a limit the mask did not: %v", id, tokText(v, id), err))
			} else if ok != bitSet(mask, id) {
				bad = append(bad, fmt.Sprintf("token %d %q: mask %v, IsAllowed %v", id, tokText(v, id), bitSet(mask, id), ok))
			}
			if id < v.Size() && v.IsEOG(id) && bitSet(mask, id) != m.CanEnd() {
				bad = append(bad, fmt.Sprintf("end token %d: mask %v, CanEnd %v", id, bitSet(mask, id), m.CanEnd()))
			}
		}
		if sampleEvery > 0 && k%sampleEvery == 0 {
			c := m.Clone()
			aerr := c.AcceptToken(id)
			switch {
			case isLimit(aerr) != isLimit(err):
				bad = append(bad, fmt.Sprintf("token %d %q: AcceptToken %v, IsAllowed %v/%v: limit reported by one only", id, tokText(v, id), aerr, ok, err))
			case err == nil && (aerr == nil) != ok:
				bad = append(bad, fmt.Sprintf("token %d %q: IsAllowed %v, AcceptToken %v", id, tokText(v, id), ok, aerr))
			}
		}
	}
	return bad
}

// tokText is the text of token id, or nil for an id outside the vocabulary.
func tokText(v engine.Vocabulary, id int) []byte {
	if id < 0 || id >= v.Size() {
		return nil
	}
	return v.TokenBytes(id)
}
