package sampling

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// ParamSpec describes one sampling parameter: llama.cpp's name (common_params_sampling,
// also the key of its server's JSON), the command-line flag llama.cpp gives it, other
// names accepted for it, and a one-line help.
type ParamSpec struct {
	Name    string   // llama.cpp's name: "top_k", "penalty_repeat", ...
	Flag    string   // llama.cpp's flag without dashes: "top-k", "repeat-penalty", ...
	Aliases []string // other accepted names (the server's and Python's spellings)
	Kind    string   // "int", "float", "uint32", "bool", "string", "strings", "bias"
	Help    string
	get     func(p *Params) string
	set     func(p *Params, v any) error
}

// ParamSpecs lists every parameter Params.Set accepts, in llama.cpp's --help order.
func ParamSpecs() []ParamSpec { return append([]ParamSpec(nil), paramSpecs...) }

func intSpec(name, flag, help string, f func(p *Params) *int, aliases ...string) ParamSpec {
	return ParamSpec{Name: name, Flag: flag, Aliases: aliases, Kind: "int", Help: help,
		get: func(p *Params) string { return strconv.Itoa(*f(p)) },
		set: func(p *Params, v any) error {
			n, err := asInt(name, v)
			if err == nil {
				*f(p) = n
			}
			return err
		}}
}

func floatSpec(name, flag, help string, f func(p *Params) *float32, aliases ...string) ParamSpec {
	return ParamSpec{Name: name, Flag: flag, Aliases: aliases, Kind: "float", Help: help,
		get: func(p *Params) string { return strconv.FormatFloat(float64(*f(p)), 'g', -1, 32) },
		set: func(p *Params, v any) error {
			x, err := asFloat(name, v)
			if err == nil {
				*f(p) = x
			}
			return err
		}}
}

