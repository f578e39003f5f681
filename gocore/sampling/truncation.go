package sampling

import (
	"math"
	"slices"
)

// TopK keeps the k candidates with the highest logits, sorted descending
// (llama_sampler_init_top_k). k = 0 disables it.
type TopK struct {
	stateless
	k int
}

// NewTopK returns a top-k sampler; k must be >= 0 (0 = off).
func NewTopK(k int) (*TopK, error) {
	if err := checkNonNeg("top_k", k); err != nil {
		return nil, err
	}
	return &TopK{k: k}, nil
}

// Name returns "top-k".
func (*TopK) Name() string { return "top-k" }

// Apply keeps the top k (a bounded-heap selection, not a full sort).
func (t *TopK) Apply(c *Candidates) error {
	if len(c.Data) == 0 {
		return ErrEmptyCandidates
	}
	topK(c, t.k)
	return nil
}

func topK(c *Candidates, k int) {
	if k <= 0 {
		return
	}
	if k > len(c.Data) {
		k = len(c.Data)
	}
	if !c.Sorted {
		c.partialSort(k)
		c.Sorted = true
	}
	c.Data = c.Data[:k]
}

// Clone returns a copy.
func (t *TopK) Clone() Sampler { cp := *t; return &cp }

// TopP keeps the most probable candidates whose cumulative probability reaches p, at
// least minKeep of them (llama_sampler_init_top_p, "nucleus"). p = 1 disables it.
type TopP struct {
	stateless
	p       float32
	minKeep int
}

// NewTopP returns a top-p sampler; p must be in [0, 1], minKeep >= 0.
func NewTopP(p float32, minKeep int) (*TopP, error) {
	if err := checkRange("top_p", p, 0, 1); err != nil {
		return nil, err
	}
	if err := checkNonNeg("min_keep", minKeep); err != nil {
		return nil, err
	}
	return &TopP{p: p, minKeep: minKeep}, nil
}

// Name returns "top-p".
func (*TopP) Name() string { return "top-p" }

// Apply computes softmax, then sorts adaptively: the best 256 first on large unsorted
// arrays, the rest only if the cumulative sum has not reached p by then.
func (t *TopP) Apply(c *Candidates) error {
	if len(c.Data) == 0 {
		return ErrEmptyCandidates
	}
	if t.p >= 1 {
		return nil
	}
	c.softmax(false)
	n := len(c.Data)
	k := n
	sorted := c.Sorted
	if !sorted && n > 1024 {
		k = 256
		c.partialSort(k) // Data[:256] sorted, Data[256:] the rest
	} else if !sorted {
		c.sortDesc()
		sorted = true
	}
	var cum float32
	last := n
	d := c.Data
	for i := 0; i < n; i++ {
		cum += d[i].P
		if cum >= t.p && i+1 >= t.minKeep {
			last = i + 1
			break
		}
		if !sorted && i == k-1 {
			// the best k are all smaller than Data[:k]; sort the remainder
			slices.SortFunc(d[k:], byLogitDesc)
			sorted = true
		}
	}
	c.Data = d[:last]
	c.Sorted = true
	return nil
}

// Clone returns a copy.
func (t *TopP) Clone() Sampler { cp := *t; return &cp }

// MinP keeps candidates whose probability is at least p times the top probability, at
// least minKeep of them (llama_sampler_init_min_p). p <= 0 disables it.
type MinP struct {
	stateless
	p       float32
	minKeep int
}

// NewMinP returns a min-p sampler; p must be >= 0 and finite (p > 1 keeps only the top
// token, as in llama.cpp), minKeep >= 0.
func NewMinP(p float32, minKeep int) (*MinP, error) {
	if err := checkFinite("min_p", p); err != nil {
		return nil, err
	}
	if p < 0 {
		return nil, paramErr("min_p", p, "must be >= 0")
	}
	if err := checkNonNeg("min_keep", minKeep); err != nil {
		return nil, err
	}
	return &MinP{p: p, minKeep: minKeep}, nil
}

// Name returns "min-p".
func (*MinP) Name() string { return "min-p" }

