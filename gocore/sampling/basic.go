package sampling

import "math"

// Greedy selects the candidate with the highest logit (the first one on ties).
type Greedy struct{ stateless }

// NewGreedy returns the greedy sampler (llama_sampler_init_greedy).
func NewGreedy() *Greedy { return &Greedy{} }

// Name returns "greedy".
func (*Greedy) Name() string { return "greedy" }

// Apply selects the index of the highest logit.
func (*Greedy) Apply(c *Candidates) error {
	if len(c.Data) == 0 {
		return ErrEmptyCandidates
	}
	best := 0
	for i := 1; i < len(c.Data); i++ {
		if c.Data[i].Logit > c.Data[best].Logit {
			best = i
		}
	}
	c.Selected = best
	return nil
}

// Clone returns a new greedy sampler.
func (*Greedy) Clone() Sampler { return &Greedy{} }

// Dist draws a candidate with probability softmax(logit), from its own seeded MT19937
// (llama_sampler_init_dist). It normalizes P in place, in the current order, and leaves
// candidates with logit -Inf in the array with P = 0.
type Dist struct {
	seed    uint32 // as given (may be DefaultSeed)
	seedCur uint32 // in use
	rng     MT19937
}

// NewDist returns a dist sampler; seed DefaultSeed picks a random seed.
func NewDist(seed uint32) *Dist {
	d := &Dist{seed: seed}
	d.Reset()
	return d
}

// Name returns "dist".
func (*Dist) Name() string { return "dist" }

// Seed returns the seed in use (the drawn one when created with DefaultSeed).
func (d *Dist) Seed() uint32 { return d.seedCur }

// Apply computes P = softmax(logit) (sum in float64, like llama.cpp) and selects one
// candidate with a single uniform draw.
func (d *Dist) Apply(c *Candidates) error {
	n := len(c.Data)
	if n == 0 {
		c.Selected = -1
		return ErrEmptyCandidates
	}
	c.Selected = 0
	if n == 1 {
		c.Data[0].P = 1
		return nil
	}
	maxL := c.maxLogit()
	data := c.Data
	var sum float64
	for i := range data {
		p := expf(data[i].Logit - maxL)
		data[i].P = p
		sum += float64(p)
	}
	rnd := d.rng.Float64()
	target := sum * rnd
	var run float64
	found := -1
	lastPos := 0
	for i := range data {
		p := data[i].P
		if p > 0 {
			lastPos = i
		}
		if found < 0 {
			run += float64(p)
			// p > 0: a zero-probability candidate is never picked, even when rnd == 0.
			if run >= target && p > 0 {
				found = i
			}
		}
		data[i].P = float32(float64(p) / sum)
	}
	if found < 0 { // rounding left the target out of reach: take the last possible one
		found = lastPos
	}
	c.Selected = found
	return nil
}

// Accept does nothing: dist keeps no history.
func (*Dist) Accept(int) {}

// Reset reseeds the generator (drawing a new seed if created with DefaultSeed).
func (d *Dist) Reset() {
	d.seedCur = resolveSeed(d.seed)
	d.rng.Seed(d.seedCur)
}

// Clone returns a copy with the same generator state.
func (d *Dist) Clone() Sampler {
	cp := *d
	return &cp
}

// LogitBiasEntry adds Bias to the logit of Token (llama_logit_bias). A bias of -Inf bans
// the token.
type LogitBiasEntry struct {
	Token int
	Bias  float32
}

// LogitBias adds fixed biases to chosen tokens' logits (llama_sampler_init_logit_bias).
type LogitBias struct {
	stateless
	nVocab   int
	biases   []LogitBiasEntry
	toSearch []LogitBiasEntry
}

// NewLogitBias returns a logit-bias sampler. nVocab (if > 0) bounds the token ids;
// biases must not be NaN or +Inf.
func NewLogitBias(nVocab int, biases []LogitBiasEntry) (*LogitBias, error) {
	for _, b := range biases {
		if b.Token < 0 || (nVocab > 0 && b.Token >= nVocab) {
			return nil, paramErr("logit_bias", b.Token, "token id out of range [0, n_vocab)")
		}
		if math.IsNaN(float64(b.Bias)) || math.IsInf(float64(b.Bias), 1) {
			return nil, paramErr("logit_bias", b.Bias, "bias must be a number below +Inf")
		}
	}
	return &LogitBias{nVocab: nVocab, biases: append([]LogitBiasEntry(nil), biases...),
		toSearch: make([]LogitBiasEntry, 0, len(biases))}, nil
}

// Name returns "logit-bias".
func (*LogitBias) Name() string { return "logit-bias" }

