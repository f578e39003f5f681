package vocab_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/vocab"
)

// tokJSON builds a small tokenizer.json from its model, added_tokens and decoder
// (JSON text; "" leaves a field out).
func tokJSON(model, added, decoder string, extra ...string) []byte {
	var parts []string
	if added != "" {
		parts = append(parts, `"added_tokens": `+added)
	}
	if decoder != "" {
		parts = append(parts, `"decoder": `+decoder)
	}
	parts = append(parts, extra...)
	if model != "" {
		parts = append(parts, `"model": `+model)
	}
	return []byte("{" + strings.Join(parts, ",\n") + "}")
}

const (
	bpeModel     = `{"type": "BPE", "vocab": {"a": 0, "Ġb": 1, "Ċ": 2, "Ã©": 3, "Ã": 4, "é": 5, "hi there": 6}, "merges": [["a", "b"], "Ġ b"]}`
	spModel      = `{"type": "BPE", "byte_fallback": true, "vocab": {"<unk>": 0, "<0x0A>": 1, "<0xE2>": 2, "▁hello": 3, "▁": 4, "wor\u006cd": 5, "<0x41": 6}, "merges": []}`
	byteLevelDec = `{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true}`
	llama2Dec    = `{"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "}, {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}`
)

// TestKinds: the bytes of each token under each decoder kind.
func TestKinds(t *testing.T) {
	cases := []struct {
		name        string
		json        []byte
		kind        vocab.Kind
		want        map[int]string // id -> bytes
		leading     bool
		prependsSpc bool
	}{
		{"byte-level", tokJSON(bpeModel, "", byteLevelDec), vocab.KindByteLevel,
			map[int]string{0: "a", 1: " b", 2: "\n", 3: "é", 4: "\xc3", 5: "\xe9",
				6: "hi there"}, // a literal space is outside the table: the raw piece
			false, false},
		{"byte-level without decoder", tokJSON(bpeModel, "", "",
			`"pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": true}`), vocab.KindByteLevel,
			map[int]string{1: " b", 3: "é"}, false, true},
		{"sentencepiece byte fallback", tokJSON(spModel, `[{"id": 0, "content": "<unk>", "special": true}]`, llama2Dec,
			`"normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"}, {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]}`),
			vocab.KindSentencePiece,
			map[int]string{0: "", 1: "\n", 2: "\xe2", 3: " hello", 4: " ", 5: "world", 6: "<0x41"},
			true, true},
		{"metaspace unigram", tokJSON(`{"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0], ["▁the", -1.5], ["s", -2e1]]}`, "",
			`{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true}`,
			`"pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first"}`),
			vocab.KindSentencePiece, map[int]string{0: "<unk>", 1: " the", 2: "s"}, true, true},
		{"wordpiece", tokJSON(`{"type": "WordPiece", "unk_token": "[UNK]", "vocab": {"[UNK]": 0, "hello": 1, "##lo": 2, "[CLS]": 3}}`,
			`[{"id": 3, "content": "[CLS]", "special": true}]`, `{"type": "WordPiece", "prefix": "##", "cleanup": true}`),
			vocab.KindWordPiece, map[int]string{1: " hello", 2: "lo", 3: ""}, true, false},
		{"plain, no decoder", tokJSON(`{"type": "WordLevel", "vocab": {"x": 0, "yz": 1}}`, "", "null"),
			vocab.KindPlain, map[int]string{0: " x", 1: " yz"}, true, false},
		{"untagged BPE, escapes", tokJSON(`{"vocab": {"\"q\"": 0, "tab\t": 1, "\ud83d\ude00": 2, "\u00e9": 3}, "merges": []}`, "",
			`{"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}`),
			vocab.KindSentencePiece, map[int]string{0: `"q"`, 1: "tab\t", 2: "😀", 3: "é"}, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, err := vocab.Load(tc.json)
			require.NoError(t, err)
			assert.Equal(t, tc.kind, v.Kind())
			for id, want := range tc.want {
				assert.Equal(t, []byte(want), append([]byte{}, v.TokenBytes(id)...), "id %d", id)
			}
			assert.Equal(t, tc.leading, v.LeadingSpace(), "LeadingSpace")
			assert.Equal(t, tc.prependsSpc, v.PrependsSpace(), "PrependsSpace")
		})
	}
}

