package sampling_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/sampling"
)

// TestGrammarSupportSampleThenCheckEqualsGrammarFirst: with a grammar that rejects the
// most likely tokens, sample-then-check (llama.cpp's default) and grammar-first produce
// only allowed tokens and the same set of possible tokens.
//
// This holds for top-k, min-p, typical-free chains and temperature: a token the
// unmasked chain keeps and the grammar allows is also kept by the masked chain. It does
// not hold in general for top-p (masking renormalizes, so the masked nucleus can be
// smaller), which is llama.cpp's behaviour too; the top-p case below uses p = 1.
func TestGrammarSupportSampleThenCheckEqualsGrammarFirst(t *testing.T) {
	const vocab = 64
	logits := make([]float32, vocab)
	for i := range logits {
		logits[i] = -0.05 * float32(i)
	}
	allowed := []int{1, 3, 5, 20, 21, 40, 63}
	cases := []struct {
		name string
		mod  func(*sampling.Params)
	}{
		{"top_k", func(p *sampling.Params) { p.TopK = 10; p.TopP = 1; p.MinP = 0 }},
		{"min_p", func(p *sampling.Params) { p.TopK = 0; p.TopP = 1; p.MinP = 0.3 }},
		{"default with top_p=1", func(p *sampling.Params) { p.TopP = 1 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			support := func(grammarFirst bool) map[int]int {
				p := sampling.DefaultParams()
				p.Seed = 7
				p.GrammarFirst = grammarFirst
				tc.mod(&p)
				s, _, err := sampling.NewSessionFromParams(p, newSetGrammar(allowed))
				require.NoError(t, err)
				seen := map[int]int{}
				for i := 0; i < 5000; i++ {
					id, err := s.Sample(logits)
					require.NoError(t, err)
					seen[id]++
				}
				if !grammarFirst {
					assert.Positive(t, s.Stats().Resamples, "the first pick must sometimes be rejected")
				}
				return seen
			}
			a, b := support(false), support(true)
			keys := func(m map[int]int) []int {
				var out []int
				for k := range m {
					out = append(out, k)
				}
				return out
			}
			assert.ElementsMatch(t, keys(b), keys(a))
			for id := range a {
				assert.Contains(t, allowed, id)
			}
		})
	}
}

// TestGrammarAcceptUpdatesGrammarAndHistory: Accept advances the grammar and every
// sampler's history; a token the grammar refuses changes nothing.
func TestGrammarAcceptUpdatesGrammarAndHistory(t *testing.T) {
	logits := []float32{0, 1, 2, 3, 4, 9, 5, 6}
	g := newSetGrammar([]int{0, 1, 2, 3, 4, 5, 6, 7})
	p := sampling.DefaultParams()
	p.Greedy = true
	p.PenaltyRepeat = 100 // a seen token drops out
	s, _, err := sampling.NewSessionFromParams(p, g)
	require.NoError(t, err)

	id, err := s.Sample(logits)
	require.NoError(t, err)
	require.Equal(t, 5, id)
	require.Error(t, s.Accept(99), "the grammar refuses 99")
	again, err := s.Sample(logits)
	require.NoError(t, err)
	require.Equal(t, 5, again, "a refused Accept leaves the history unchanged")

	require.NoError(t, s.Accept(id))
	assert.Equal(t, []int{5}, g.accepted)
	next, err := s.Sample(logits)
	require.NoError(t, err)
	assert.Equal(t, 7, next, "the penalties sampler saw token 5")
}

func TestGrammarSampleThenCheckMasksOnlyOnRejection(t *testing.T) {
	logits := []float32{0, 1, 2, 3, 4, 9, 5, 6}
	p := sampling.DefaultParams()
	p.Greedy = true

	s, _, err := sampling.NewSessionFromParams(p, newSetGrammar([]int{5, 6}))
	require.NoError(t, err)
	id, err := s.Sample(logits)
	require.NoError(t, err)
	assert.Equal(t, 5, id)
	assert.Equal(t, sampling.SessionStats{Steps: 1}, s.Stats(), "valid first pick: no mask")

	s, _, err = sampling.NewSessionFromParams(p, newSetGrammar([]int{0, 2}))
	require.NoError(t, err)
	id, err = s.Sample(logits)
	require.NoError(t, err)
	assert.Equal(t, 2, id)
	assert.Equal(t, sampling.SessionStats{Steps: 1, Resamples: 1, Masks: 1}, s.Stats())

	p.GrammarFirst = true
	s, _, err = sampling.NewSessionFromParams(p, newSetGrammar([]int{0, 2}))
	require.NoError(t, err)
	id, err = s.Sample(logits)
	require.NoError(t, err)
	assert.Equal(t, 2, id)
	assert.Equal(t, sampling.SessionStats{Steps: 1, Masks: 1}, s.Stats())

	s, _, err = sampling.NewSessionFromParams(p, newSetGrammar([]int{}))
	require.NoError(t, err)
	_, err = s.Sample(logits)
	assert.ErrorIs(t, err, sampling.ErrGrammarRejectsAll)
}