// Apply filters by logit >= max_logit + log(p): in place and in order when the array is
// unsorted and enough survive, else by a sorted scan that always keeps the top token.
func (m *MinP) Apply(c *Candidates) error {
	if len(c.Data) == 0 {
		return ErrEmptyCandidates
	}
	if m.p <= 0 {
		return nil
	}
	if !c.Sorted {
		maxL := float32(-math.MaxFloat32)
		for _, t := range c.Data {
			if t.Logit > maxL {
				maxL = t.Logit
			}
		}
		minL := maxL + logf(m.p)
		kept := 0
		for _, t := range c.Data {
			if t.Logit >= minL {
				kept++
			}
		}
		if kept > 0 && kept >= m.minKeep {
			j := 0
			for _, t := range c.Data {
				if t.Logit >= minL {
					c.Data[j] = t
					j++
				}
			}
			c.Data = c.Data[:j]
			return nil
		}
		c.sortDesc()
	}
	minL := c.Data[0].Logit + logf(m.p)
	i := 1
	for ; i < len(c.Data); i++ {
		if c.Data[i].Logit < minL && i >= m.minKeep {
			break
		}
	}
	c.Data = c.Data[:i]
	return nil
}

// Clone returns a copy.
func (m *MinP) Clone() Sampler { cp := *m; return &cp }

// Typical is locally typical sampling (llama_sampler_init_typical): keep the candidates
// whose surprise is closest to the entropy until their mass exceeds p. p = 1 disables it.
// It leaves P as the softmax of the full set (not renormalized).
type Typical struct {
	stateless
	p       float32
	minKeep int
	shifted []float32
	idx     []int32
	out     []Candidate
}

// NewTypical returns a typical sampler; p must be in [0, 1], minKeep >= 0.
func NewTypical(p float32, minKeep int) (*Typical, error) {
	if err := checkRange("typ_p", p, 0, 1); err != nil {
		return nil, err
	}
	if err := checkNonNeg("min_keep", minKeep); err != nil {
		return nil, err
	}
	return &Typical{p: p, minKeep: minKeep}, nil
}

// Name returns "typical".
func (*Typical) Name() string { return "typical" }

// Apply orders candidates by |-log p - H| and keeps the shortest prefix with mass > p.
func (t *Typical) Apply(c *Candidates) error {
	if len(c.Data) == 0 {
		return ErrEmptyCandidates
	}
	if t.p >= 1 {
		return nil
	}
	c.softmax(true)
	d := c.Data
	var entropy float32
	for _, x := range d {
		if x.P > 0 { // 0*log(0) counts as 0
			entropy += float32(-x.P * logf(x.P))
		}
	}
	t.shifted = t.shifted[:0]
	t.idx = t.idx[:0]
	for i, x := range d {
		s := -logf(x.P) - entropy
		if s < 0 {
			s = -s
		}
		t.shifted = append(t.shifted, s)
		t.idx = append(t.idx, int32(i))
	}
	sh := t.shifted
	slices.SortFunc(t.idx, func(a, b int32) int {
		switch {
		case sh[a] < sh[b]:
			return -1
		case sh[a] > sh[b]:
			return 1
		}
		return 0
	})
	var cum float32
	last := len(t.idx)
	for i, ix := range t.idx {
		cum += d[ix].P
		if cum > t.p && (t.minKeep == 0 || i >= t.minKeep-1) {
			last = i + 1
			break
		}
	}
	t.out = t.out[:0]
	for _, ix := range t.idx[:last] {
		t.out = append(t.out, d[ix])
	}
	copy(d, t.out)
	c.Data = d[:last]
	c.Sorted = false
	return nil
}

// Clone returns a copy (scratch buffers are not shared).
func (t *Typical) Clone() Sampler { return &Typical{p: t.p, minKeep: t.minKeep} }

// TopNSigma keeps candidates whose logit is within n standard deviations of the maximum
// (llama_sampler_init_top_n_sigma); the others get logit -Inf and stay in the array.
// n <= 0 disables it (llama.cpp's default is -1).
type TopNSigma struct {
	stateless
	n float32
}

// NewTopNSigma returns a top-n-sigma sampler; n must be finite.
func NewTopNSigma(n float32) (*TopNSigma, error) {
	if err := checkFinite("top_n_sigma", n); err != nil {
		return nil, err
	}
	return &TopNSigma{n: n}, nil
}

// Name returns "top-n-sigma".
func (*TopNSigma) Name() string { return "top-n-sigma" }

