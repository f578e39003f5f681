// Package enginebench_test measures grammar-aware sampling with the real grammar engine:
// gocore/engine's Matcher on llama.cpp's json.gbnf over the 128,256-token Llama-3
// vocabulary. It lives apart from tests_go/sampling so that the sampler's own tests do
// not depend on the engine, gbnf and vocab packages.
package enginebench_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/tetherlm/tether/gocore/engine"
	"github.com/tetherlm/tether/gocore/gbnf"
	"github.com/tetherlm/tether/gocore/sampling"
	"github.com/tetherlm/tether/gocore/vocab"
	"github.com/tetherlm/tether/tests_go/internal/samplingbench"
)

var _ sampling.Grammar = (*engine.Matcher)(nil) // the engine satisfies the interface

// jsonMatcher returns a matcher for json.gbnf over Llama-3, after `{"a": ` (about 1,300
// tokens allowed: every JSON value start), or skips when the data is not at hand.
func jsonMatcher(b *testing.B) (*engine.Matcher, int) {
	b.Helper()
	_, file, _, _ := runtime.Caller(0)
	repo := filepath.Join(filepath.Dir(file), "..", "..", "..")
	cases := filepath.Join(repo, "..", "shared", "conformance", "llamacpp_cases.json")
	if d := os.Getenv("TETHER_SHARED"); d != "" {
		cases = filepath.Join(d, "conformance", "llamacpp_cases.json")
	}
	data, err := os.ReadFile(cases)
	if err != nil {
		b.Skip("llamacpp_cases.json not found (set TETHER_SHARED)")
	}
	var doc struct {
		GrammarFiles []struct {
			Name    string `json:"name"`
			Grammar string `json:"grammar"`
		} `json:"grammar_files"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		b.Fatal(err)
	}
	var src string
	for _, g := range doc.GrammarFiles {
		if g.Name == "json.gbnf" {
			src = g.Grammar
		}
	}
	modcache := os.Getenv("GOMODCACHE")
	if modcache == "" {
		out, err := exec.Command("go", "env", "GOMODCACHE").Output()
		if err != nil {
			b.Skip("no GOMODCACHE")
		}
		modcache = strings.TrimSpace(string(out))
	}
	tok := filepath.Join(modcache, "github.com", "daulet", "tokenizers@v1.22.1", "test", "data", "Meta-Llama-3-8B-Instruct.json")
	v, err := vocab.LoadFile(tok)
	if err != nil {
		b.Skipf("Llama-3 tokenizer not available: %v", err)
	}
	g, err := gbnf.Parse(src)
	if err != nil {
		b.Fatal(err)
	}
	eg, err := engine.Compile(g, v)
	if err != nil {
		b.Fatal(err)
	}
	m := eg.NewMatcher()
	if err := m.AcceptBytes([]byte(`{"a": `)); err != nil {
		b.Fatal(err)
	}
	return m, v.Size()
}

func logitsFavoring(n int, favored []int, seed uint64) []float32 {
	s := seed
	out := make([]float32, n)
	for i := range out {
		s += 0x9e3779b97f4a7c15
		z := s
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		z ^= z >> 31
		out[i] = float32(z>>40)/float32(1<<24)*6 - 3
	}
	for i, id := range favored {
		out[id] = 12 - float32(i)*0.1
	}
	return out
}

// BenchmarkEngineGrammar128k: default chain, 128,256 candidates, first pick valid.
func BenchmarkEngineGrammar128k(b *testing.B) {
	m, size := jsonMatcher(b)
	allowed, err := m.AllowedTokens(nil)
	if err != nil {
		b.Fatal(err)
	}
	rows := make([][]float32, 8)
	for i := range rows {
		rows[i] = logitsFavoring(size, allowed[i*8:i*8+20], uint64(i+1))
	}
	samplingbench.GrammarModes(b, m, rows)
}
