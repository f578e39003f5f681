package sampling_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/sampling"
)

// greedyVariants are parameter sets for which the chain always ends on a maximal
// logit: Sample takes the argmax without running it.
func greedyVariants() map[string]func(*sampling.Params) {
	return map[string]func(*sampling.Params){
		"defaults, temp 0":          func(p *sampling.Params) {},
		"temp -1, top_k 1":          func(p *sampling.Params) { p.Temp = -1; p.TopK = 1 },
		"top_k 0, top_p 0, min_p 1": func(p *sampling.Params) { p.TopK = 0; p.TopP = 0; p.MinP = 1 },
		"top_n_sigma 1, min_keep 3": func(p *sampling.Params) { p.TopNSigma = 1; p.MinKeep = 3 },
		"xtc threshold above 0.5":   func(p *sampling.Params) { p.XTCProbability = 1; p.XTCThreshold = 0.6 },
		"penalties neutral":         func(p *sampling.Params) { p.PenaltyLastN = 64; p.PenaltyRepeat = 1 },
		"penalty window 0":          func(p *sampling.Params) { p.PenaltyLastN = 0; p.PenaltyRepeat = 1.5; p.PenaltyFreq = 1 },
		"dry base below 1":          func(p *sampling.Params) { p.DryMultiplier = 0.8; p.DryBase = 0.5 },
		"greedy sampler at the end": func(p *sampling.Params) { p.Greedy = true },
		"order: temperature first": func(p *sampling.Params) {
			p.Samplers = []sampling.SamplerType{sampling.SamplerTemperature, sampling.SamplerTopK, sampling.SamplerMinP}
		},
	}
}

func greedyParams(mod func(*sampling.Params), grammarFirst bool) sampling.Params {
	p := sampling.DefaultParams()
	p.Temp = 0
	p.Seed = 3
	p.NVocab = 3000
	p.NCtx = 512
	p.GrammarFirst = grammarFirst
	mod(&p)
	return p
}

// TestArgmaxPickEqualsChain: for every greedy parameter set, with and without a grammar
// (sample-then-check and grammar-first), the argmax pick and the chain itself (the same
// chain in a session made without the shortcut) choose the same tokens over a run of
// steps, with the same mask and resample counts. The logits have no ties.
func TestArgmaxPickEqualsChain(t *testing.T) {
	const vocab, steps = 3000, 120
	for name, mod := range greedyVariants() {
		for _, grammar := range []string{"none", "sample-then-check", "grammar-first"} {
			t.Run(name+"/"+grammar, func(t *testing.T) {
				p := greedyParams(mod, grammar == "grammar-first")
				require.True(t, p.PicksArgmax())
				var g1, g2 sampling.Grammar
				if grammar != "none" {
					// Every third step allows only a few tokens, so the first pick is often refused.
					var sets [][]int
					for i := 0; i < steps; i++ {
						if i%3 == 0 {
							sets = append(sets, []int{i, 7 * i % vocab, 2999, 1500 + i})
						} else {
							all := make([]int, vocab)
							for j := range all {
								all[j] = j
							}
							sets = append(sets, all)
						}
					}
					g1, g2 = newSetGrammar(sets...), newSetGrammar(sets...)
				}
				fast, _, err := sampling.NewSessionFromParams(p, g1)
				require.NoError(t, err)
				ch, _, err := sampling.NewChainFromParams(p)
				require.NoError(t, err)
				slow := sampling.NewSession(ch, g2, p.GrammarFirst)
				for step := 0; step < steps; step++ {
					logits := randomLogits(vocab, uint64(step)+1)
					a, err := fast.Sample(logits)
					require.NoError(t, err)
					b, err := slow.Sample(logits)
					require.NoError(t, err)
					require.Equalf(t, b, a, "step %d", step)
					require.Equal(t, logits[a], fast.Candidates().Data[0].Logit)
					require.NoError(t, fast.Accept(a))
					require.NoError(t, slow.Accept(b))
				}
				require.Equal(t, slow.Stats(), fast.Stats())
				if grammar == "sample-then-check" {
					require.Positive(t, fast.Stats().Resamples)
				}
			})
		}
	}
}

