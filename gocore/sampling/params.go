package sampling

import (
	"fmt"
	"slices"
)

// Params mirrors llama.cpp's common_params_sampling (same names in snake_case in the
// field docs, same defaults in DefaultParams), plus the few things tether needs to know
// that llama.cpp reads from the model (NVocab, NCtx) and the DRY breaker tokenization.
type Params struct {
	Seed             uint32  // seed; DefaultSeed = random
	MinKeep          int     // min_keep: 0 = none; applies to typ_p, top_p, min_p, xtc
	TopK             int     // top_k: <= 0 is the vocabulary size; must be >= 0 here
	TopP             float32 // top_p: 1.0 = off
	MinP             float32 // min_p: 0.0 = off
	XTCProbability   float32 // xtc_probability: 0.0 = off
	XTCThreshold     float32 // xtc_threshold: > 0.5 = off
	TypP             float32 // typ_p: typical_p, 1.0 = off
	Temp             float32 // temp: <= 0.0 samples greedily
	DynatempRange    float32 // dynatemp_range: 0.0 = off
	DynatempExponent float32 // dynatemp_exponent
	PenaltyLastN     int     // penalty_last_n: 0 = off, -1 = context size
	PenaltyRepeat    float32 // penalty_repeat: 1.0 = off
	PenaltyFreq      float32 // penalty_freq: 0.0 = off
	PenaltyPresent   float32 // penalty_present: 0.0 = off
	DryMultiplier    float32 // dry_multiplier: 0.0 = off
	DryBase          float32 // dry_base
	DryAllowedLength int     // dry_allowed_length
	DryPenaltyLastN  int     // dry_penalty_last_n: 0 = off, -1 = context size
	Mirostat         int     // mirostat: 0 = off, 1 = Mirostat, 2 = Mirostat 2.0
	TopNSigma        float32 // top_n_sigma: <= 0 = off
	MirostatTau      float32 // mirostat_tau: target entropy
	MirostatEta      float32 // mirostat_eta: learning rate
	// DrySequenceBreakers are text breakers (dry_sequence_breakers); they need DryVocab
	// (and ideally DryEncoder) to become token sequences, or use DryBreakerTokens.
	DrySequenceBreakers []string
	Samplers            []SamplerType    // samplers: the order; nil = DefaultOrder
	LogitBias           []LogitBiasEntry // logit_bias

	// tether additions
	NVocab           int        // vocabulary size (mirostat v1 and logit-bias bounds)
	NCtx             int        // context size: resolves penalty_last_n / dry_penalty_last_n = -1
	Greedy           bool       // end the chain with greedy instead of dist(seed)
	GrammarFirst     bool       // mask with the grammar before sampling (llama.cpp's grammar_first)
	DryVocab         TokenTexts // token bytes, to tokenize DrySequenceBreakers
	DryEncoder       Encoder    // text -> token ids for breaker tails (nil: greedy from DryVocab)
	DryBreakerTokens [][]int    // pre-tokenized breakers (head first); overrides the text ones
}

// DefaultParams returns llama.cpp's defaults (common_params_sampling).
func DefaultParams() Params {
	return Params{
		Seed:                DefaultSeed,
		MinKeep:             0,
		TopK:                40,
		TopP:                0.95,
		MinP:                0.05,
		XTCProbability:      0.00,
		XTCThreshold:        0.10,
		TypP:                1.00,
		Temp:                0.80,
		DynatempRange:       0.00,
		DynatempExponent:    1.00,
		PenaltyLastN:        64,
		PenaltyRepeat:       1.00,
		PenaltyFreq:         0.00,
		PenaltyPresent:      0.00,
		DryMultiplier:       0.0,
		DryBase:             1.75,
		DryAllowedLength:    2,
		DryPenaltyLastN:     -1,
		Mirostat:            0,
		TopNSigma:           -1.00,
		MirostatTau:         5.00,
		MirostatEta:         0.10,
		DrySequenceBreakers: append([]string(nil), DefaultDRYSequenceBreakers...),
		Samplers:            append([]SamplerType(nil), DefaultOrder...),
	}
}

