package vocab_test

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/vocab"
	"github.com/tetherlm/tether/tests_go/internal/testdata"
)

type attachKey struct{ n int }

// Attach makes a key's value once, however many callers race for it; keys are
// apart; a panicking maker attaches nothing and a later call makes it.
func TestAttach(t *testing.T) {
	v, err := vocab.Load(testdata.ReadTokenizerFile(t, "llama3", "tokenizer.json"), vocab.WithoutCache())
	require.NoError(t, err)
	var made atomic.Int32
	var wg sync.WaitGroup
	got := make([]any, 16)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = v.Attach(attachKey{1}, func() any { made.Add(1); return &struct{ x int }{i} })
		}()
	}
	wg.Wait()
	assert.Equal(t, int32(1), made.Load(), "the value was made more than once")
	for _, g := range got {
		assert.Same(t, got[0], g)
	}
	other := v.Attach(attachKey{2}, func() any { return "two" })
	assert.Equal(t, "two", other)
	assert.Same(t, got[0], v.Attach(attachKey{1}, func() any { return "never" }))

	assert.Panics(t, func() { v.Attach(attachKey{3}, func() any { panic("broken") }) })
	assert.Equal(t, "made", v.Attach(attachKey{3}, func() any { return "made" }), "a panic left something attached")
}
