package sampling

import (
	"fmt"
	"strings"
)

// Chain applies samplers in order (llama_sampler_chain). It is itself a Sampler.
type Chain struct {
	samplers []Sampler
}

// NewChain returns a chain of the given samplers, applied in order.
func NewChain(samplers ...Sampler) *Chain {
	return &Chain{samplers: append([]Sampler(nil), samplers...)}
}

// Add appends a sampler.
func (ch *Chain) Add(s Sampler) { ch.samplers = append(ch.samplers, s) }

// Samplers returns the samplers in order (the slice is the chain's own: do not modify).
func (ch *Chain) Samplers() []Sampler { return ch.samplers }

// Name returns "chain".
func (*Chain) Name() string { return "chain" }

// String describes the chain like llama.cpp's common_sampler_print:
// "logits -> logit-bias -> ... -> dist".
func (ch *Chain) String() string {
	var b strings.Builder
	b.WriteString("logits")
	for _, s := range ch.samplers {
		b.WriteString(" -> ")
		b.WriteString(s.Name())
	}
	return b.String()
}

// Apply runs every sampler in order, stopping at the first error.
func (ch *Chain) Apply(c *Candidates) error {
	for _, s := range ch.samplers {
		if err := s.Apply(c); err != nil {
			return err
		}
	}
	return nil
}

// Accept tells every sampler which token was chosen.
func (ch *Chain) Accept(id int) {
	for _, s := range ch.samplers {
		s.Accept(id)
	}
}

// Reset resets every sampler.
func (ch *Chain) Reset() {
	for _, s := range ch.samplers {
		s.Reset()
	}
}

// Clone returns a deep copy.
func (ch *Chain) Clone() Sampler { return ch.clone() }

func (ch *Chain) clone() *Chain {
	cp := &Chain{samplers: make([]Sampler, len(ch.samplers))}
	for i, s := range ch.samplers {
		cp.samplers[i] = s.Clone()
	}
	return cp
}

// SamplerType names a configurable step of the chain (llama.cpp's common_sampler_type).
type SamplerType int

// The configurable samplers, in llama.cpp's default order.
const (
	SamplerPenalties SamplerType = iota + 1
	SamplerDRY
	SamplerTopNSigma
	SamplerTopK
	SamplerTypicalP
	SamplerTopP
	SamplerMinP
	SamplerXTC
	SamplerTemperature
	SamplerPLess // not in llama.cpp's common order spec; tether accepts "p_less"
)

var samplerTypeInfo = map[SamplerType]struct {
	name   string
	letter byte
}{
	SamplerPenalties:   {"penalties", 'e'},
	SamplerDRY:         {"dry", 'd'},
	SamplerTopNSigma:   {"top_n_sigma", 's'},
	SamplerTopK:        {"top_k", 'k'},
	SamplerTypicalP:    {"typ_p", 'y'},
	SamplerTopP:        {"top_p", 'p'},
	SamplerMinP:        {"min_p", 'm'},
	SamplerXTC:         {"xtc", 'x'},
	SamplerTemperature: {"temperature", 't'},
	SamplerPLess:       {"p_less", 0},
}

// String returns the canonical name (as in --samplers).
func (t SamplerType) String() string {
	if i, ok := samplerTypeInfo[t]; ok {
		return i.name
	}
	return fmt.Sprintf("SamplerType(%d)", int(t))
}

// Letter returns the one-letter form (as in --sampling-seq), or 0 if it has none.
func (t SamplerType) Letter() byte { return samplerTypeInfo[t].letter }

// DefaultOrder is llama.cpp's default order: penalties;dry;top_n_sigma;top_k;typ_p;top_p;
// min_p;xtc;temperature ("edskypmxt").
var DefaultOrder = []SamplerType{SamplerPenalties, SamplerDRY, SamplerTopNSigma, SamplerTopK,
	SamplerTypicalP, SamplerTopP, SamplerMinP, SamplerXTC, SamplerTemperature}

// samplerNames maps canonical and alternative names (common_sampler_types_from_names).
var samplerNames = map[string]SamplerType{
	"penalties": SamplerPenalties, "dry": SamplerDRY, "top_n_sigma": SamplerTopNSigma,
	"top_k": SamplerTopK, "typ_p": SamplerTypicalP, "top_p": SamplerTopP, "min_p": SamplerMinP,
	"xtc": SamplerXTC, "temperature": SamplerTemperature, "p_less": SamplerPLess,
	// alternative names
	"top-k": SamplerTopK, "top-p": SamplerTopP, "top-n-sigma": SamplerTopNSigma,
	"nucleus": SamplerTopP, "typical-p": SamplerTypicalP, "typical": SamplerTypicalP,
	"typ-p": SamplerTypicalP, "typ": SamplerTypicalP, "min-p": SamplerMinP,
	"temp": SamplerTemperature, "p-less": SamplerPLess,
}

