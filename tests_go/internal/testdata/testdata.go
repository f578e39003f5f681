// Package testdata finds the data files tether's Go tests use: the real Hugging Face
// tokenizers that `make setup` fetches and the shared conformance vectors.
package testdata

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/tetherlm/tether/gocore/vocab"
)

// Tokenizers are the test tokenizers `make setup` fetches, by directory name.
var Tokenizers = []string{"llama3", "llama2", "qwen3", "gemma3"}

// ModuleRoot is the root of the tether module (where go.mod is).
func ModuleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
}

// TokenizerDir is the folder holding the test tokenizers: $TETHER_TOKENIZERS, or
// build/tokenizers in the module.
func TokenizerDir() string {
	if d := os.Getenv("TETHER_TOKENIZERS"); d != "" {
		return d
	}
	return filepath.Join(ModuleRoot(), "build", "tokenizers")
}

// TokenizerFile is the path of file (e.g. "tokenizer.json") of tokenizer name
// (e.g. "llama3"). A missing file fails the test: these tests never skip.
func TokenizerFile(t testing.TB, name, file string) string {
	t.Helper()
	p := filepath.Join(TokenizerDir(), name, file)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("test tokenizer missing (%v); run `make setup` to fetch it", err)
	}
	return p
}

var (
	vocabMu sync.Mutex
	vocabs  = map[string]*vocab.Vocab{}
)

// Vocab is the real vocabulary of test tokenizer name (e.g. "llama3"), loaded
// once per test binary and shared (a Vocab is immutable).
func Vocab(t testing.TB, name string) *vocab.Vocab {
	t.Helper()
	path := TokenizerFile(t, name, "tokenizer.json")
	vocabMu.Lock()
	defer vocabMu.Unlock()
	if v := vocabs[name]; v != nil {
		return v
	}
	v, err := vocab.LoadFile(path)
	if err != nil {
		t.Fatalf("loading test tokenizer %s: %v", name, err)
	}
	vocabs[name] = v
	return v
}

// ReadTokenizerFile reads TokenizerFile(t, name, file).
func ReadTokenizerFile(t testing.TB, name, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(TokenizerFile(t, name, file))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Shared is the shared folder beside the checkout (../shared), or $TETHER_SHARED.
func Shared(t testing.TB, rel string) string {
	t.Helper()
	base := os.Getenv("TETHER_SHARED")
	if base == "" {
		base = filepath.Join(ModuleRoot(), "..", "shared")
	}
	p := filepath.Join(base, rel)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("shared test data missing: %v", err)
	}
	return p
}

// SharedJSON decodes the JSON file rel of the shared folder (see Shared) into v.
func SharedJSON(t testing.TB, rel string, v any) {
	t.Helper()
	data, err := os.ReadFile(Shared(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
}
