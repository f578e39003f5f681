package bindings_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/bindings"
	"github.com/tetherlm/tether/tests_go/internal/testdata"
)

// processorFor compiles src for the Llama-3 vocabulary and returns a processor handle.
func processorFor(t testing.TB, src string) int64 {
	t.Helper()
	v, err := bindings.VocabFromJSON(string(testdata.ReadTokenizerFile(t, "llama3", "tokenizer.json")), "", "")
	require.NoError(t, err)
	g, err := bindings.GrammarCompile(v, src, "root", "", 0)
	require.NoError(t, err)
	p, err := bindings.ProcessorNew(g)
	require.NoError(t, err)
	return p
}

func TestProcessorApplyMatchesMask(t *testing.T) {
	const vocab = 128256 + 7 // a padded model vocabulary
	words := (vocab + 31) / 32
	p := processorFor(t, `root ::= [a-z]+ "!" | "{" [^}]* "}"`)
	ids := []int64{128000}
	idp := uintptr(unsafe.Pointer(&ids[0]))
	mask := make([]uint32, words)
	_, err := bindings.ProcessorFillMasks(p, 1, 0, idp, 1, 1, 1, uintptr(unsafe.Pointer(&mask[0])), words, vocab)
	require.NoError(t, err)

	in := make([]float32, vocab)
	for i := range in {
		in[i] = rand.Float32()*20 - 10
	}
	out := make([]float32, vocab)
	_, err = bindings.ProcessorStepApply(p, 1, 0, idp, 1, 1, 1, uintptr(unsafe.Pointer(&in[0])), uintptr(unsafe.Pointer(&out[0])), vocab, vocab, "float32")
	require.NoError(t, err)
	allowed := 0
	for i := range in {
		if mask[i/32]&(1<<(i%32)) != 0 {
			allowed++
			require.Equal(t, in[i], out[i], "token %d is allowed and keeps its score", i)
		} else {
			require.True(t, math.IsInf(float64(out[i]), -1), "token %d is masked", i)
		}
	}
	assert.Greater(t, allowed, 1000)
	assert.Less(t, allowed, vocab-1000)

	// In place (out == in) gives the same result.
	_, err = bindings.ProcessorStepApply(p, 1, 0, idp, 1, 1, 1, uintptr(unsafe.Pointer(&in[0])), uintptr(unsafe.Pointer(&in[0])), vocab, vocab, "float32")
	require.NoError(t, err)
	assert.Equal(t, out, in)

	// Extents that do not agree with the shape are refused before anything is read.
	_, err = bindings.ProcessorStepApply(p, 1, 0, idp, 1, 2, 1, uintptr(unsafe.Pointer(&in[0])), uintptr(unsafe.Pointer(&out[0])), vocab, vocab, "float32")
	assert.ErrorContains(t, err, "input_ids: buffer of 1 values for shape [2, 1]")
	_, err = bindings.ProcessorStepApply(p, 1, 0, idp, 1, 1, 1, uintptr(unsafe.Pointer(&in[0])), uintptr(unsafe.Pointer(&out[0])), vocab-1, vocab, "float32")
	assert.ErrorContains(t, err, "scores: buffer of 128262 values for 1 rows of width 128263")
	_, err = bindings.ProcessorFillMasks(p, 1, 0, idp, 1, 1, 1, uintptr(unsafe.Pointer(&mask[0])), words, vocab+64)
	assert.ErrorContains(t, err, "masks: buffer of")
	_, err = bindings.ProcessorStepApply(p, 1, 3, idp, 1, 1, 1, uintptr(unsafe.Pointer(&in[0])), uintptr(unsafe.Pointer(&out[0])), vocab, vocab, "float32")
	assert.ErrorContains(t, err, "step mode 3")
}

// BenchmarkProcessorApply is one generate step's Go work at batch 1 over the Llama-3
// vocabulary: find the row's state, compute its mask, write the masked scores.
func BenchmarkProcessorApply(b *testing.B) {
	const vocab = 128256
	p := processorFor(b, `root ::= "{" ( [^}"] | "\"" [^"]* "\"" )* "}"`)
	in := make([]float32, vocab)
	out := make([]float32, vocab)
	ids := []int64{128000, 90} // "{" : string content follows, most tokens allowed
	idp := uintptr(unsafe.Pointer(&ids[0]))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// The same step again: a free stream finds the row's state by its tokens.
		if _, err := bindings.ProcessorStepApply(p, 1, 0, idp, 2, 1, 2, uintptr(unsafe.Pointer(&in[0])), uintptr(unsafe.Pointer(&out[0])), vocab, vocab, "float32"); err != nil {
			b.Fatal(err)
		}
	}
}
