package sampling

// Penalties applies llama.cpp's repetition, frequency and presence penalties over the
// last penaltyLastN accepted tokens (llama_sampler_init_penalties): for a token seen c > 0
// times, logit = logit <= 0 ? logit*repeat : logit/repeat, then logit -= c*freq + present.
type Penalties struct {
	lastN                 int
	repeat, freq, present float32
	prev                  ring
	count                 []int32 // occurrences in prev, by token id (grown on demand)
}

// NewPenalties returns a penalties sampler (penalty_last_n, penalty_repeat, penalty_freq,
// penalty_present). penalty_last_n must be >= 0 (0 disables it; resolve llama.cpp's -1,
// "context size", before calling: Params does).
func NewPenalties(penaltyLastN int, penaltyRepeat, penaltyFreq, penaltyPresent float32) (*Penalties, error) {
	if err := checkNonNeg("penalty_last_n", penaltyLastN); err != nil {
		return nil, err
	}
	if err := checkFinite("penalty_repeat", penaltyRepeat); err != nil {
		return nil, err
	}
	if penaltyRepeat <= 0 {
		return nil, paramErr("penalty_repeat", penaltyRepeat, "must be > 0 (1.0 = off)")
	}
	if err := checkFinite("penalty_freq", penaltyFreq); err != nil {
		return nil, err
	}
	if err := checkFinite("penalty_present", penaltyPresent); err != nil {
		return nil, err
	}
	return &Penalties{lastN: penaltyLastN, repeat: penaltyRepeat, freq: penaltyFreq,
		present: penaltyPresent, prev: newRing(penaltyLastN)}, nil
}

// Name returns "penalties".
func (*Penalties) Name() string { return "penalties" }

// Accept records id in the history window.
func (p *Penalties) Accept(id int) {
	if p.lastN == 0 || id < 0 {
		return
	}
	t := int32(id)
	p.count = growCounts(p.count, t)
	p.count[t]++
	if old, dropped := p.prev.push(t); dropped {
		p.count[old]--
	}
}

// Apply penalizes the candidates that occur in the history.
func (p *Penalties) Apply(c *Candidates) error {
	if len(c.Data) == 0 {
		return ErrEmptyCandidates
	}
	if p.lastN == 0 || (p.repeat == 1 && p.freq == 0 && p.present == 0) || p.prev.size == 0 {
		return nil
	}
	d := c.Data
	// Fast path: every penalized token still sits at its own index (the array is fresh
	// from SetLogits). Each distinct token is visited once: its count is negated while
	// visited and restored afterwards.
	direct := true
	for i := 0; i < p.prev.size; i++ {
		t := p.prev.at(i)
		if int(t) >= len(d) || d[t].ID != t {
			direct = false
			break
		}
	}
	if direct {
		for i := 0; i < p.prev.size; i++ {
			t := p.prev.at(i)
			if n := p.count[t]; n > 0 {
				p.penalize(&d[t], n)
				p.count[t] = -n
			}
		}
		for i := 0; i < p.prev.size; i++ {
			if t := p.prev.at(i); p.count[t] < 0 {
				p.count[t] = -p.count[t]
			}
		}
	} else {
		for i := range d {
			if t := d[i].ID; t >= 0 && int(t) < len(p.count) && p.count[t] > 0 {
				p.penalize(&d[i], p.count[t])
			}
		}
	}
	c.Sorted = false
	return nil
}

func (p *Penalties) penalize(t *Candidate, n int32) {
	// Dividing a negative logit would make the token more likely: multiply instead.
	if t.Logit <= 0 {
		t.Logit *= p.repeat
	} else {
		t.Logit /= p.repeat
	}
	t.Logit -= float32(float32(n)*p.freq) + p.present
}

// Reset clears the history.
func (p *Penalties) Reset() {
	for i := 0; i < p.prev.size; i++ {
		p.count[p.prev.at(i)] = 0
	}
	p.prev.clear()
}

// Clone returns a copy with its own history.
func (p *Penalties) Clone() Sampler {
	cp := *p
	cp.prev = p.prev.clone()
	cp.count = append([]int32(nil), p.count...)
	return &cp
}