var paramSpecs = []ParamSpec{
	{Name: "samplers", Flag: "samplers", Aliases: []string{"sampling_seq", "sampler_seq"}, Kind: "string",
		Help: "samplers in order, names separated by ';' (penalties;dry;top_n_sigma;top_k;typ_p;top_p;min_p;xtc;temperature) or letters (edskypmxt)",
		get: func(p *Params) string {
			if p.Samplers == nil {
				return FormatOrderNames(DefaultOrder)
			}
			return FormatOrderNames(p.Samplers)
		},
		set: func(p *Params, v any) error {
			var spec string
			switch x := v.(type) {
			case string:
				spec = x
			case []string:
				spec = strings.Join(x, ";")
			case []any:
				parts := make([]string, len(x))
				for i, e := range x {
					s, ok := e.(string)
					if !ok {
						return paramErr("samplers", v, "a list of sampler names")
					}
					parts[i] = s
				}
				spec = strings.Join(parts, ";")
			default:
				return paramErr("samplers", v, "a ';'-separated string or a list of sampler names")
			}
			order, err := ParseOrder(spec)
			if err == nil {
				p.Samplers = order
			}
			return err
		}},
	{Name: "seed", Flag: "seed", Kind: "uint32", Help: "random seed (4294967295 = a random seed)",
		get: func(p *Params) string { return strconv.FormatUint(uint64(p.Seed), 10) },
		set: func(p *Params, v any) error {
			n, err := asInt("seed", v)
			if err != nil {
				return err
			}
			if n == -1 {
				n = int(DefaultSeed)
			}
			if n < 0 || n > math.MaxUint32 {
				return paramErr("seed", v, "must be in [0, 4294967295] (or -1 for a random seed)")
			}
			p.Seed = uint32(n)
			return nil
		}},
	floatSpec("temp", "temp", "temperature (<= 0: keep only the most likely token)", func(p *Params) *float32 { return &p.Temp }, "temperature"),
	intSpec("top_k", "top-k", "top-k sampling (0 = off)", func(p *Params) *int { return &p.TopK }),
	floatSpec("top_p", "top-p", "top-p sampling (1.0 = off)", func(p *Params) *float32 { return &p.TopP }),
	floatSpec("min_p", "min-p", "min-p sampling (0.0 = off)", func(p *Params) *float32 { return &p.MinP }),
	floatSpec("top_n_sigma", "top-nsigma", "top-n-sigma sampling (<= 0 = off)", func(p *Params) *float32 { return &p.TopNSigma }, "top_nsigma"),
	floatSpec("xtc_probability", "xtc-probability", "XTC probability (0.0 = off)", func(p *Params) *float32 { return &p.XTCProbability }),
	floatSpec("xtc_threshold", "xtc-threshold", "XTC threshold (> 0.5 = off)", func(p *Params) *float32 { return &p.XTCThreshold }),
	floatSpec("typ_p", "typical", "locally typical sampling, parameter p (1.0 = off)", func(p *Params) *float32 { return &p.TypP }, "typical_p"),
	intSpec("penalty_last_n", "repeat-last-n", "last n tokens the penalties consider (0 = off, -1 = context size)", func(p *Params) *int { return &p.PenaltyLastN }, "repeat_last_n"),
	floatSpec("penalty_repeat", "repeat-penalty", "penalize repeated tokens (1.0 = off)", func(p *Params) *float32 { return &p.PenaltyRepeat }, "repeat_penalty"),
	floatSpec("penalty_present", "presence-penalty", "presence penalty (0.0 = off)", func(p *Params) *float32 { return &p.PenaltyPresent }, "presence_penalty"),
	floatSpec("penalty_freq", "frequency-penalty", "frequency penalty (0.0 = off)", func(p *Params) *float32 { return &p.PenaltyFreq }, "frequency_penalty"),
	floatSpec("dry_multiplier", "dry-multiplier", "DRY multiplier (0.0 = off)", func(p *Params) *float32 { return &p.DryMultiplier }),
	floatSpec("dry_base", "dry-base", "DRY base", func(p *Params) *float32 { return &p.DryBase }),
	intSpec("dry_allowed_length", "dry-allowed-length", "DRY: repetitions up to this length are not penalized", func(p *Params) *int { return &p.DryAllowedLength }),
	intSpec("dry_penalty_last_n", "dry-penalty-last-n", "DRY: last n tokens considered (0 = off, -1 = context size)", func(p *Params) *int { return &p.DryPenaltyLastN }),
	{Name: "dry_sequence_breakers", Flag: "dry-sequence-breaker", Kind: "strings",
		Help: `DRY sequence breakers (repeat the flag for several; "none" for none)`,
		get:  func(p *Params) string { return strconv.Quote(strings.Join(p.DrySequenceBreakers, ",")) },
		set: func(p *Params, v any) error {
			switch x := v.(type) {
			case []string:
				p.DrySequenceBreakers = append([]string{}, x...)
			case []any:
				p.DrySequenceBreakers = []string{}
				for _, e := range x {
					s, ok := e.(string)
					if !ok {
						return paramErr("dry_sequence_breakers", v, "a list of strings")
					}
					p.DrySequenceBreakers = append(p.DrySequenceBreakers, s)
				}
			case nil:
				p.DrySequenceBreakers = []string{}
			default:
				return paramErr("dry_sequence_breakers", v, "a list of strings")
			}
			return nil
		}},
	floatSpec("dynatemp_range", "dynatemp-range", "dynamic temperature range (0.0 = off)", func(p *Params) *float32 { return &p.DynatempRange }),
	floatSpec("dynatemp_exponent", "dynatemp-exp", "dynamic temperature exponent", func(p *Params) *float32 { return &p.DynatempExponent }),
	intSpec("mirostat", "mirostat", "Mirostat: 0 = off, 1 = Mirostat, 2 = Mirostat 2.0 (replaces the other samplers)", func(p *Params) *int { return &p.Mirostat }),
	floatSpec("mirostat_eta", "mirostat-lr", "Mirostat learning rate, parameter eta", func(p *Params) *float32 { return &p.MirostatEta }),
	floatSpec("mirostat_tau", "mirostat-ent", "Mirostat target entropy, parameter tau", func(p *Params) *float32 { return &p.MirostatTau }),
	intSpec("min_keep", "min-keep", "keep at least this many tokens in each truncating sampler (0 = off)", func(p *Params) *int { return &p.MinKeep }),
	{Name: "logit_bias", Flag: "logit-bias", Kind: "bias",
		Help: "bias a token's logit, TOKEN_ID(+|-)BIAS, e.g. 15043+1 (repeat the flag for several; -inf bans)",
		get:  func(p *Params) string { return fmt.Sprint(p.LogitBias) },
		set:  setLogitBias},
	{Name: "grammar_first", Flag: "grammar-first", Kind: "bool",
		Help: "apply the grammar to all candidates before sampling (default: sample, check the pick, resample if refused)",
		get:  func(p *Params) string { return strconv.FormatBool(p.GrammarFirst) },
		set: func(p *Params, v any) error {
			b, ok := v.(bool)
			if !ok {
				return paramErr("grammar_first", v, "must be true or false")
			}
			p.GrammarFirst = b
			return nil
		}},
	intSpec("n_ctx", "ctx-size", "context size (resolves penalty_last_n = -1; 0 = the model's)", func(p *Params) *int { return &p.NCtx }),
	intSpec("n_vocab", "n-vocab", "vocabulary size (0 = the model's)", func(p *Params) *int { return &p.NVocab }),
}

var specByName = func() map[string]*ParamSpec {
	m := map[string]*ParamSpec{}
	for i := range paramSpecs {
		s := &paramSpecs[i]
		m[s.Name] = s
		for _, a := range s.Aliases {
			m[a] = s
		}
	}
	return m
}()

