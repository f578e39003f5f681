package bindings_test

import (
	"fmt"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/bindings"
	"github.com/tetherlm/tether/tests_go/internal/testdata"
)

// matchersFor compiles each source for the Llama-3 vocabulary and returns one matcher
// handle per source.
func matchersFor(t testing.TB, srcs ...string) []int64 {
	t.Helper()
	v, err := bindings.VocabFromJSON(string(testdata.ReadTokenizerFile(t, "llama3", "tokenizer.json")), "", "")
	require.NoError(t, err)
	hs := make([]int64, len(srcs))
	for i, src := range srcs {
		g, err := bindings.GrammarCompile(v, src, "root", "", 0)
		require.NoError(t, err)
		hs[i], err = bindings.MatcherNew(g)
		require.NoError(t, err)
	}
	return hs
}

// TestMatchersFillBitmasksEqualsSingleFills: one call for rows of different grammars,
// written where indices say, equals each matcher's own fill; rows not named stay as
// they were; bad extents are refused before anything is written.
func TestMatchersFillBitmasksEqualsSingleFills(t *testing.T) {
	const vocab = 128256 + 7
	words := (vocab + 31) / 32
	var srcs []string
	for i := range 9 {
		srcs = append(srcs, fmt.Sprintf(`root ::= [a-%c]{1,%d} "!"`, 'a'+i, i+1))
	}
	srcs = append(srcs, `root ::= "{" [^}]* "}"`)
	hs := matchersFor(t, srcs...)
	rows := len(hs) + 2
	batch := make([]uint32, rows*words)
	for i := range batch {
		batch[i] = 0xDEADBEEF
	}
	idx := make([]int64, len(hs))
	for i := range idx {
		idx[i] = int64(len(hs) - 1 - i) // reversed
	}
	n, err := bindings.MatchersFillBitmasks(uintptr(unsafe.Pointer(&hs[0])), uintptr(unsafe.Pointer(&idx[0])), len(hs),
		uintptr(unsafe.Pointer(&batch[0])), rows, words)
	require.NoError(t, err)
	assert.Equal(t, len(hs), n)
	one := make([]uint32, words)
	for i, h := range hs {
		_, err := bindings.MatcherFillBitmask(h, uintptr(unsafe.Pointer(&one[0])), 1, words, 0)
		require.NoError(t, err)
		r := int(idx[i])
		require.Equal(t, one, batch[r*words:(r+1)*words], "matcher %d at row %d", i, r)
	}
	for _, r := range []int{len(hs), len(hs) + 1} {
		assert.Equal(t, uint32(0xDEADBEEF), batch[r*words], "row %d is not named and stays", r)
	}

	bad := []int64{int64(rows)}
	_, err = bindings.MatchersFillBitmasks(uintptr(unsafe.Pointer(&hs[0])), uintptr(unsafe.Pointer(&bad[0])), 1,
		uintptr(unsafe.Pointer(&batch[0])), rows, words)
	assert.ErrorContains(t, err, "outside [0, 12)")
	_, err = bindings.MatcherFillBitmask(hs[0], uintptr(unsafe.Pointer(&one[0])), 1, 100, 0)
	assert.ErrorContains(t, err, "fewer than the tokenizer's")
	_, err = bindings.MatcherFillBitmask(hs[0], 0, 1, words, 0)
	assert.Error(t, err)
}

// BenchmarkMatchersFillBitmasks64 fills 64 rows of 64 different grammars over the
// Llama-3 vocabulary in one call (rows in parallel), against 64 single calls.
func BenchmarkMatchersFillBitmasks64(b *testing.B) {
	const vocab = 128256
	words := (vocab + 31) / 32
	var srcs []string
	for i := range 64 {
		srcs = append(srcs, fmt.Sprintf(`root ::= "{\"k%d\": \"" [^"]{0,%d} "\"}"`, i, i+4))
	}
	hs := matchersFor(b, srcs...)
	for _, h := range hs {
		_, err := bindings.MatcherAcceptText(h, `{"k`)
		require.NoError(b, err)
	}
	idx := make([]int64, len(hs))
	for i := range idx {
		idx[i] = int64(i)
	}
	batch := make([]uint32, len(hs)*words)
	b.Run("batch", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, err := bindings.MatchersFillBitmasks(uintptr(unsafe.Pointer(&hs[0])), uintptr(unsafe.Pointer(&idx[0])), len(hs),
				uintptr(unsafe.Pointer(&batch[0])), len(hs), words); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("single", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			for i, h := range hs {
				if _, err := bindings.MatcherFillBitmask(h, uintptr(unsafe.Pointer(&batch[0])), len(hs), words, i); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