// TestIDSpace: added tokens, gaps, padding and the lookups around them.
func TestIDSpace(t *testing.T) {
	data := tokJSON(`{"type": "BPE", "vocab": {"a": 0, "b": 1, "<x>": 2}, "merges": []}`,
		`[{"id": 2, "content": "<x>", "special": true}, {"id": 5, "content": "<tool>", "special": false},
		  {"id": 6, "content": "</s>", "special": true}, {"id": 7, "content": "Ġz", "special": false}]`, byteLevelDec)
	v, err := vocab.Load(data, vocab.WithModelSize(10))
	require.NoError(t, err)
	assert.Equal(t, 8, v.Size())
	assert.Equal(t, 10, v.ModelSize())
	cases := []struct {
		id      int
		bytes   string
		special bool
		eog     bool
		text    string
	}{
		{0, "a", false, false, "a"},
		{2, "", true, false, "<x>"},
		{3, "", true, false, ""}, // gap
		{4, "", true, false, ""}, // gap
		{5, "<tool>", false, false, "<tool>"},
		{6, "", true, true, "</s>"},   // known end token, special
		{7, " z", false, false, " z"}, // non-special added tokens go through the decoder, as in Hugging Face
		{8, "", true, false, ""},      // padding
		{9, "", true, false, ""},
		{10, "", true, false, ""}, // beyond the model
		{-1, "", true, false, ""},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.bytes, string(v.TokenBytes(tc.id)), "bytes of %d", tc.id)
		assert.Equal(t, tc.special, v.IsSpecial(tc.id), "special %d", tc.id)
		assert.Equal(t, tc.eog, v.IsEOG(tc.id), "eog %d", tc.id)
		assert.Equal(t, tc.text, v.Text(tc.id), "text %d", tc.id)
	}
	assert.Equal(t, []int{2, 6}, v.SpecialTokens())
	assert.Equal(t, []int{6}, v.EOGTokens())
	for text, want := range map[string]int{"a": 0, "<x>": 2, "<tool>": 5, "</s>": 6, "Ġz": 7} {
		id, ok := v.TokenID(text)
		assert.True(t, ok, text)
		assert.Equal(t, want, id, text)
	}
	_, ok := v.TokenID("nope")
	assert.False(t, ok)

	// The returned slices are fresh, and TokenBytes cannot grow into its neighbour.
	v.EOGTokens()[0] = 99
	assert.Equal(t, []int{6}, v.EOGTokens())
	b := v.TokenBytes(0)
	_ = append(b, 'X')
	assert.Equal(t, "b", string(v.TokenBytes(1)))
}

