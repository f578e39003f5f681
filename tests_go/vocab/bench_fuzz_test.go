package vocab_test

import (
	"os"
	"strings"
	"testing"

	"github.com/tetherlm/tether/gocore/vocab"
	"github.com/tetherlm/tether/tests_go/internal/testdata"
)

func writeFile(path, text string) error { return os.WriteFile(path, []byte(text), 0o644) }

// BenchmarkLoad loads each real tokenizer (with its tokenizer_config.json) afresh,
// bypassing the cache. Targets: Llama-3 ≤ 300 ms, Gemma-3 ≤ 600 ms.
func BenchmarkLoad(b *testing.B) {
	for _, name := range testdata.Tokenizers {
		b.Run(name, func(b *testing.B) {
			data := testdata.ReadTokenizerFile(b, name, "tokenizer.json")
			cfg := testdata.ReadTokenizerFile(b, name, "tokenizer_config.json")
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := vocab.Load(data, vocab.WithTokenizerConfig(cfg), vocab.WithoutCache()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// FuzzLoad mutates small tokenizer.json and tokenizer_config.json files: Load must
// return a Vocab or an error, never panic (Load turns an internal panic into an
// "internal error", which fails here), and a loaded Vocab must be consistent.
func FuzzLoad(f *testing.F) {
	seeds := [][]byte{
		tokJSON(bpeModel, `[{"id": 7, "content": "<|im_end|>", "special": true}]`, byteLevelDec),
		tokJSON(spModel, `[{"id": 0, "content": "<unk>", "special": true}]`, llama2Dec,
			`"normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"}]}`),
		tokJSON(`{"type": "Unigram", "vocab": [["<unk>", 0.0], ["▁the", -1.5]]}`, "", `{"type": "Metaspace", "replacement": "▁"}`),
		tokJSON(`{"type": "WordPiece", "vocab": {"[UNK]": 0, "##lo": 1}}`, "", `{"type": "WordPiece", "prefix": "##"}`),
		tokJSON(`{"vocab": {"\"q\"": 0, "\ud83d\ude00": 2}, "merges": []}`, "", "null"),
	}
	for _, s := range seeds {
		f.Add(s, []byte(`{"eos_token": "<|im_end|>"}`))
		f.Add(s, []byte(nil))
	}
	f.Fuzz(func(t *testing.T, data, cfg []byte) {
		opts := []vocab.Option{vocab.WithoutCache()}
		if len(cfg) > 0 {
			opts = append(opts, vocab.WithTokenizerConfig(cfg))
		}
		v, err := vocab.Load(data, opts...)
		if err != nil {
			if strings.Contains(err.Error(), "internal error") {
				t.Fatalf("Load panicked: %v", err)
			}
			return
		}
		if v.Size() <= 0 || v.ModelSize() < v.Size() {
			t.Fatalf("sizes %d, %d", v.Size(), v.ModelSize())
		}
		for id := -1; id <= v.ModelSize(); id++ {
			b := v.TokenBytes(id)
			if v.IsSpecial(id) && len(b) > 0 {
				t.Fatalf("special id %d has bytes %q", id, b)
			}
			_ = v.Text(id)
			_ = v.IsEOG(id)
		}
		for _, id := range v.EOGTokens() {
			if !v.IsEOG(id) || id >= v.Size() {
				t.Fatalf("EOG id %d", id)
			}
		}
		_, _ = v.TokenID("a")
	})
}