// Validate checks every parameter and returns the first problem as a *ParamError.
func (p *Params) Validate() error {
	checks := []error{
		checkNonNeg("min_keep", p.MinKeep),
		checkNonNeg("top_k", p.TopK),
		checkRange("top_p", p.TopP, 0, 1),
		checkFinite("min_p", p.MinP),
		checkRange("xtc_probability", p.XTCProbability, 0, 1),
		checkRange("xtc_threshold", p.XTCThreshold, 0, 1),
		checkRange("typ_p", p.TypP, 0, 1),
		checkFinite("temp", p.Temp),
		checkFinite("dynatemp_range", p.DynatempRange),
		checkFinite("dynatemp_exponent", p.DynatempExponent),
		checkFinite("penalty_repeat", p.PenaltyRepeat),
		checkFinite("penalty_freq", p.PenaltyFreq),
		checkFinite("penalty_present", p.PenaltyPresent),
		checkFinite("dry_multiplier", p.DryMultiplier),
		checkFinite("dry_base", p.DryBase),
		checkNonNeg("dry_allowed_length", p.DryAllowedLength),
		checkFinite("top_n_sigma", p.TopNSigma),
		checkFinite("mirostat_tau", p.MirostatTau),
		checkFinite("mirostat_eta", p.MirostatEta),
		checkNonNeg("n_vocab", p.NVocab),
		checkNonNeg("n_ctx", p.NCtx),
	}
	for _, err := range checks {
		if err != nil {
			return err
		}
	}
	if p.MinP < 0 {
		return paramErr("min_p", p.MinP, "must be >= 0")
	}
	if p.PenaltyLastN < -1 {
		return paramErr("penalty_last_n", p.PenaltyLastN, "must be >= -1 (-1 = context size, 0 = off)")
	}
	if p.PenaltyLastN == -1 && p.NCtx <= 0 {
		return paramErr("penalty_last_n", -1, "-1 means the context size: set NCtx")
	}
	if p.DryPenaltyLastN < -1 {
		return paramErr("dry_penalty_last_n", p.DryPenaltyLastN, "must be >= -1 (-1 = context size, 0 = off)")
	}
	if p.Mirostat < 0 || p.Mirostat > 2 {
		return paramErr("mirostat", p.Mirostat, "must be 0 (off), 1 or 2")
	}
	if p.Mirostat == 1 && p.NVocab <= 0 {
		return paramErr("n_vocab", p.NVocab, "mirostat 1 needs the vocabulary size")
	}
	return nil
}

// PicksArgmax reports whether the chain NewChainFromParams builds from p always ends on
// a candidate of highest logit (greedy decoding), so that a Session may take the argmax
// without running it: no mirostat and no logit bias; the temperature sampler in the
// order, with temp <= 0 and no dynamic-temperature range (it then keeps only a maximal
// logit); and every sampler in the order either keeps the maximum in place (top_k,
// top_p, min_p up to 1, top_n_sigma) or is off (penalties, DRY, typical, XTC;
// p_less is never taken for one).
func (p Params) PicksArgmax() bool {
	if p.Mirostat != 0 || len(p.LogitBias) > 0 || p.Temp > 0 || p.DynatempRange > 0 {
		return false
	}
	order := p.Samplers
	if order == nil {
		order = DefaultOrder
	}
	temp := false
	for _, t := range order {
		switch t {
		case SamplerTemperature:
			temp = true
		case SamplerTopK, SamplerTopP, SamplerTopNSigma:
		case SamplerMinP:
			if p.MinP > 1 {
				return false
			}
		case SamplerPenalties:
			if p.PenaltyLastN != 0 && (p.PenaltyRepeat != 1 || p.PenaltyFreq != 0 || p.PenaltyPresent != 0) {
				return false
			}
		case SamplerDRY:
			if p.DryMultiplier != 0 && p.DryBase >= 1 && p.DryPenaltyLastN != 0 {
				return false
			}
		case SamplerTypicalP:
			if p.TypP < 1 {
				return false
			}
		case SamplerXTC:
			if p.XTCProbability > 0 && p.XTCThreshold <= 0.5 {
				return false
			}
		default:
			return false
		}
	}
	return temp
}

