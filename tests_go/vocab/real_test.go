package vocab_test

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/engine"
	"github.com/tetherlm/tether/gocore/tokenizer"
	"github.com/tetherlm/tether/gocore/vocab"
	"github.com/tetherlm/tether/tests_go/internal/testdata"
)

// *vocab.Vocab is what the engine reads vocabularies through.
var _ engine.Vocabulary = (*vocab.Vocab)(nil)

// loaded is one real tokenizer, read both ways: by vocab (pure Go) and by the Rust
// tokenizers library, loaded once per test binary (Gemma-3's file is 33 MB).
type loaded struct {
	v   *vocab.Vocab
	tok *tokenizer.Tokenizer
}

var (
	loadedMu sync.Mutex
	loadedBy = map[string]*loaded{}
)

func load(t *testing.T, name string) *loaded {
	t.Helper()
	loadedMu.Lock()
	defer loadedMu.Unlock()
	if l, ok := loadedBy[name]; ok {
		return l
	}
	data := testdata.ReadTokenizerFile(t, name, "tokenizer.json")
	cfg := testdata.ReadTokenizerFile(t, name, "tokenizer_config.json")
	v, err := vocab.Load(data, vocab.WithTokenizerConfig(cfg))
	require.NoError(t, err)
	tok, err := tokenizer.FromJSON(data)
	require.NoError(t, err)
	l := &loaded{v, tok}
	loadedBy[name] = l
	return l
}

// realTokenizers describes what each test tokenizer must be.
var realTokenizers = []struct {
	name         string
	kind         vocab.Kind
	size         int
	byteFallback bool     // has <0xNN> pieces
	leadingSpace bool     // decoder strips the first token's space (Strip after Fuse)
	prepends     bool     // encoder puts ▁ before the text (Prepend normalizer)
	eog          []string // what a chat model of the family ends with
	eogIDs       []int
}{
	{"llama3", vocab.KindByteLevel, 128256, false, false, false,
		[]string{"<|eot_id|>", "<|end_of_text|>"}, []int{128009, 128001}},
	{"llama2", vocab.KindSentencePiece, 32000, true, true, true,
		[]string{"</s>"}, []int{2}},
	{"qwen3", vocab.KindByteLevel, 151669, false, false, false,
		[]string{"<|im_end|>", "<|endoftext|>"}, []int{151645, 151643}},
	{"gemma3", vocab.KindSentencePiece, 262145, true, false, false,
		[]string{"<end_of_turn>", "<eos>"}, []int{106, 1}},
}

func TestRealShape(t *testing.T) {
	for _, tc := range realTokenizers {
		t.Run(tc.name, func(t *testing.T) {
			l := load(t, tc.name)
			assert.Equal(t, tc.kind, l.v.Kind())
			assert.Equal(t, tc.size, l.v.Size())
			assert.Equal(t, l.tok.VocabSize(), l.v.Size(), "same id count as the Rust tokenizer")
			assert.Equal(t, l.v.Size(), l.v.ModelSize())
			assert.Equal(t, tc.leadingSpace, l.v.LeadingSpace())
			assert.Equal(t, tc.prepends, l.v.PrependsSpace())
		})
	}
}

