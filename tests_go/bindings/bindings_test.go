package bindings_test

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/bindings"
	"github.com/tetherlm/tether/tests_go/internal/testdata"
)

func addr(s []uint32) uintptr { return uintptr(unsafe.Pointer(&s[0])) }

func TestTokenizerHandles(t *testing.T) {
	h, err := bindings.TokenizerFromFile(testdata.TokenizerFile(t, "llama3", "tokenizer.json"))
	require.NoError(t, err)
	n, err := bindings.TokenizerVocabSize(h)
	require.NoError(t, err)
	assert.Equal(t, 128256, n)

	buf := make([]uint32, 2)
	// Too small: the count comes back and nothing is written.
	k, err := bindings.TokenizerEncode(h, "Hello, world!", false, addr(buf), len(buf))
	require.NoError(t, err)
	assert.Equal(t, 4, k)
	assert.Equal(t, []uint32{0, 0}, buf)

	buf = make([]uint32, 8)
	k, err = bindings.TokenizerEncode(h, "Hello, world!", false, addr(buf), len(buf))
	require.NoError(t, err)
	require.Equal(t, 4, k)
	text, err := bindings.TokenizerDecode(h, addr(buf), k, false)
	require.NoError(t, err)
	assert.Equal(t, "Hello, world!", text)

	_, err = bindings.TokenizerEncode(h, "Hello", false, 0, 8)
	assert.ErrorContains(t, err, "null buffer")
	_, err = bindings.TokenizerDecode(h, addr(buf), -1, false)
	assert.ErrorContains(t, err, "negative length")

	ok, err := bindings.TokenizerClose(h)
	require.NoError(t, err)
	assert.True(t, ok)

	_, err = bindings.TokenizerVocabSize(h)
	assert.ErrorContains(t, err, "is closed")
	_, err = bindings.TokenizerClose(h)
	assert.ErrorContains(t, err, "is closed")
	_, err = bindings.TokenizerVocabSize(1 << 40)
	assert.ErrorContains(t, err, "unknown tokenizer handle")
	_, err = bindings.TokenizerFromJSON("{not json")
	assert.ErrorContains(t, err, "cannot load")
}