// TestEOGSources: where the end-of-generation set comes from, and its overrides.
func TestEOGSources(t *testing.T) {
	data := tokJSON(`{"type": "BPE", "vocab": {"a": 0, "<|im_end|>": 1, "<|endoftext|>": 2, "<stop>": 3, "b": 4}, "merges": []}`,
		`[{"id": 1, "content": "<|im_end|>", "special": true}, {"id": 2, "content": "<|endoftext|>", "special": true},
		  {"id": 3, "content": "<stop>", "special": true}]`, byteLevelDec)
	cases := []struct {
		name string
		opts []vocab.Option
		want []int
	}{
		{"known tokens", nil, []int{1, 2}},
		{"eos_token string", []vocab.Option{vocab.WithTokenizerConfig([]byte(`{"eos_token": "<stop>"}`))}, []int{1, 2, 3}},
		{"eos_token object", []vocab.Option{vocab.WithTokenizerConfig([]byte(`{"eos_token": {"content": "b", "__type": "AddedToken"}}`))}, []int{1, 2, 4}},
		{"eos_token null", []vocab.Option{vocab.WithTokenizerConfig([]byte(`{"eos_token": null, "other": [1]}`))}, []int{1, 2}},
		{"generation_config id", []vocab.Option{vocab.WithGenerationConfig([]byte(`{"eos_token_id": 3}`))}, []int{1, 2, 3}},
		{"generation_config list", []vocab.Option{vocab.WithGenerationConfig([]byte(`{"eos_token_id": [0, 4]}`))}, []int{0, 1, 2, 4}},
		{"config.json text_config", []vocab.Option{vocab.WithModelConfig([]byte(`{"text_config": {"eos_token_id": [3], "vocab_size": 8}}`))}, []int{1, 2, 3}},
		{"remove by text and id", []vocab.Option{vocab.WithoutEOG("<|endoftext|>"), vocab.WithoutEOGIDs(1)}, nil},
		{"add by text and id", []vocab.Option{vocab.WithEOG("<stop>"), vocab.WithEOGIDs(0)}, []int{0, 1, 2, 3}},
		{"replace", []vocab.Option{vocab.WithoutDefaultEOG(), vocab.WithEOG("b"),
			vocab.WithTokenizerConfig([]byte(`{"eos_token": "<stop>"}`))}, []int{4}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, err := vocab.Load(data, tc.opts...)
			require.NoError(t, err)
			if tc.want == nil {
				assert.Empty(t, v.EOGTokens())
			} else {
				assert.Equal(t, tc.want, v.EOGTokens())
			}
		})
	}
	v, err := vocab.Load(data, vocab.WithModelConfig([]byte(`{"vocab_size": 16, "eos_token_id": 2}`)))
	require.NoError(t, err)
	assert.Equal(t, 16, v.ModelSize())

	// A known end token that is a plain piece (not special) is ordinary text.
	plain := tokJSON(`{"type": "BPE", "vocab": {"</s>": 0, "a": 1}, "merges": []}`, "", byteLevelDec)
	v, err = vocab.Load(plain)
	require.NoError(t, err)
	assert.Empty(t, v.EOGTokens())
}