// ParseOrderNames parses a ';'-separated list of sampler names (llama.cpp's --samplers),
// accepting llama.cpp's alternative names (top-k, nucleus, typical, temp, ...).
// Names are case-insensitive; surrounding spaces are ignored.
func ParseOrderNames(spec string) ([]SamplerType, error) {
	var out []SamplerType
	for _, part := range strings.Split(spec, ";") {
		name := strings.ToLower(strings.TrimSpace(part))
		if name == "" {
			continue
		}
		if name == "infill" {
			return nil, paramErr("samplers", part, "the infill sampler is not supported by tether")
		}
		t, ok := samplerNames[name]
		if !ok {
			return nil, paramErr("samplers", part, "unknown sampler name (known: "+knownNames()+")")
		}
		out = append(out, t)
	}
	if len(out) == 0 {
		return nil, paramErr("samplers", spec, "no sampler named")
	}
	return out, nil
}

// ParseOrderLetters parses llama.cpp's one-letter form (--sampling-seq), e.g. "edskypmxt".
func ParseOrderLetters(spec string) ([]SamplerType, error) {
	var out []SamplerType
	for i := 0; i < len(spec); i++ {
		ch := spec[i]
		if ch == 'i' {
			return nil, paramErr("sampling_seq", string(ch), "the infill sampler is not supported by tether")
		}
		found := false
		for t, info := range samplerTypeInfo {
			if info.letter != 0 && info.letter == ch {
				out = append(out, t)
				found = true
				break
			}
		}
		if !found {
			return nil, paramErr("sampling_seq", string(ch), "unknown sampler letter (known: edskypmxt)")
		}
	}
	if len(out) == 0 {
		return nil, paramErr("sampling_seq", spec, "no sampler named")
	}
	return out, nil
}

// ParseOrder accepts either form: a spec with ';' or made of one known name is read as
// names, otherwise as letters ("typ" is the name, not t-y-p).
func ParseOrder(spec string) ([]SamplerType, error) {
	s := strings.TrimSpace(spec)
	if strings.Contains(s, ";") {
		return ParseOrderNames(s)
	}
	if _, ok := samplerNames[strings.ToLower(s)]; ok {
		return ParseOrderNames(s)
	}
	order, err := ParseOrderLetters(s)
	if err != nil {
		if len(s) > 1 && strings.ContainsAny(s, "_-") {
			return ParseOrderNames(s) // a single unknown name: report it as a name
		}
		return nil, paramErr("samplers", spec, "neither a ';'-separated list of names (known: "+knownNames()+") nor a string of letters (edskypmxt)")
	}
	return order, nil
}

func knownNames() string {
	return "penalties, dry, top_n_sigma, top_k, typ_p, top_p, min_p, xtc, temperature, p_less"
}

// FormatOrderNames formats an order as llama.cpp's --samplers value.
func FormatOrderNames(order []SamplerType) string {
	parts := make([]string, len(order))
	for i, t := range order {
		parts[i] = t.String()
	}
	return strings.Join(parts, ";")
}

// FormatOrderLetters formats an order in the one-letter form (types without a letter
// are skipped).
func FormatOrderLetters(order []SamplerType) string {
	var b []byte
	for _, t := range order {
		if l := t.Letter(); l != 0 {
			b = append(b, l)
		}
	}
	return string(b)
}

// needsRawLogits: samplers whose statistics are about the model's own logits over the
// whole vocabulary (history penalties and the std of top-n-sigma).
func needsRawLogits(t SamplerType) bool {
	return t == SamplerPenalties || t == SamplerDRY || t == SamplerTopNSigma
}

// makesProbabilities: samplers that compute softmax and cut the array by probability mass.
func makesProbabilities(t SamplerType) bool {
	return t == SamplerTypicalP || t == SamplerTopP || t == SamplerXTC || t == SamplerPLess
}

// OrderWarnings returns human-readable warnings about an order: a sampler that needs the
// raw logits (penalties, dry, top_n_sigma) placed after one that already turned the logits
// into a truncated probability distribution (typ_p, top_p, xtc, p_less), and repeated
// samplers. llama.cpp accepts such orders silently; so does tether, with a warning.
func OrderWarnings(order []SamplerType) []string {
	var warns []string
	firstProb := SamplerType(0)
	seen := map[SamplerType]bool{}
	for _, t := range order {
		if seen[t] {
			warns = append(warns, fmt.Sprintf("sampler %s appears more than once in the order", t))
		}
		seen[t] = true
		if needsRawLogits(t) && firstProb != 0 {
			warns = append(warns, fmt.Sprintf("sampler %s needs raw logits but comes after %s, which already turned them into a truncated probability distribution; put %s before %s",
				t, firstProb, t, firstProb))
		}
		if makesProbabilities(t) && firstProb == 0 {
			firstProb = t
		}
	}
	return warns
}