// TestDecodeAgreement: every token whose bytes are valid UTF-8 decodes, alone, to
// exactly those bytes in the Rust tokenizer. Allowed difference: decoders with a
// Strip after Fuse (Llama-2) drop the leading space of the first (here: only) token.
// Special tokens have no bytes (Decode gives their content) and are skipped; tokens
// that end inside a UTF-8 character decode to U+FFFD and are only checked for that.
// Decoded text crosses the cgo boundary as a C string, so it ends at a NUL byte: the
// token for byte 0x00 decodes to "" and is compared up to its NUL.
func TestDecodeAgreement(t *testing.T) {
	for _, tc := range realTokenizers {
		t.Run(tc.name, func(t *testing.T) {
			l := load(t, tc.name)
			var compared, stripped, special, partial, nul int
			var mismatches []string
			ids := make([]uint32, 1)
			for id := 0; id < l.v.Size(); id++ {
				if l.v.IsSpecial(id) {
					special++
					require.Empty(t, l.v.TokenBytes(id), "special token %d has no bytes", id)
					continue
				}
				b := l.v.TokenBytes(id)
				ids[0] = uint32(id)
				got, err := l.tok.Decode(ids, false)
				require.NoError(t, err)
				if !utf8.Valid(b) {
					partial++
					if !strings.ContainsRune(got, utf8.RuneError) {
						mismatches = append(mismatches, fmt.Sprintf("id %d: bytes %x are not UTF-8 but decode to %q", id, b, got))
					}
					continue
				}
				compared++
				if i := bytes.IndexByte(b, 0); i >= 0 {
					nul++
					b = b[:i]
				}
				switch {
				case got == string(b):
				case l.v.LeadingSpace() && len(b) > 0 && b[0] == ' ' && got == string(b[1:]):
					stripped++
				default:
					mismatches = append(mismatches, fmt.Sprintf("id %d: bytes %q, Decode %q", id, b, got))
				}
			}
			t.Logf("%s: compared %d tokens (%d after the decoder's leading-space strip, %d up to a NUL), skipped %d special, %d partial UTF-8",
				tc.name, compared, stripped, nul, special, partial)
			assert.Empty(t, mismatches[:min(len(mismatches), 20)], "%d mismatches", len(mismatches))
			assert.Greater(t, compared, l.v.Size()*9/10)
		})
	}
}

func TestByteFallbackTokens(t *testing.T) {
	for _, tc := range realTokenizers {
		t.Run(tc.name, func(t *testing.T) {
			l := load(t, tc.name)
			found := 0
			for n := 0; n < 256; n++ {
				id, ok := l.v.TokenID(fmt.Sprintf("<0x%02X>", n))
				if !ok {
					continue
				}
				found++
				assert.Equal(t, []byte{byte(n)}, l.v.TokenBytes(id), "<0x%02X> (id %d)", n, id)
			}
			if tc.byteFallback {
				assert.Equal(t, 256, found, "every byte has a fallback token")
			} else {
				assert.Zero(t, found, "byte-level vocabularies have no <0xNN> pieces")
			}
		})
	}
}

// corpus covers scripts, emoji sequences, code and whitespace. Every text is in NFC,
// so that tokenizers with an NFC normalizer (Qwen3) encode it unchanged.
var corpus = []struct{ name, text string }{
	{"english", "The quick brown fox jumps over the lazy dog. It's 3.14159, isn't it?"},
	{"german", "Größere Übungen: Straße, Äpfel und Öl kosten 12,50 €."},
	{"chinese", "我们今天去公园散步，天气很好。"},
	{"japanese", "東京は日本の首都です。カタカナとひらがな、漢字。"},
	{"hindi", "हिन्दी भाषा में नमस्ते दुनिया"},
	{"arabic", "مرحبا بالعالم، كيف حالك؟"},
	{"emoji-zwj", "family 👨‍👩‍👧‍👦 coder 👩🏽‍💻 flag 🏳️‍🌈 🇩🇪 ❤️"},
	{"code", "func main() {\n\tfmt.Println(\"hi\")\n\tx := []int{1, 2, 3} // ok\n}\n"},
	{"json", `{"name": "Ada", "tags": ["a", "b"], "n": -1.5e3}`},
	{"space-runs", "a  b   c    d          e"},
	{"newline-runs", "one\n\ntwo\n\n\n\nthree\r\n\r\n\tfour\t\t\n"},
	{"leading-spaces", "   three leading spaces"},
	{"only-spaces", "     "},
	{"only-newlines", "\n\n\n"},
	{"lone-combining-mark", "\u0301"},
	{"combining-after-space", "x \u0301 y"},
	{"rare-bytes", "\x01\x7f tab\there ÿ \u00ad soft-hyphen \U0001F9EC"},
}