// TestErrors: malformed and unsupported files name the field or token at fault.
func TestErrors(t *testing.T) {
	okModel := `{"type": "BPE", "vocab": {"a": 0}, "merges": []}`
	cases := []struct {
		name string
		json string
		opts []vocab.Option
		want string
	}{
		{"empty", "", nil, "tokenizer.json is empty"},
		{"not JSON", "hello", nil, "invalid JSON at byte offset 0 (line 1, column 1)"},
		{"not an object", "[1]", nil, "tokenizer.json is a JSON object"},
		{"trailing comma", `{"model": {"type": "BPE", "vocab": {"a": 0,}}}`, nil, "invalid JSON at byte offset 43"},
		{"unterminated", "{\n\"model\": {\"type\": \"BPE\", \"vocab\": {\"a", nil, "line 2, column 36): unterminated string"},
		{"bad escape", `{"model": {"type": "BPE", "vocab": {"\q": 0}}}`, nil, `invalid escape \q`},
		{"trailing garbage", `{"model": ` + okModel + `} x`, nil, "after the top-level object"},
		{"no model", `{"version": "1.0"}`, nil, "tokenizer.json: model is missing"},
		{"no vocab", `{"model": {"type": "BPE", "merges": []}}`, nil, "model.vocab is missing"},
		{"vocab not object", `{"model": {"type": "BPE", "vocab": [["a", 0]]}}`, nil, `model.vocab must be an object of piece: id for model.type "BPE"`},
		{"unsupported model", `{"model": {"type": "Tiktoken", "vocab": {"a": 0}}}`, nil, `model.type "Tiktoken" is not supported`},
		{"type not string", `{"model": {"type": 3, "vocab": {"a": 0}}}`, nil, "model.type must be a string"},
		{"id not integer", `{"model": {"type": "BPE", "vocab": {"a": 0, "bc": 1.5}}}`, nil, `model.vocab["bc"]: 1.5 is not an integer id`},
		{"negative id", `{"model": {"type": "BPE", "vocab": {"a": -1}}}`, nil, `model.vocab["a"]: -1`},
		{"id string", `{"model": {"type": "BPE", "vocab": {"a": "0"}}}`, nil, `model.vocab["a"]: want an integer id, found '"' (at byte offset 41)`},
		{"duplicate id", `{"model": {"type": "BPE", "vocab": {"a": 0, "b": 0}}}`, nil, `model.vocab gives id 0 to both "a" and "b"`},
		{"sparse ids", `{"model": {"type": "BPE", "vocab": {"a": 0, "b": 9000000}}}`, nil, "token ids are sparse: the largest is 9000000"},
		{"huge id", `{"model": {"type": "BPE", "vocab": {"a": 99999999999}}}`, nil, `model.vocab["a"]: 99999999999 is not an integer id`},
		{"no tokens", `{"model": {"type": "BPE", "vocab": {}}}`, nil, "define no tokens"},
		{"unigram entry", `{"model": {"type": "Unigram", "vocab": [["a", 0.0], "b"]}}`, nil, "in model.vocab (an entry is [piece, score])"},
		{"decoder unsupported", string(tokJSON(okModel, "", `{"type": "CTC", "pad_token": "<pad>"}`)), nil, `decoder.type "CTC" with model.type "BPE" is not supported`},
		{"decoder unknown in sequence", string(tokJSON(okModel, "", `{"type": "Sequence", "decoders": [{"type": "Fuse"}, {"type": "Wat"}]}`)), nil, `decoder.decoders[1].type "Wat"`},
		{"decoder regex", string(tokJSON(okModel, "", `{"type": "Replace", "pattern": {"Regex": "x+"}, "content": " "}`)), nil, `decoder.type "Replace" with model.type "BPE" is not supported: a Regex pattern`},
		{"decoder no type", string(tokJSON(okModel, "", `{"prefix": "##"}`)), nil, "decoder.type is missing"},
		{"decoder wrong shape", string(tokJSON(okModel, "", `{"type": "Sequence", "decoders": 5}`)), nil, "decoder.decoders: got JSON number"},
		{"strip end", string(tokJSON(okModel, "", `{"type": "Sequence", "decoders": [{"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 0, "stop": 1}]}`)), nil, "stripping the end"},
		{"added no id", string(tokJSON(okModel, `[{"content": "<s>", "special": true}]`, "")), nil, "added_tokens[0]: id is missing"},
		{"added no content", string(tokJSON(okModel, `[{"id": 1, "special": true}]`, "")), nil, "added_tokens[0] (id 1): content is missing"},
		{"added id type", string(tokJSON(okModel, `[{"id": "1", "content": "x"}]`, "")), nil, "added_tokens.id: got JSON string"},
		{"added duplicate", string(tokJSON(okModel, `[{"id": 1, "content": "x"}, {"id": 1, "content": "y"}]`, "")), nil, `added_tokens gives id 1 to both "x" and "y"`},
		{"normalizer shape", string(tokJSON(okModel, "", "", `"normalizer": {"type": "Sequence", "normalizers": {}}`)), nil, "normalizer.normalizers: got JSON object"},
		{"eos_token unknown", string(tokJSON(okModel, "", "")), []vocab.Option{vocab.WithTokenizerConfig([]byte(`{"eos_token": "</s>"}`))}, `tokenizer_config.json: eos_token "</s>" is not a token of tokenizer.json`},
		{"eos_token number", string(tokJSON(okModel, "", "")), []vocab.Option{vocab.WithTokenizerConfig([]byte(`{"eos_token": 2}`))}, "tokenizer_config.json: eos_token must be a string"},
		{"tokenizer_config syntax", string(tokJSON(okModel, "", "")), []vocab.Option{vocab.WithTokenizerConfig([]byte(`{"eos_token": `))}, "tokenizer_config.json: invalid JSON"},
		{"eos_token_id range", string(tokJSON(okModel, "", "")), []vocab.Option{vocab.WithGenerationConfig([]byte(`{"eos_token_id": [0, 7]}`))}, "generation_config.json: eos_token_id: token id 7 is outside the tokenizer's ids 0..0"},
		{"eos_token_id type", string(tokJSON(okModel, "", "")), []vocab.Option{vocab.WithGenerationConfig([]byte(`{"eos_token_id": "x"}`))}, "generation_config.json: eos_token_id must be an id or a list of ids"},
		{"vocab_size bad", string(tokJSON(okModel, "", "")), []vocab.Option{vocab.WithModelConfig([]byte(`{"vocab_size": 0}`))}, "config.json: vocab_size 0 is not in"},
		{"model size small", string(tokJSON(`{"type": "BPE", "vocab": {"a": 0, "b": 1}}`, "", "")), []vocab.Option{vocab.WithModelSize(1)}, "model vocabulary size 1 is smaller than the 2 ids of tokenizer.json"},
		{"WithEOG unknown", string(tokJSON(okModel, "", "")), []vocab.Option{vocab.WithEOG("<eot>")}, `WithEOG: "<eot>" is not a token of tokenizer.json`},
		{"WithEOGIDs range", string(tokJSON(okModel, "", "")), []vocab.Option{vocab.WithEOGIDs(3)}, "WithEOGIDs: token id 3 is outside"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, err := vocab.Load([]byte(tc.json), tc.opts...)
			require.Error(t, err)
			assert.Nil(t, v)
			assert.Contains(t, err.Error(), tc.want)
			assert.True(t, strings.HasPrefix(err.Error(), "vocab: "), err.Error())
		})
	}
}