// LookupParam finds a parameter by llama.cpp's name or one of its aliases.
func LookupParam(name string) (ParamSpec, bool) {
	s, ok := specByName[name]
	if !ok {
		return ParamSpec{}, false
	}
	return *s, true
}

// Get formats the parameter's value in p (for help texts and messages).
func (s ParamSpec) Get(p *Params) string { return s.get(p) }

// Set sets one parameter by llama.cpp's name (or an alias: "temperature",
// "repeat_penalty", "frequency_penalty", "typical_p", ...). value is what JSON decoding
// or Python gives: a number, a string, a bool, a list of strings (samplers,
// dry_sequence_breakers) or, for logit_bias, a map or list of [token, bias] pairs. The
// error is a *ParamError naming the parameter. Set checks the value's type; Validate
// (and NewChainFromParams) check ranges.
func (p *Params) Set(name string, value any) error {
	s, ok := specByName[name]
	if !ok {
		return paramErr(name, nil, "unknown sampling parameter (known: "+strings.Join(paramNames(), ", ")+")")
	}
	return s.set(p, value)
}

func paramNames() []string {
	names := make([]string, 0, len(paramSpecs))
	for _, s := range paramSpecs {
		names = append(names, s.Name)
	}
	sort.Strings(names)
	return names
}

func asInt(name string, v any) (int, error) {
	switch x := v.(type) {
	case int:
		return x, nil
	case int64:
		return int(x), nil
	case uint32:
		return int(x), nil
	case float64:
		if x != math.Trunc(x) || math.IsInf(x, 0) || math.IsNaN(x) || math.Abs(x) > 1<<53 {
			return 0, paramErr(name, v, "must be an integer")
		}
		return int(x), nil
	case string:
		n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
		if err != nil {
			return 0, paramErr(name, v, "must be an integer")
		}
		return int(n), nil
	case bool:
		return 0, paramErr(name, v, "must be an integer, not a bool")
	}
	return 0, paramErr(name, v, "must be an integer")
}

func asFloat(name string, v any) (float32, error) {
	switch x := v.(type) {
	case float64:
		return float32(x), nil
	case float32:
		return x, nil
	case int:
		return float32(x), nil
	case int64:
		return float32(x), nil
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 32)
		if err != nil {
			return 0, paramErr(name, v, "must be a number")
		}
		return float32(f), nil
	}
	return 0, paramErr(name, v, "must be a number")
}

// ParseLogitBias reads llama.cpp's --logit-bias value: TOKEN_ID(+|-)BIAS, e.g.
// "15043+1", "15043-1" or "15043-inf".
func ParseLogitBias(s string) (LogitBiasEntry, error) {
	i := strings.IndexAny(s, "+-")
	if i <= 0 {
		return LogitBiasEntry{}, paramErr("logit_bias", s, "expected TOKEN_ID(+|-)BIAS, e.g. 15043+1")
	}
	id, err := strconv.Atoi(s[:i])
	if err != nil || id < 0 {
		return LogitBiasEntry{}, paramErr("logit_bias", s, "the token id must be an integer >= 0")
	}
	b, err := strconv.ParseFloat(s[i:], 32)
	if err != nil {
		return LogitBiasEntry{}, paramErr("logit_bias", s, "the bias must be a number (or -inf)")
	}
	return LogitBiasEntry{Token: id, Bias: float32(b)}, nil
}

func setLogitBias(p *Params, v any) error {
	var out []LogitBiasEntry
	add := func(tok, bias any) error {
		id, err := asInt("logit_bias", tok)
		if err != nil || id < 0 {
			return paramErr("logit_bias", tok, "token ids must be integers >= 0")
		}
		var b float32
		switch x := bias.(type) {
		case bool:
			if x {
				return paramErr("logit_bias", bias, "true is not a bias (false bans the token)")
			}
			b = float32(math.Inf(-1)) // llama.cpp's server: false bans the token
		default:
			if b, err = asFloat("logit_bias", bias); err != nil {
				return err
			}
		}
		out = append(out, LogitBiasEntry{Token: id, Bias: b})
		return nil
	}
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if err := add(k, x[k]); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range x {
			pair, ok := e.([]any)
			if !ok || len(pair) != 2 {
				return paramErr("logit_bias", e, "each entry must be a [token_id, bias] pair")
			}
			if err := add(pair[0], pair[1]); err != nil {
				return err
			}
		}
	case []string:
		for _, s := range x {
			e, err := ParseLogitBias(s)
			if err != nil {
				return err
			}
			out = append(out, e)
		}
	case []LogitBiasEntry:
		out = append(out, x...)
	case nil:
	default:
		return paramErr("logit_bias", v, "a map {token_id: bias} or a list of [token_id, bias] pairs")
	}
	p.LogitBias = out
	return nil
}
