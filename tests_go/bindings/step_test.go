package bindings_test

import (
	"encoding/json"
	"math/bits"
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/bindings"
	"github.com/tetherlm/tether/tests_go/internal/testdata"
)

// TestMatcherAcceptFillBitmask: one call that accepts a token and fills the next row
// equals AcceptToken then FillBitmask; a refused token clears the row and leaves the
// matcher as it was; token -1 only fills.
func TestMatcherAcceptFillBitmask(t *testing.T) {
	words := (128256 + 31) / 32
	hs := matchersFor(t, `root ::= "ab" [0-9]+`, `root ::= "ab" [0-9]+`)
	fast, slow := hs[0], hs[1]
	row, want := make([]uint32, words), make([]uint32, words)
	addr := uintptr(unsafe.Pointer(&row[0]))
	_, err := bindings.MatcherAcceptFillBitmask(fast, -1, addr, 1, words, 0)
	require.NoError(t, err)
	_, err = bindings.MatcherFillBitmask(slow, uintptr(unsafe.Pointer(&want[0])), 1, words, 0)
	require.NoError(t, err)
	assert.Equal(t, want, row)

	const ab, seven, x = 370, 22, 87 // "ab", "7", "x" in Llama-3
	for i := range row {
		row[i] = 0xFFFFFFFF
	}
	_, err = bindings.MatcherAcceptFillBitmask(fast, x, addr, 1, words, 0)
	require.Error(t, err, "x is refused at the start")
	assert.Equal(t, make([]uint32, words), row, "a refused token clears the row")
	for _, id := range []int{ab, seven} {
		_, err = bindings.MatcherAcceptFillBitmask(fast, id, addr, 1, words, 0)
		require.NoError(t, err)
		_, err = bindings.MatcherAcceptToken(slow, id)
		require.NoError(t, err)
		n, err := bindings.MatcherFillBitmask(slow, uintptr(unsafe.Pointer(&want[0])), 1, words, 0)
		require.NoError(t, err)
		assert.Equal(t, want, row, "after token %d", id)
		c := 0
		for _, w := range want {
			c += bits.OnesCount32(w)
		}
		assert.Equal(t, c, n, "the count")
	}
	_, err = bindings.MatcherAcceptFillBitmask(fast, seven, addr, 1, words-1, 0)
	require.Error(t, err, "a row narrower than the vocabulary")
}

// TestFillBitmaskCountDense: the allowed count of a dense row, even and odd widths.
func TestFillBitmaskCountDense(t *testing.T) {
	h := matchersFor(t, `root ::= [^"]* "\""`)[0]
	for _, words := range []int{4008, 4009} {
		row := make([]uint32, words)
		n, err := bindings.MatcherFillBitmask(h, uintptr(unsafe.Pointer(&row[0])), 1, words, 0)
		require.NoError(t, err)
		c := 0
		for _, w := range row {
			for ; w != 0; w &= w - 1 {
				c++
			}
		}
		assert.Equal(t, c, n)
		assert.Greater(t, n, 100_000)
	}
}

// TestBenchSchema: the Go-native side of bench-peers judges instances and writes one
// time per mask of the timed instances; a schema that does not convert is a result.
func TestBenchSchema(t *testing.T) {
	v, err := bindings.VocabFromJSON(string(testdata.ReadTokenizerFile(t, "llama3", "tokenizer.json")), "", "[128009]")
	require.NoError(t, err)
	// `{"a":1}` and `{"a":"x"}` as Llama-3 tokens: {" a ": 1 } and {" a ":" x "}
	ids := []int32{5018, 64, 794, 16, 92, 5018, 64, 3332, 87, 9388}
	ends := []int64{5, 10}
	timed := []uint8{1, 0}
	n := len(ids) + len(ends)
	times := make([]float64, 2*n) // wall times, then the thread's CPU times
	bench := func(schema, opts string, times []float64) (string, error) {
		return bindings.BenchSchema(v, schema, opts, uintptr(unsafe.Pointer(&ids[0])), len(ids),
			uintptr(unsafe.Pointer(&ends[0])), len(ends), uintptr(unsafe.Pointer(&timed[0])),
			uintptr(unsafe.Pointer(&times[0])), len(times))
	}
	out, err := bench(`{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}`, `{"whitespace":"flexible"}`, times)
	require.NoError(t, err)
	var r struct {
		Error     string  `json:"error"`
		CompileUS float64 `json:"compile_us"`
		Accepted  []bool  `json:"accepted"`
		Masks     int     `json:"masks"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	assert.Empty(t, r.Error)
	assert.Positive(t, r.CompileUS)
	assert.Equal(t, []bool{true, false}, r.Accepted)
	assert.Equal(t, 6, r.Masks, "5 tokens + the end of the timed instance")
	for _, x := range times[:r.Masks] {
		assert.Positive(t, x)
	}
	for _, x := range times[n : n+r.Masks] {
		if runtime.GOOS == "linux" {
			assert.Positive(t, x, "a mask's CPU time")
		}
	}
	assert.Zero(t, times[r.Masks], "nothing written past the masks' wall times")
	out, err = bench(`{"type":"nope"}`, "", times)
	require.NoError(t, err)
	assert.Contains(t, out, `"error":"`)
	// a buffer with room for the wall times only is refused, not written past
	short := make([]float64, n+1)
	_, err = bench(`{"type":"integer"}`, "", short[:n])
	require.ErrorContains(t, err, "times has room for 12 values")
	assert.Zero(t, short[n], "nothing written past the buffer")
}