func TestLoadFileMissing(t *testing.T) {
	_, err := vocab.LoadFile(t.TempDir() + "/nope.json")
	assert.ErrorContains(t, err, "nope.json")
	dir := t.TempDir()
	bad := dir + "/tokenizer.json"
	require.NoError(t, writeFile(bad, `{"model": {"type": "BPE", "vocab": {"a": "x"}}}`))
	_, err = vocab.LoadFile(bad)
	assert.ErrorContains(t, err, bad+`: model.vocab["a"]`, "errors name the file")
}

// TestCache: the same inputs give the same *Vocab, also when loaded concurrently;
// different options give a different one.
func TestCache(t *testing.T) {
	data := tokJSON(bpeModel, "", byteLevelDec)
	first, err := vocab.Load(data)
	require.NoError(t, err)
	var wg sync.WaitGroup
	got := make([]*vocab.Vocab, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := vocab.Load(append([]byte{}, data...))
			assert.NoError(t, err)
			got[i] = v
			_ = v.TokenBytes(1)
			_, _ = v.TokenID(fmt.Sprint("a")) // the lazy index is built once, safely
		}()
	}
	wg.Wait()
	for _, v := range got {
		assert.Same(t, first, v)
	}
	fresh, err := vocab.Load(data, vocab.WithoutCache())
	require.NoError(t, err)
	assert.NotSame(t, first, fresh)
	other, err := vocab.Load(data, vocab.WithModelSize(20))
	require.NoError(t, err)
	assert.NotSame(t, first, other)
	assert.Equal(t, 20, other.ModelSize())
}

func TestKindString(t *testing.T) {
	for k, want := range map[vocab.Kind]string{vocab.KindByteLevel: "byte-level", vocab.KindSentencePiece: "sentencepiece",
		vocab.KindWordPiece: "wordpiece", vocab.KindPlain: "plain", vocab.Kind(0): "Kind(0)"} {
		assert.Equal(t, want, k.String())
	}
}
