package sampling_test

import (
	"slices"
	"testing"
	"time"

	"github.com/tetherlm/tether/gocore/tokenmask"

	"github.com/tetherlm/tether/gocore/sampling"
	"github.com/tetherlm/tether/tests_go/internal/samplingbench"
)

const llama3Vocab = 128256

func benchRows(n int) [][]float32 {
	rows := make([][]float32, 8)
	for i := range rows {
		rows[i] = randomLogits(n, uint64(100+i))
	}
	return rows
}

// BenchmarkDefaultChain128k: llama.cpp's default chain (logit-bias, penalties, dry,
// top-n-sigma, top-k 40, typical, top-p 0.95, min-p 0.05, xtc, temperature 0.8, dist)
// over 128,256 candidates; one op = fill candidates from logits + sample + accept.
func BenchmarkDefaultChain128k(b *testing.B) {
	rows := benchRows(llama3Vocab)
	p := sampling.DefaultParams()
	p.Seed = 1
	s, _, err := sampling.NewSessionFromParams(p, nil)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 100; i++ { // warm up: buffers and penalty history at steady state
		id, _ := s.Sample(rows[i%len(rows)])
		_ = s.Accept(id)
	}
	ds := make([]time.Duration, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		id, err := s.Sample(rows[i%len(rows)])
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Accept(id); err != nil {
			b.Fatal(err)
		}
		ds[i] = time.Since(t0)
	}
	b.StopTimer()
	samplingbench.ReportP50(b, ds)
}

// BenchmarkSampler128k mirrors llama.cpp's test_perf: each sampler alone on 128,256
// fresh unsorted candidates.
func BenchmarkSampler128k(b *testing.B) {
	rows := benchRows(llama3Vocab)
	mk := map[string]func() sampling.Sampler{
		"top_k_40":      func() sampling.Sampler { s, _ := sampling.NewTopK(40); return s },
		"top_p_0.8":     func() sampling.Sampler { s, _ := sampling.NewTopP(0.8, 1); return s },
		"min_p_0.2":     func() sampling.Sampler { s, _ := sampling.NewMinP(0.2, 1); return s },
		"typical_0.5":   func() sampling.Sampler { s, _ := sampling.NewTypical(0.5, 1); return s },
		"xtc_1_0.1":     func() sampling.Sampler { s, _ := sampling.NewXTC(1, 0.1, 1, 1); return s },
		"top_n_sigma_1": func() sampling.Sampler { s, _ := sampling.NewTopNSigma(1); return s },
		"dist":          func() sampling.Sampler { return sampling.NewDist(1) },
		"fill_logits":   nil,
	}
	for _, name := range []string{"fill_logits", "top_k_40", "top_p_0.8", "min_p_0.2", "typical_0.5", "xtc_1_0.1", "top_n_sigma_1", "dist"} {
		b.Run(name, func(b *testing.B) {
			arr := sampling.NewCandidates(llama3Vocab)
			var s sampling.Sampler
			if mk[name] != nil {
				s = mk[name]()
			}
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if err := arr.SetLogits(rows[i%len(rows)]); err != nil {
					b.Fatal(err)
				}
				if s != nil {
					if err := s.Apply(arr); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// scanGrammar is a test grammar whose FillMask does what a grammar without a token trie
// or cache does (llama.cpp's llama_grammar_reject_candidates): it checks every token's
// bytes against the grammar state (here: the first byte against a byte class, then the
// rest of the token), so the mask costs O(vocabulary bytes). IsAllowed checks one token.
type scanGrammar struct {
	tokens [][]byte
	class  [256]bool
}

func (g *scanGrammar) allowed(tok []byte) bool {
	if len(tok) == 0 || !g.class[tok[0]] {
		return false
	}
	for _, c := range tok[1:] {
		if c == 0 { // a byte the state cannot take
			return false
		}
	}
	return true
}

func (g *scanGrammar) FillMask(mask tokenmask.Mask) error {
	clear(mask)
	for id, tok := range g.tokens {
		if g.allowed(tok) {
			mask[id/32] |= 1 << (id % 32)
		}
	}
	return nil
}

func (g *scanGrammar) IsAllowed(id int) (bool, error) {
	return id >= 0 && id < len(g.tokens) && g.allowed(g.tokens[id]), nil
}

func (g *scanGrammar) AcceptToken(int) error { return nil }

// newScanGrammar builds a 128,256-token vocabulary of 1..8-byte tokens where about a
// quarter of the tokens are allowed, including every token in mustAllow.
func newScanGrammar(mustAllow []int) *scanGrammar {
	s := splitmix(5)
	g := &scanGrammar{tokens: make([][]byte, llama3Vocab)}
	for c := 0; c < 256; c += 4 {
		g.class[c] = true
	}
	for i := range g.tokens {
		tok := make([]byte, 1+s.next()%8)
		for j := range tok {
			tok[j] = byte(1 + s.next()%255)
		}
		g.tokens[i] = tok
	}
	for _, id := range mustAllow {
		g.tokens[id][0] = 4
	}
	return g
}

// topIDs returns the ids of the n highest logits.
func topIDs(logits []float32, n int) []int {
	ids := make([]int, len(logits))
	for i := range ids {
		ids[i] = i
	}
	slices.SortFunc(ids, func(a, b int) int {
		switch {
		case logits[a] > logits[b]:
			return -1
		case logits[a] < logits[b]:
			return 1
		}
		return 0
	})
	return ids[:n]
}

// BenchmarkGrammar128k compares, with the default chain over 128,256 candidates and a
// first pick the grammar allows: sample-then-check (one IsAllowed) against
// mask-then-sample (full mask + -Inf on disallowed logits + chain). The grammar is
// scanGrammar (mask cost of a grammar engine without trie or cache); see
// tests_go/sampling/enginebench for the same comparison with gocore/engine.
func BenchmarkGrammar128k(b *testing.B) {
	rows := benchRows(llama3Vocab)
	var must []int
	for _, r := range rows {
		must = append(must, topIDs(r, 64)...)
	}
	samplingbench.GrammarModes(b, newScanGrammar(must), rows)
}

// TestDefaultChainAllocationFree: zero allocations per step in steady state.
func TestDefaultChainAllocationFree(t *testing.T) {
	rows := benchRows(llama3Vocab)
	p := sampling.DefaultParams()
	p.Seed = 1
	p.PenaltyRepeat = 1.1 // make penalties do work too
	p.DryMultiplier = 0.8
	p.NCtx = 4096
	s, _, err := sampling.NewSessionFromParams(p, newScanGrammar(nil))
	if err != nil {
		t.Fatal(err)
	}
	step := 0
	run := func() {
		id, err := s.Sample(rows[step%len(rows)])
		if err != nil {
			t.Fatal(err)
		}
		_ = s.Accept(id)
		step++
	}
	for i := 0; i < 200; i++ {
		run()
	}
	if a := testing.AllocsPerRun(50, run); a != 0 {
		t.Fatalf("%.1f allocations per step, want 0", a)
	}
}
