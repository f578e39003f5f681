package sampling

import "math"

// mirostatCore is the state both Mirostat versions share: the target surprise tau, the
// learning rate eta, the running mu, and their own seeded generator.
type mirostatCore struct {
	tau, eta      float32
	mu            float32
	seed, seedCur uint32
	rng           MT19937
}

// Mu returns the current target-surprise state (starts at 2*tau).
func (s *mirostatCore) Mu() float32 { return s.mu }

// Seed returns the seed in use.
func (s *mirostatCore) Seed() uint32 { return s.seedCur }

// Accept does nothing: mu is updated in Apply, as in llama.cpp.
func (*mirostatCore) Accept(int) {}

// reset restores mu = 2*tau and reseeds the generator.
func (s *mirostatCore) reset() {
	s.mu = 2 * s.tau
	s.seedCur = resolveSeed(s.seed)
	s.rng.Seed(s.seedCur)
}

// selectAndLearn renormalizes the truncated candidates, samples one, and moves mu by
// eta times the difference between its surprise and tau.
func (s *mirostatCore) selectAndLearn(c *Candidates) {
	c.softmax(true)
	idx := sampleDiscrete(c.Data, &s.rng)
	c.Selected = idx
	observed := -log2f(c.Data[idx].P)
	s.mu -= float32(s.eta * (observed - s.tau))
}

// Mirostat is Mirostat 1.0 (llama_sampler_init_mirostat): it estimates the Zipf exponent
// from the top m candidates, truncates to the k that targets surprise tau, samples, and
// moves mu by eta times the error. It selects a token itself: nothing follows it.
type Mirostat struct {
	mirostatCore
	nVocab int
	m      int
}

// NewMirostat returns a Mirostat v1 sampler (n_vocab, seed, mirostat_tau, mirostat_eta, m;
// llama.cpp's common code uses m = 100).
func NewMirostat(nVocab int, seed uint32, tau, eta float32, m int) (*Mirostat, error) {
	if nVocab <= 0 {
		return nil, paramErr("n_vocab", nVocab, "mirostat needs the vocabulary size (> 0)")
	}
	if err := checkFinite("mirostat_tau", tau); err != nil {
		return nil, err
	}
	if err := checkFinite("mirostat_eta", eta); err != nil {
		return nil, err
	}
	if m < 1 {
		return nil, paramErr("mirostat_m", m, "must be >= 1")
	}
	s := &Mirostat{mirostatCore: mirostatCore{tau: tau, eta: eta, seed: seed}, nVocab: nVocab, m: m}
	s.Reset()
	return s, nil
}

// Name returns "mirostat".
func (*Mirostat) Name() string { return "mirostat" }

// Apply truncates, selects a token and updates mu.
func (s *Mirostat) Apply(c *Candidates) error {
	if len(c.Data) == 0 {
		return ErrEmptyCandidates
	}
	c.softmax(true)
	d := c.Data
	var sumTiBi, sumTiSq float32
	for i := 0; i < s.m-1 && i < len(d)-1; i++ {
		ti := logf(float32(i+2) / float32(i+1))
		bi := logf(d[i].P / d[i+1].P)
		sumTiBi += float32(ti * bi)
		sumTiSq += float32(ti * ti)
	}
	sHat := sumTiBi / sumTiSq
	epsHat := sHat - 1
	k := powf(float32(epsHat*powf(2, s.mu))/(1-powf(float32(s.nVocab), -epsHat)), 1/sHat)
	ki := len(d)
	if !math.IsNaN(float64(k)) && float64(k) < float64(len(d)) {
		ki = max(int(k), 1)
	}
	topK(c, ki)
	s.selectAndLearn(c)
	return nil
}

// Reset restores mu = 2*tau and reseeds the generator.
func (s *Mirostat) Reset() { s.reset() }

// Clone returns a copy with the same state.
func (s *Mirostat) Clone() Sampler { cp := *s; return &cp }

// MirostatV2 is Mirostat 2.0 (llama_sampler_init_mirostat_v2): keep candidates whose
// surprise -log2 p is at most mu, sample, and move mu by eta times the error.
type MirostatV2 struct {
	mirostatCore
}

// NewMirostatV2 returns a Mirostat v2 sampler (seed, mirostat_tau, mirostat_eta).
func NewMirostatV2(seed uint32, tau, eta float32) (*MirostatV2, error) {
	if err := checkFinite("mirostat_tau", tau); err != nil {
		return nil, err
	}
	if err := checkFinite("mirostat_eta", eta); err != nil {
		return nil, err
	}
	s := &MirostatV2{mirostatCore: mirostatCore{tau: tau, eta: eta, seed: seed}}
	s.Reset()
	return s, nil
}

// Name returns "mirostat-v2".
func (*MirostatV2) Name() string { return "mirostat-v2" }

// Apply truncates by surprise, selects a token and updates mu.
func (s *MirostatV2) Apply(c *Candidates) error {
	if len(c.Data) == 0 {
		return ErrEmptyCandidates
	}
	c.softmax(true)
	n := 0
	for n < len(c.Data) && !(-log2f(c.Data[n].P) > s.mu) {
		n++
	}
	if n == 0 {
		n = 1
	}
	c.Data = c.Data[:n]
	s.selectAndLearn(c)
	return nil
}

// Reset restores mu = 2*tau and reseeds the generator.
func (s *MirostatV2) Reset() { s.reset() }

// Clone returns a copy with the same state.
func (s *MirostatV2) Clone() Sampler { cp := *s; return &cp }

// sampleDiscrete draws an index with probability proportional to P, like libstdc++'s
// std::discrete_distribution<int> over the P values: probabilities normalized in double,
// cumulative sums with the last forced to 1, one canonical double draw, lower_bound.
func sampleDiscrete(d []Candidate, rng *MT19937) int {
	var sum float64
	for _, t := range d {
		sum += float64(t.P)
	}
	u := rng.Float64()
	var cum float64
	for i, t := range d[:len(d)-1] {
		cum += float64(t.P) / sum
		if cum >= u {
			return i
		}
	}
	return len(d) - 1
}