// NewChainFromParams builds llama.cpp's chain (common_sampler_init): logit-bias first,
// then the samplers in p.Samplers order and dist (or greedy) last; with mirostat 1 or 2,
// temperature and the mirostat sampler replace everything after logit-bias. It returns
// warnings about questionable settings (see OrderWarnings); they are not errors.
func NewChainFromParams(p Params) (*Chain, []string, error) {
	if err := p.Validate(); err != nil {
		return nil, nil, err
	}
	order := p.Samplers
	if order == nil {
		order = DefaultOrder
	}
	var warns []string
	ch := NewChain()
	lb, err := NewLogitBias(p.NVocab, p.LogitBias)
	if err != nil {
		return nil, nil, err
	}
	ch.Add(lb)

	if p.Mirostat != 0 {
		if p.Samplers != nil && !slices.Equal(p.Samplers, DefaultOrder) {
			warns = append(warns, "mirostat replaces the sampler chain: the samplers order is ignored")
		}
		t, err := NewTemp(p.Temp)
		if err != nil {
			return nil, nil, err
		}
		ch.Add(t)
		if p.Mirostat == 1 {
			m, err := NewMirostat(p.NVocab, p.Seed, p.MirostatTau, p.MirostatEta, 100)
			if err != nil {
				return nil, nil, err
			}
			ch.Add(m)
		} else {
			m, err := NewMirostatV2(p.Seed, p.MirostatTau, p.MirostatEta)
			if err != nil {
				return nil, nil, err
			}
			ch.Add(m)
		}
		return ch, warns, nil
	}

	warns = append(warns, OrderWarnings(order)...)
	for _, t := range order {
		s, w, err := p.samplerFor(t)
		if err != nil {
			return nil, nil, err
		}
		warns = append(warns, w...)
		ch.Add(s)
	}
	if p.Greedy {
		ch.Add(NewGreedy())
	} else {
		ch.Add(NewDist(p.Seed))
	}
	return ch, warns, nil
}

func (p *Params) samplerFor(t SamplerType) (Sampler, []string, error) {
	switch t {
	case SamplerPenalties:
		lastN := p.PenaltyLastN
		if lastN == -1 {
			lastN = p.NCtx
		}
		s, err := NewPenalties(lastN, p.PenaltyRepeat, p.PenaltyFreq, p.PenaltyPresent)
		return s, nil, err
	case SamplerDRY:
		var warns []string
		breakers := p.DryBreakerTokens
		enabled := p.DryMultiplier != 0 && p.DryBase >= 1 && p.DryPenaltyLastN != 0
		if breakers == nil && enabled && len(p.DrySequenceBreakers) > 0 {
			if p.DryVocab == nil {
				warns = append(warns, "dry_sequence_breakers ignored: no vocabulary to tokenize them (set DryVocab or DryBreakerTokens)")
			} else {
				var err error
				breakers, err = DRYBreakersFromText(p.DryVocab, p.DryEncoder, p.DrySequenceBreakers)
				if err != nil {
					return nil, nil, err
				}
			}
		}
		s, err := NewDRY(DRYParams{Multiplier: p.DryMultiplier, Base: p.DryBase,
			AllowedLength: p.DryAllowedLength, PenaltyLastN: p.DryPenaltyLastN, ContextSize: p.NCtx}, breakers)
		return s, warns, err
	case SamplerTopNSigma:
		s, err := NewTopNSigma(p.TopNSigma)
		return s, nil, err
	case SamplerTopK:
		s, err := NewTopK(p.TopK)
		return s, nil, err
	case SamplerTypicalP:
		s, err := NewTypical(p.TypP, p.MinKeep)
		return s, nil, err
	case SamplerTopP:
		s, err := NewTopP(p.TopP, p.MinKeep)
		return s, nil, err
	case SamplerMinP:
		s, err := NewMinP(p.MinP, p.MinKeep)
		return s, nil, err
	case SamplerXTC:
		s, err := NewXTC(p.XTCProbability, p.XTCThreshold, p.MinKeep, p.Seed)
		return s, nil, err
	case SamplerTemperature:
		s, err := NewTempExt(p.Temp, p.DynatempRange, p.DynatempExponent)
		return s, nil, err
	case SamplerPLess:
		return NewPLess(), nil, nil
	}
	return nil, nil, paramErr("samplers", fmt.Sprint(t), "unknown sampler type")
}
