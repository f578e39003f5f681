package engine_test

import (
	"regexp"
	"strconv"
	"sync"
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

var (
	llama3Once sync.Once
	llama3     *vocab.Vocab
	llama3Err  error
)

// llama3Vocab is the real Llama-3 vocabulary (128,256 tokens).
func llama3Vocab(t testing.TB) *vocab.Vocab {
	t.Helper()
	path := testdata.TokenizerFile(t, "llama3", "tokenizer.json")
	llama3Once.Do(func() { llama3, llama3Err = vocab.LoadFile(path) })
	require.NoError(t, llama3Err)
	return llama3
}