// TestEncodeBytes: the concatenated TokenBytes of Encode(text) are the text's bytes.
// Tokenizers whose normalizer prepends "▁" (Llama-2) give " " + text: the space is
// part of the first token's bytes, and LeadingSpace says the decoder drops it.
func TestEncodeBytes(t *testing.T) {
	for _, tc := range realTokenizers {
		t.Run(tc.name, func(t *testing.T) {
			l := load(t, tc.name)
			for _, c := range corpus {
				ids, err := l.tok.Encode(c.text, false)
				require.NoError(t, err, c.name)
				var got []byte
				for _, id := range ids {
					require.False(t, l.v.IsSpecial(int(id)), "%s: Encode produced special token %d", c.name, id)
					got = append(got, l.v.TokenBytes(int(id))...)
				}
				want := c.text
				if l.v.PrependsSpace() {
					want = " " + want
				}
				assert.Equal(t, want, string(got), "%s: ids %v", c.name, ids)
			}
		})
	}
}

func TestRealEOG(t *testing.T) {
	for _, tc := range realTokenizers {
		t.Run(tc.name, func(t *testing.T) {
			l := load(t, tc.name)
			for i, text := range tc.eog {
				id, ok := l.v.TokenID(text)
				require.True(t, ok, text)
				assert.Equal(t, tc.eogIDs[i], id, text)
				assert.True(t, l.v.IsEOG(id), "%s (%d) ends generation", text, id)
				assert.True(t, l.v.IsSpecial(id), "%s is special", text)
				assert.Empty(t, l.v.TokenBytes(id))
				assert.Equal(t, text, l.v.Text(id))
			}
			t.Logf("%s: EOG %v", tc.name, eogTexts(l.v))
			for _, id := range l.v.EOGTokens() {
				assert.True(t, l.v.IsEOG(id))
			}
		})
	}
}

func eogTexts(v *vocab.Vocab) []string {
	var out []string
	for _, id := range v.EOGTokens() {
		out = append(out, fmt.Sprintf("%d %s", id, v.Text(id)))
	}
	return out
}

// TestLoadFile reads the config files beside the tokenizer; Llama-3's
// tokenizer_config.json names <|eot_id|> as eos_token.
func TestLoadFile(t *testing.T) {
	path := testdata.TokenizerFile(t, "llama3", "tokenizer.json")
	v, err := vocab.LoadFile(path)
	require.NoError(t, err)
	assert.Equal(t, []int{128001, 128009}, v.EOGTokens())
	again, err := vocab.LoadFile(path)
	require.NoError(t, err)
	assert.Same(t, v, again, "the same file loads once")

	v2, err := vocab.LoadFile(path, vocab.WithModelSize(128300), vocab.WithoutEOG("<|end_of_text|>"))
	require.NoError(t, err)
	assert.NotSame(t, v, v2)
	assert.Equal(t, 128300, v2.ModelSize())
	assert.Equal(t, []int{128009}, v2.EOGTokens())
	assert.True(t, v2.IsSpecial(128299), "padding id")
	assert.Empty(t, v2.TokenBytes(128299))
}

func TestRealText(t *testing.T) {
	l := load(t, "llama3")
	id, ok := l.v.TokenID("Ġthe")
	require.True(t, ok)
	assert.Equal(t, " the", string(l.v.TokenBytes(id)))
	assert.Equal(t, " the", l.v.Text(id))
	// Byte-level piece for the lone byte 0xA7 (a UTF-8 continuation byte).
	id, ok = l.v.TokenID("§")
	require.True(t, ok)
	assert.Equal(t, []byte{0xA7}, l.v.TokenBytes(id))
	assert.Equal(t, `\xA7`, l.v.Text(id))

	g := load(t, "gemma3")
	id, ok = g.v.TokenID("▁▁")
	require.True(t, ok)
	assert.Equal(t, "  ", string(g.v.TokenBytes(id)), "Gemma's non-special added ▁▁ is two spaces")
	id, ok = g.v.TokenID("<unused0>")
	require.True(t, ok)
	assert.False(t, g.v.IsSpecial(id))
	assert.Equal(t, "<unused0>", string(g.v.TokenBytes(id)), "non-special added tokens are their text")
}