// Apply masks logits below max - n*std (population std over finite logits).
func (t *TopNSigma) Apply(c *Candidates) error {
	if len(c.Data) == 0 {
		return ErrEmptyCandidates
	}
	if t.n <= 0 || len(c.Data) <= 1 {
		return nil
	}
	d := c.Data
	maxL := d[0].Logit
	var sum float32
	valid := 0
	for _, x := range d {
		if x.Logit != negInf {
			if x.Logit > maxL {
				maxL = x.Logit
			}
			sum += x.Logit
			valid++
		}
	}
	var mean float32
	if valid > 0 {
		mean = sum / float32(valid)
	}
	var acc float32
	for _, x := range d {
		if x.Logit != negInf {
			diff := float64(x.Logit - mean)
			acc = float32(float64(acc) + diff*diff)
		}
	}
	var std float32
	if valid > 0 {
		std = float32(math.Sqrt(float64(acc / float32(valid))))
	}
	cut := maxL - float32(t.n*std)
	for i := range d {
		if d[i].Logit < cut {
			d[i].Logit = negInf
		}
	}
	return nil
}

// Clone returns a copy.
func (t *TopNSigma) Clone() Sampler { cp := *t; return &cp }

// PLess keeps candidates whose probability is at least the expected probability
// sum(p^2) of the distribution (llama.cpp's p-less sampler), in their current order.
type PLess struct{ stateless }

// NewPLess returns a p-less sampler (it has no parameters).
func NewPLess() *PLess { return &PLess{} }

// Name returns "p-less".
func (*PLess) Name() string { return "p-less" }

// Apply computes softmax and drops candidates with p < sum(p^2) - 1e-5.
func (*PLess) Apply(c *Candidates) error {
	if len(c.Data) == 0 {
		return ErrEmptyCandidates
	}
	c.softmax(false)
	var thr float32
	for _, x := range c.Data {
		thr += float32(x.P * x.P)
	}
	thr -= 1e-5
	j := 0
	for _, x := range c.Data {
		if x.P >= thr {
			c.Data[j] = x
			j++
		}
	}
	if j > 0 {
		c.Data = c.Data[:j]
	}
	return nil
}

// Clone returns a new p-less sampler.
func (*PLess) Clone() Sampler { return &PLess{} }

// XTC ("exclude top choices", llama_sampler_init_xtc): with chance probability per step,
// remove every candidate with p >= threshold except the least probable of them, keeping
// at least minKeep. It leaves P as the softmax of the full set.
type XTC struct {
	probability, threshold float32
	minKeep                int
	seed, seedCur          uint32
	rng                    MT19937
}

// NewXTC returns an XTC sampler (xtc_probability, xtc_threshold, min_keep, seed).
// probability must be in [0, 1]; threshold in [0, 1] (above 0.5 XTC never fires).
func NewXTC(probability, threshold float32, minKeep int, seed uint32) (*XTC, error) {
	if err := checkRange("xtc_probability", probability, 0, 1); err != nil {
		return nil, err
	}
	if err := checkRange("xtc_threshold", threshold, 0, 1); err != nil {
		return nil, err
	}
	if err := checkNonNeg("min_keep", minKeep); err != nil {
		return nil, err
	}
	x := &XTC{probability: probability, threshold: threshold, minKeep: minKeep, seed: seed}
	x.Reset()
	return x, nil
}

// Name returns "xtc".
func (*XTC) Name() string { return "xtc" }

// Seed returns the seed in use.
func (x *XTC) Seed() uint32 { return x.seedCur }

// Apply draws once and, when it fires, removes the top choices.
func (x *XTC) Apply(c *Candidates) error {
	if len(c.Data) == 0 {
		return ErrEmptyCandidates
	}
	if x.probability <= 0 || x.threshold > 0.5 || len(c.Data) < 2 {
		return nil
	}
	if chance := x.rng.Float32(); chance > x.probability {
		return nil
	}
	c.softmax(true)
	posLast := 0
	for i, t := range c.Data {
		if t.P >= x.threshold {
			posLast = i
		} else {
			break
		}
	}
	if len(c.Data)-posLast >= x.minKeep && posLast > 0 {
		c.Data = c.Data[posLast:]
	}
	return nil
}

// Accept does nothing: XTC keeps no history.
func (*XTC) Accept(int) {}

// Reset reseeds the generator.
func (x *XTC) Reset() {
	x.seedCur = resolveSeed(x.seed)
	x.rng.Seed(x.seedCur)
}

// Clone returns a copy with the same generator state.
func (x *XTC) Clone() Sampler { cp := *x; return &cp }
