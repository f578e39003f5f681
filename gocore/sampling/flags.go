package sampling

import (
	"flag"
	"strconv"
)

// RegisterFlags defines one command-line flag per parameter of ParamSpecs on fs, with
// llama.cpp's flag names (--top-k, --repeat-penalty, --dry-multiplier,
// --dry-sequence-breaker, --xtc-probability, --mirostat-lr, --samplers, ...) and
// p's current values as defaults; parsing writes into p. --sampling-seq is the
// one-letter form of --samplers; --dry-sequence-breaker and --logit-bias repeat (the
// first --dry-sequence-breaker replaces the defaults; "none" clears them).
func RegisterFlags(fs *flag.FlagSet, p *Params) {
	for i := range paramSpecs {
		s := &paramSpecs[i]
		fs.Var(&paramFlag{p: p, spec: s}, s.Flag, s.Help)
		if s.Name == "samplers" {
			fs.Var(&paramFlag{p: p, spec: s}, "sampling-seq", "the sampler order in llama.cpp's one-letter form, e.g. edskypmxt (same as --samplers)")
		}
	}
}

// paramFlag is a flag.Value writing one parameter of a Params.
type paramFlag struct {
	p    *Params
	spec *ParamSpec
	seen bool
}

// String shows the current value (the default, when flag records it).
func (f *paramFlag) String() string {
	if f == nil || f.p == nil {
		return ""
	}
	return f.spec.get(f.p)
}

// Set parses one occurrence of the flag.
func (f *paramFlag) Set(s string) error {
	switch f.spec.Kind {
	case "strings":
		if !f.seen {
			f.p.DrySequenceBreakers = []string{}
		}
		f.seen = true
		if s != "none" {
			f.p.DrySequenceBreakers = append(f.p.DrySequenceBreakers, s)
		}
		return nil
	case "bias":
		e, err := ParseLogitBias(s)
		if err != nil {
			return err
		}
		f.p.LogitBias = append(f.p.LogitBias, e)
		return nil
	case "bool":
		b, err := strconv.ParseBool(s)
		if err != nil {
			return paramErr(f.spec.Name, s, "must be true or false")
		}
		f.p.GrammarFirst = b
		return nil
	}
	return f.p.Set(f.spec.Name, s)
}

// IsBoolFlag lets --grammar-first go without a value.
func (f *paramFlag) IsBoolFlag() bool { return f.spec.Kind == "bool" }
