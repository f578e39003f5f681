package sampling_test

import (
	"flag"
	"io"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/sampling"
)

func TestParamsSetByLlamaCppNames(t *testing.T) {
	cases := []struct {
		name  string
		value any
		check func(p sampling.Params) bool
	}{
		{"top_k", float64(7), func(p sampling.Params) bool { return p.TopK == 7 }},
		{"top_k", "9", func(p sampling.Params) bool { return p.TopK == 9 }},
		{"temp", 0.5, func(p sampling.Params) bool { return p.Temp == 0.5 }},
		{"temperature", 0.25, func(p sampling.Params) bool { return p.Temp == 0.25 }},
		{"repeat_penalty", 1.1, func(p sampling.Params) bool { return p.PenaltyRepeat == float32(1.1) }},
		{"penalty_repeat", 1.2, func(p sampling.Params) bool { return p.PenaltyRepeat == float32(1.2) }},
		{"frequency_penalty", 0.3, func(p sampling.Params) bool { return p.PenaltyFreq == float32(0.3) }},
		{"presence_penalty", 0.4, func(p sampling.Params) bool { return p.PenaltyPresent == float32(0.4) }},
		{"repeat_last_n", float64(-1), func(p sampling.Params) bool { return p.PenaltyLastN == -1 }},
		{"typical_p", 0.9, func(p sampling.Params) bool { return p.TypP == float32(0.9) }},
		{"top_n_sigma", 1.5, func(p sampling.Params) bool { return p.TopNSigma == 1.5 }},
		{"xtc_probability", 0.5, func(p sampling.Params) bool { return p.XTCProbability == 0.5 }},
		{"dry_multiplier", 0.8, func(p sampling.Params) bool { return p.DryMultiplier == float32(0.8) }},
		{"dry_sequence_breakers", []any{"\n", "###"}, func(p sampling.Params) bool {
			return len(p.DrySequenceBreakers) == 2 && p.DrySequenceBreakers[1] == "###"
		}},
		{"mirostat", float64(2), func(p sampling.Params) bool { return p.Mirostat == 2 }},
		{"mirostat_tau", 3.0, func(p sampling.Params) bool { return p.MirostatTau == 3 }},
		{"seed", float64(42), func(p sampling.Params) bool { return p.Seed == 42 }},
		{"seed", float64(-1), func(p sampling.Params) bool { return p.Seed == sampling.DefaultSeed }},
		{"samplers", "top_k;temperature", func(p sampling.Params) bool {
			return len(p.Samplers) == 2 && p.Samplers[0] == sampling.SamplerTopK
		}},
		{"samplers", []any{"min_p", "temp"}, func(p sampling.Params) bool {
			return len(p.Samplers) == 2 && p.Samplers[1] == sampling.SamplerTemperature
		}},
		{"samplers", "kt", func(p sampling.Params) bool { return len(p.Samplers) == 2 }},
		{"logit_bias", map[string]any{"5": 1.5, "7": false}, func(p sampling.Params) bool {
			return len(p.LogitBias) == 2 && p.LogitBias[0] == sampling.LogitBiasEntry{Token: 5, Bias: 1.5} &&
				math.IsInf(float64(p.LogitBias[1].Bias), -1)
		}},
		{"logit_bias", []any{[]any{float64(3), -2.0}}, func(p sampling.Params) bool {
			return len(p.LogitBias) == 1 && p.LogitBias[0] == sampling.LogitBiasEntry{Token: 3, Bias: -2}
		}},
		{"grammar_first", true, func(p sampling.Params) bool { return p.GrammarFirst }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := sampling.DefaultParams()
			require.NoError(t, p.Set(tc.name, tc.value))
			assert.True(t, tc.check(p), "%+v", p)
		})
	}
}

func TestParamsSetErrorsNameTheParameter(t *testing.T) {
	cases := []struct {
		name  string
		value any
	}{
		{"top_k", 1.5},
		{"top_k", "many"},
		{"top_k", true},
		{"temp", "hot"},
		{"seed", float64(-2)},
		{"samplers", "top_k;bogus"},
		{"samplers", float64(3)},
		{"logit_bias", "x"},
		{"logit_bias", []any{[]any{"a", 1.0}}},
		{"grammar_first", "yes"},
		{"no_such_param", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := sampling.DefaultParams()
			requireParamErr(t, p.Set(tc.name, tc.value), tc.name)
		})
	}
}

func TestParseLogitBiasLikeLlamaCpp(t *testing.T) {
	for in, want := range map[string]sampling.LogitBiasEntry{
		"15043+1":    {Token: 15043, Bias: 1},
		"15043-1":    {Token: 15043, Bias: -1},
		"7+0.5":      {Token: 7, Bias: 0.5},
		"2-inf":      {Token: 2, Bias: float32(math.Inf(-1))},
		"0-1.25e+00": {Token: 0, Bias: -1.25},
	} {
		got, err := sampling.ParseLogitBias(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "+1", "abc+1", "5", "5+x", "-3+1"} {
		_, err := sampling.ParseLogitBias(bad)
		requireParamErr(t, err, "logit_bias")
	}
}

func TestRegisterFlagsCoversEveryParameter(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	p := sampling.DefaultParams()
	sampling.RegisterFlags(fs, &p)
	for _, s := range sampling.ParamSpecs() {
		f := fs.Lookup(s.Flag)
		require.NotNil(t, f, "no flag for %s", s.Name)
		assert.Equal(t, s.Get(&p), f.DefValue, "default of --%s", s.Flag)
	}
	for _, name := range []string{"dry-multiplier", "dry-sequence-breaker", "xtc-probability", "mirostat",
		"mirostat-lr", "mirostat-ent", "top-nsigma", "typical", "repeat-last-n", "frequency-penalty",
		"presence-penalty", "dynatemp-range", "dynatemp-exp", "min-keep", "logit-bias", "samplers",
		"sampling-seq", "grammar-first", "seed", "temp", "top-k", "top-p", "min-p"} {
		assert.NotNil(t, fs.Lookup(name), "--%s (llama.cpp's name)", name)
	}
	require.NoError(t, fs.Parse([]string{"--top-k", "5", "--dry-sequence-breaker", "\n", "--dry-sequence-breaker", "###",
		"--logit-bias", "3+1", "--logit-bias", "4-inf", "--sampling-seq", "kt", "--grammar-first", "--seed", "9",
		"--repeat-penalty", "1.3"}))
	assert.Equal(t, 5, p.TopK)
	assert.Equal(t, []string{"\n", "###"}, p.DrySequenceBreakers, "the first breaker flag replaces the defaults")
	assert.Len(t, p.LogitBias, 2)
	assert.Equal(t, []sampling.SamplerType{sampling.SamplerTopK, sampling.SamplerTemperature}, p.Samplers)
	assert.True(t, p.GrammarFirst)
	assert.Equal(t, uint32(9), p.Seed)
	assert.Equal(t, float32(1.3), p.PenaltyRepeat)

	p2 := sampling.DefaultParams()
	fs2 := flag.NewFlagSet("t", flag.ContinueOnError)
	fs2.SetOutput(io.Discard)
	sampling.RegisterFlags(fs2, &p2)
	require.NoError(t, fs2.Parse([]string{"--dry-sequence-breaker", "none"}))
	assert.Empty(t, p2.DrySequenceBreakers)
	err := fs2.Parse([]string{"--top-p", "abc"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "top_p")
}
