package tokenizer_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/tokenizer"
	"github.com/tetherlm/tether/tests_go/internal/testdata"
)

// RoundTripTexts exercise what tokenizers get wrong: multi-byte and multi-code-point
// characters, byte fallback, whitespace runs and code.
// nfc is the text after NFC normalization where that differs (tokenizers with an NFC
// normalizer, such as Qwen3's, decode to it).
var roundTripTexts = []struct{ name, text, nfc string }{
	{"ascii", "Hello, world!", ""},
	{"emoji-zwj", "family: 👨‍👩‍👧‍👦, flags 🇩🇪🇯🇵, skin 👋🏽", ""},
	{"cjk", "日本語のテキストと中文文本", ""},
	{"accents", "café naïve Ångström résumé", ""},
	{"code", "func main() {\n\tfmt.Println(\"hi\") // ok\n}\n", ""},
	{"whitespace", "a  b   c\t\t\n\n\n    d", ""},
	{"hindi-arabic", "नमस्ते دنيا", ""},
	{"combining", "e\u0301 a\u0300", "\u00e9 \u00e0"},
}

func TestRoundTripAllTokenizers(t *testing.T) {
	for _, name := range testdata.Tokenizers {
		t.Run(name, func(t *testing.T) {
			data := testdata.ReadTokenizerFile(t, name, "tokenizer.json")
			var spec struct {
				Normalizer *struct{ Type string } `json:"normalizer"`
			}
			require.NoError(t, json.Unmarshal(data, &spec))
			nfc := spec.Normalizer != nil && spec.Normalizer.Type == "NFC"
			tok, err := tokenizer.FromJSON(data)
			require.NoError(t, err)
			defer tok.Close()
			assert.Greater(t, tok.VocabSize(), 30000)
			for _, tc := range roundTripTexts {
				ids, err := tok.Encode(tc.text, false)
				require.NoError(t, err, tc.name)
				require.NotEmpty(t, ids, tc.name)
				got, err := tok.Decode(ids, false)
				require.NoError(t, err, tc.name)
				want := tc.text
				if nfc && tc.nfc != "" {
					want = tc.nfc
				}
				assert.Equal(t, want, got, "%s: round trip of %q", tc.name, tc.text)
			}
		})
	}
}

func TestKnownLlama3IDs(t *testing.T) {
	tok, err := tokenizer.FromFile(testdata.TokenizerFile(t, "llama3", "tokenizer.json"))
	require.NoError(t, err)
	defer tok.Close()
	ids, err := tok.Encode("Hello, world!", false)
	require.NoError(t, err)
	assert.Equal(t, []uint32{9906, 11, 1917, 0}, ids)
	ids, err = tok.Encode("Hello", true)
	require.NoError(t, err)
	assert.Equal(t, []uint32{128000, 9906}, ids, "add-special puts <|begin_of_text|> first")
}

func TestErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"model": {"type": "BPE", `), 0o644))
	notTok := filepath.Join(dir, "not-a-tokenizer.json")
	require.NoError(t, os.WriteFile(notTok, []byte(`{"hello": 1}`), 0o644))

	loadCases := []struct {
		name, path, want string
	}{
		{"missing file", filepath.Join(dir, "nope.json"), "no such file"},
		{"malformed json", bad, "cannot load " + bad},
		{"not a tokenizer", notTok, "cannot load"},
	}
	for _, tc := range loadCases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tokenizer.FromFile(tc.path)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	_, err := tokenizer.FromJSON(nil)
	assert.ErrorContains(t, err, "empty")

	tok, err := tokenizer.FromFile(testdata.TokenizerFile(t, "llama3", "tokenizer.json"))
	require.NoError(t, err)
	_, err = tok.Encode("a\x00b", false)
	assert.ErrorContains(t, err, "NUL byte at byte 1")
	_, err = tok.Encode("ok\xffno", false)
	assert.ErrorContains(t, err, "not valid UTF-8 at byte 2")
	_, err = tok.Decode([]uint32{9906, 999999}, false)
	assert.ErrorContains(t, err, "token id 999999 at position 1 is outside the vocabulary (size 128256)")

	require.NoError(t, tok.Close())
	require.NoError(t, tok.Close(), "closing twice is harmless")
	_, err = tok.Encode("hi", false)
	assert.ErrorIs(t, err, tokenizer.ErrClosed)
	_, err = tok.Decode([]uint32{1}, false)
	assert.ErrorIs(t, err, tokenizer.ErrClosed)
}