// Apply adds the biases; tokens still at their own index are found directly, the rest
// by a scan.
func (l *LogitBias) Apply(c *Candidates) error {
	if len(c.Data) == 0 {
		return ErrEmptyCandidates
	}
	if len(l.biases) == 0 {
		return nil
	}
	c.Sorted = false // a bias may break the order
	l.toSearch = l.toSearch[:0]
	d := c.Data
	for _, b := range l.biases {
		if b.Token < len(d) && int(d[b.Token].ID) == b.Token {
			d[b.Token].Logit += b.Bias
		} else {
			l.toSearch = append(l.toSearch, b)
		}
	}
	if len(l.toSearch) == 0 {
		return nil
	}
	for i := range d {
		for _, b := range l.toSearch {
			if int(d[i].ID) == b.Token {
				d[i].Logit += b.Bias
				break
			}
		}
	}
	return nil
}

// Clone returns an independent copy.
func (l *LogitBias) Clone() Sampler {
	cp, _ := NewLogitBias(l.nVocab, l.biases)
	return cp
}

// tempApply is llama_sampler_temp_impl: divide logits by temp, or for temp <= 0 keep only
// the first maximal logit and set every other to -Inf (they stay in the array).
func tempApply(c *Candidates, temp float32) {
	d := c.Data
	if temp <= 0 {
		maxI := 0
		maxL := d[0].Logit
		for i := 1; i < len(d); i++ {
			if d[i].Logit > maxL {
				d[maxI].Logit = negInf
				maxI = i
				maxL = d[i].Logit
			} else {
				d[i].Logit = negInf
			}
		}
		return
	}
	for i := range d {
		d[i].Logit /= temp
	}
}

// Temp divides logits by a temperature (llama_sampler_init_temp); temp <= 0 is greedy.
type Temp struct {
	stateless
	temp float32
}

// NewTemp returns a temperature sampler. temp must be finite.
func NewTemp(temp float32) (*Temp, error) {
	if err := checkFinite("temp", temp); err != nil {
		return nil, err
	}
	return &Temp{temp: temp}, nil
}

// Name returns "temp".
func (*Temp) Name() string { return "temp" }

// Apply scales the logits.
func (t *Temp) Apply(c *Candidates) error {
	if len(c.Data) == 0 {
		return ErrEmptyCandidates
	}
	tempApply(c, t.temp)
	return nil
}

// Clone returns a copy.
func (t *Temp) Clone() Sampler { cp := *t; return &cp }

// TempExt is dynamic temperature (llama_sampler_init_temp_ext): with delta > 0 the
// temperature moves within [temp-delta, temp+delta] with the normalized entropy of the
// distribution raised to exponent; with delta <= 0 it is plain temperature.
type TempExt struct {
	stateless
	temp, delta, exponent float32
}

// NewTempExt returns an extended-temperature sampler (dynatemp_range = delta,
// dynatemp_exponent = exponent).
func NewTempExt(temp, delta, exponent float32) (*TempExt, error) {
	if err := checkFinite("temp", temp); err != nil {
		return nil, err
	}
	if err := checkFinite("dynatemp_range", delta); err != nil {
		return nil, err
	}
	if err := checkFinite("dynatemp_exponent", exponent); err != nil {
		return nil, err
	}
	return &TempExt{temp: temp, delta: delta, exponent: exponent}, nil
}

// Name returns "temp-ext".
func (*TempExt) Name() string { return "temp-ext" }

// Apply scales the logits by the (dynamic) temperature.
func (t *TempExt) Apply(c *Candidates) error {
	if len(c.Data) == 0 {
		return ErrEmptyCandidates
	}
	if t.delta <= 0 {
		tempApply(c, t.temp)
		return nil
	}
	minTemp := t.temp - t.delta
	if minTemp < 0 {
		minTemp = 0
	}
	maxTemp := t.temp + t.delta
	if len(c.Data) <= 1 {
		return nil
	}
	maxEntropy := -logf(1 / float32(len(c.Data)))
	c.softmax(true)
	var entropy float32
	for _, t := range c.Data {
		if t.P > 0 {
			entropy -= float32(t.P * logf(t.P))
		}
	}
	normEntropy := entropy / maxEntropy
	dynTemp := minTemp + float32((maxTemp-minTemp)*powf(normEntropy, t.exponent))
	tempApply(c, dynTemp)
	maxL := float64(c.Data[0].Logit)
	var sum float64
	for i := range c.Data {
		p := expd(float64(c.Data[i].Logit) - maxL)
		c.Data[i].P = float32(p)
		sum += p
	}
	for i := range c.Data {
		c.Data[i].P = float32(float64(c.Data[i].P) / sum)
	}
	return nil
}

// Clone returns a copy.
func (t *TempExt) Clone() Sampler { cp := *t; return &cp }