// TestArgmaxPickTiesAndErrors: equal maxima give the lowest id (transformers' argmax);
// a NaN or +Inf logit is the same error as on the chain; a grammar allowing nothing is
// ErrGrammarRejectsAll; -Inf logits (a banned end token) are never picked over finite
// ones, and an allowed set of -Inf logits alone gives its lowest id.
func TestArgmaxPickTiesAndErrors(t *testing.T) {
	p := greedyParams(func(*sampling.Params) {}, false)
	s, _, err := sampling.NewSessionFromParams(p, nil)
	require.NoError(t, err)
	logits := []float32{0, 1, 5, 2, 5, 5, -1}
	id, err := s.Sample(logits)
	require.NoError(t, err)
	require.Equal(t, 2, id)

	// Rows of every length up to 41 with many ties and -Inf values: the first maximum.
	sm := splitmix(9)
	for n := 1; n <= 41; n++ {
		for rep := 0; rep < 20; rep++ {
			row := make([]float32, n)
			want := 0
			for i := range row {
				row[i] = float32(sm.next()%4) - 1
				if row[i] < 0 {
					row[i] = float32(math.Inf(-1))
				}
				if row[i] > row[want] {
					want = i
				}
			}
			got, err := s.Sample(row)
			require.NoError(t, err)
			require.Equalf(t, want, got, "row %v", row)
		}
	}

	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1))} {
		row := []float32{0, 1, bad, 3}
		_, errFast := s.Sample(row)
		ch, _, err := sampling.NewChainFromParams(p)
		require.NoError(t, err)
		_, errSlow := sampling.NewSession(ch, nil, false).Sample(row)
		requireParamErr(t, errFast, "logits")
		require.Equal(t, errSlow.Error(), errFast.Error())
		require.Contains(t, errFast.Error(), "token 2")
	}

	neg := float32(math.Inf(-1))
	for _, gf := range []bool{false, true} {
		p := greedyParams(func(*sampling.Params) {}, gf)
		g := newSetGrammar([]int{1, 3}, []int{})
		s, _, err := sampling.NewSessionFromParams(p, g)
		require.NoError(t, err)
		id, err := s.Sample([]float32{9, neg, 4, neg, 8})
		require.NoError(t, err)
		require.Equal(t, 1, id)
		require.NoError(t, s.Accept(id))
		_, err = s.Sample([]float32{9, 0, 4, 1, 8})
		require.ErrorIs(t, err, sampling.ErrGrammarRejectsAll)

		// Ties among the allowed tokens: the lowest allowed id.
		s2, _, err := sampling.NewSessionFromParams(p, newSetGrammar([]int{4, 5}))
		require.NoError(t, err)
		id, err = s2.Sample([]float32{0, 1, 5, 2, 5, 5, -1})
		require.NoError(t, err)
		require.Equal(t, 4, id)
		// Only -Inf logits allowed: the lowest allowed id.
		s3, _, err := sampling.NewSessionFromParams(p, newSetGrammar([]int{4, 2}))
		require.NoError(t, err)
		id, err = s3.Sample([]float32{5, 1, neg, 3, neg})
		require.NoError(t, err)
		require.Equal(t, 2, id)
	}
}

// TestPicksArgmaxRefusesWhatMovesTheMaximum: each setting that can make the chain end
// elsewhere than on the maximum turns the shortcut off, and for each the chain indeed
// picks another token on some row (so the shortcut would be wrong, not merely slow).
func TestPicksArgmaxRefusesWhatMovesTheMaximum(t *testing.T) {
	row := []float32{4, 3.9, 1, 0, -1, -2, 0.5, 0.2}
	cases := map[string]func(*sampling.Params){
		"temperature":         func(p *sampling.Params) { p.Temp = 5; p.TopK = 0; p.TopP = 1; p.MinP = 0 },
		"dynamic temperature": func(p *sampling.Params) { p.DynatempRange = 6; p.TopK = 0; p.TopP = 1; p.MinP = 0 },
		"no temperature sampler": func(p *sampling.Params) {
			p.Samplers = []sampling.SamplerType{sampling.SamplerTopK}
			p.TopK = 0
		},
		"logit bias": func(p *sampling.Params) { p.LogitBias = []sampling.LogitBiasEntry{{Token: 2, Bias: 10}} },
		"typical":    func(p *sampling.Params) { p.TypP = 0.05; p.TopK = 0; p.TopP = 1; p.MinP = 0 },
		"xtc": func(p *sampling.Params) {
			p.XTCProbability = 1
			p.XTCThreshold = 0.1
			p.TopK = 0
			p.TopP = 1
			p.MinP = 0
		},
		"penalties":   func(p *sampling.Params) { p.PenaltyLastN = 8; p.PenaltyRepeat = 100 },
		"presence":    func(p *sampling.Params) { p.PenaltyLastN = 8; p.PenaltyPresent = 10 },
		"mirostat":    func(p *sampling.Params) { p.Mirostat = 2; p.Temp = 1 },
		"p_less only": func(p *sampling.Params) { p.Samplers = []sampling.SamplerType{sampling.SamplerPLess} },
	}
	for name, mod := range cases {
		t.Run(name, func(t *testing.T) {
			p := greedyParams(mod, false)
			p.NVocab = len(row)
			require.False(t, p.PicksArgmax())
			s, _, err := sampling.NewSessionFromParams(p, nil)
			require.NoError(t, err)
			require.NoError(t, s.Accept(0)) // history for the penalties
			other := false
			for i := 0; i < 200 && !other; i++ {
				id, err := s.Sample(row)
				require.NoError(t, err)
				other = id != 0
			}
			require.True(t, other, "the chain always picked the maximum")
		})
	}
}
