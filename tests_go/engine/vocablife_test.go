package engine_test

import (
	"runtime"
	"testing"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/engine"
	"github.com/tetherlm/tether/gocore/vocab"
	"github.com/tetherlm/tether/tests_go/internal/testdata"
)

// useVocab loads an unshared Llama-3 vocabulary, compiles a grammar for it and
// fills masks (building its token trie and cross-grammar caches), and returns
// only weak pointers to the vocabulary and the grammar, and the grammar's cache
// statistics.
func useVocab(t *testing.T, raw []byte) (weak.Pointer[vocab.Vocab], weak.Pointer[engine.Grammar], engine.SharedCacheStats) {
	t.Helper()
	v, err := vocab.Load(raw, vocab.WithoutCache())
	require.NoError(t, err)
	g := compile(t, `root ::= "{\"a\": \"" [a-z]* "\"}"`, v)
	m := g.NewMatcher()
	mask := make([]uint32, (v.Size()+31)/32)
	require.NoError(t, m.FillMask(mask))
	require.NoError(t, m.AcceptBytes([]byte(`{"a": "x`)))
	require.NoError(t, m.FillMask(mask))
	return weak.Make(v), weak.Make(g), g.SharedCacheStats()
}

// A vocabulary nobody uses any more is collected with its token trie and
// caches (they hang on the vocabulary, not on a process-wide table), and an
// unshared vocabulary's caches are its own.
func TestVocabularyLifetime(t *testing.T) {
	raw := testdata.ReadTokenizerFile(t, "llama3", "tokenizer.json")
	wv1, wg1, st1 := useVocab(t, raw)
	wv2, wg2, st2 := useVocab(t, raw)
	// the second vocabulary analysed everything again: nothing came from the first's caches
	assert.Positive(t, st1.Misses)
	assert.Equal(t, st1.Misses, st2.Misses, "an unshared vocabulary found another's cached token sets")
	assert.Zero(t, st2.Hits)
	runtime.GC()
	runtime.GC()
	// (compared with nil, not printed: a vocabulary's dump is megabytes)
	assert.True(t, wg1.Value() == nil && wg2.Value() == nil, "a grammar nobody uses is still alive")
	assert.True(t, wv1.Value() == nil, "a vocabulary nobody uses is still alive (its token trie kept in a global table?)")
	assert.True(t, wv2.Value() == nil, "a vocabulary nobody uses is still alive")
}
