package sampling

import "github.com/tetherlm/tether/gocore/tokenmask"

// Grammar is what grammar-aware sampling needs from a grammar matcher
// (gocore/engine's Matcher satisfies it). Token ids index the logits row.
type Grammar interface {
	// FillMask writes the set of tokens allowed next: bit i%32 of mask[i/32] (least
	// significant bit first) is 1 iff token i is allowed. len(mask) is ceil(V/32) for a
	// logits row of V entries; bits of ids the grammar does not know must be 0. An
	// error (e.g. a grammar limit) means there is no mask to use.
	FillMask(mask tokenmask.Mask) error
	// IsAllowed reports whether token id is allowed next, without computing a full mask.
	// It must agree with FillMask (and fail where it fails).
	IsAllowed(id int) (bool, error)
	// AcceptToken advances the grammar past token id; an error means id was not allowed
	// (the matcher's state must then be unchanged).
	AcceptToken(id int) error
}

// Session samples one sequence: llama.cpp's common_sampler. It owns the candidate array
// and the mask buffer (reused: no allocation per step in steady state), the chain and an
// optional grammar.
//
// With a grammar, Sample by default runs the chain first and checks only the chosen
// token with Grammar.IsAllowed; only if it is rejected does it fill the full mask, set the
// disallowed logits to -Inf and run the chain again on fresh logits (llama.cpp's
// common_sampler_sample). With GrammarFirst it always masks first. Either way, samplers
// with random generators advance once per chain run, as in llama.cpp.
type Session struct {
	chain        *Chain
	grammar      Grammar
	grammarFirst bool
	argmax       bool // the chain always picks a maximal logit: Sample skips it (Params.PicksArgmax)
	cands        *Candidates
	mask         tokenmask.Mask
	stats        SessionStats
}

// SessionStats counts what Sample did.
type SessionStats struct {
	Steps     int // calls to Sample that returned a token
	Resamples int // times the first pick was rejected by the grammar and the mask applied
	Masks     int // full masks computed
}

// NewSession returns a session running chain, constrained by g (nil: unconstrained).
func NewSession(chain *Chain, g Grammar, grammarFirst bool) *Session {
	return &Session{chain: chain, grammar: g, grammarFirst: grammarFirst, cands: NewCandidates(0)}
}

// NewSessionFromParams builds the chain from p (see NewChainFromParams) and a session
// around it; p.GrammarFirst picks the grammar mode. When p.PicksArgmax, Sample takes
// the allowed token of highest logit without running the chain (see Sample).
func NewSessionFromParams(p Params, g Grammar) (*Session, []string, error) {
	ch, warns, err := NewChainFromParams(p)
	if err != nil {
		return nil, nil, err
	}
	s := NewSession(ch, g, p.GrammarFirst)
	s.argmax = p.PicksArgmax()
	return s, warns, nil
}

// PicksArgmax reports whether Sample takes the argmax without running the chain (see
// Params.PicksArgmax): a caller may then pick the allowed token of highest logit itself,
// lowest id first, where the logits are (model.ForwardArgmax), and Accept it.
func (s *Session) PicksArgmax() bool { return s.argmax }

// Chain returns the session's chain.
func (s *Session) Chain() *Chain { return s.chain }

// GrammarFirst reports whether the session masks with the grammar before sampling.
func (s *Session) GrammarFirst() bool { return s.grammarFirst }

// Candidates returns the candidate array as the last Sample left it (for top-n
// probabilities and debugging); after a pick that skipped the chain (PicksArgmax), it
// holds the chosen token alone, with probability 1. It is overwritten by the next Sample.
func (s *Session) Candidates() *Candidates { return s.cands }

// Stats returns counters of what Sample did.
func (s *Session) Stats() SessionStats { return s.stats }

// Sample picks the next token from a row of logits (one per token id). It does not
// accept the token: call Accept with the token actually used. logits is read only during
// the call.
//
// A session made by NewSessionFromParams with parameters for which PicksArgmax holds
// (greedy decoding) does not run the chain: it returns the allowed token of highest
// logit, the lowest id among equal maxima (the chain, like llama.cpp's, orders ties
// arbitrarily), with the grammar consulted as the chain would consult it.
func (s *Session) Sample(logits []float32) (int, error) {
	if s.argmax {
		return s.sampleArgmax(logits)
	}
	if err := s.cands.SetLogits(logits); err != nil {
		return -1, err
	}
	if s.grammar != nil && s.grammarFirst {
		if err := s.applyGrammar(len(logits)); err != nil {
			return -1, err
		}
	}
	if err := s.chain.Apply(s.cands); err != nil {
		return -1, err
	}
	id, err := s.cands.SelectedID()
	if err != nil {
		return -1, err
	}
	ok := s.grammar == nil || s.grammarFirst
	if !ok {
		if ok, err = s.grammar.IsAllowed(id); err != nil {
			return -1, err
		}
	}
	if ok {
		s.stats.Steps++
		return id, nil
	}
	// Rejected: mask and sample again from fresh logits.
	s.stats.Resamples++
	if err := s.cands.SetLogits(logits); err != nil {
		return -1, err
	}
	if err := s.applyGrammar(len(logits)); err != nil {
		return -1, err
	}
	if err := s.chain.Apply(s.cands); err != nil {
		return -1, err
	}
	id, err = s.cands.SelectedID()
	if err != nil {
		return -1, err
	}
	s.stats.Steps++
	return id, nil
}

// sampleArgmax is Sample for a session whose chain always picks a maximal logit.
func (s *Session) sampleArgmax(logits []float32) (int, error) {
	if len(logits) == 0 {
		return -1, ErrEmptyCandidates
	}
	var id int
	var err error
	if s.grammar != nil && s.grammarFirst {
		if err := badLogits(logits); err != nil {
			return -1, err
		}
		id, err = s.maskedArgmax(logits)
	} else {
		if id, err = argmaxLogits(logits); err != nil {
			return -1, err
		}
		if s.grammar != nil {
			var ok bool
			if ok, err = s.grammar.IsAllowed(id); err != nil {
				return -1, err
			}
			if !ok {
				s.stats.Resamples++
				id, err = s.maskedArgmax(logits)
			}
		}
	}
	if err != nil {
		return -1, err
	}
	s.stats.Steps++
	c := s.cands
	if cap(c.buf) < 1 {
		c.buf = make([]Candidate, 1)
	}
	c.Data = c.buf[:1]
	c.Data[0] = Candidate{ID: int32(id), Logit: logits[id], P: 1}
	c.Selected, c.Sorted = 0, true
	return id, nil
}

// argmaxLogits is tokenmask.Argmax with SetLogits's error for a NaN or +Inf logit.
func argmaxLogits(logits []float32) (int, error) {
	best, bad := tokenmask.Argmax(logits)
	if bad >= 0 {
		return -1, badLogits(logits)
	}
	return best, nil
}

// maskedArgmax fills the grammar's mask and returns the lowest id of highest logit
// among the allowed tokens (ErrGrammarRejectsAll when there is none). The caller has
// checked every logit (badLogits or argmaxLogits), as SetLogits checks them.
func (s *Session) maskedArgmax(logits []float32) (int, error) {
	m, err := s.fillMask(len(logits))
	if err != nil {
		return -1, err
	}
	best := tokenmask.ArgmaxIn(logits, m)
	if best < 0 {
		return -1, ErrGrammarRejectsAll
	}
	return best, nil
}

// fillMask computes the grammar's mask for a row of n logits into s.mask.
func (s *Session) fillMask(n int) (tokenmask.Mask, error) {
	words := tokenmask.Words(n)
	if cap(s.mask) < words {
		s.mask = make(tokenmask.Mask, words)
	}
	m := s.mask[:words]
	clear(m)
	if err := s.grammar.FillMask(m); err != nil {
		return nil, err
	}
	s.stats.Masks++
	return m, nil
}

// applyGrammar fills the mask and sets the logits of disallowed tokens to -Inf. The array
// must be fresh from SetLogits (candidate i is token i).
func (s *Session) applyGrammar(n int) error {
	m, err := s.fillMask(n)
	if err != nil {
		return err
	}
	d := s.cands.Data
	any := false
	for w, bits := range m {
		base := w * 32
		if base+32 > n { // last, partial word
			for b := 0; base+b < n; b++ {
				if bits&(1<<b) == 0 {
					d[base+b].Logit = negInf
				} else {
					any = true
				}
			}
			continue
		}
		switch bits {
		case 0xFFFFFFFF:
			any = true
		case 0:
			for i := range d[base : base+32] {
				d[base+i].Logit = negInf
			}
		default:
			any = true
			for b := 0; b < 32; b++ {
				if bits&(1<<b) == 0 {
					d[base+b].Logit = negInf
				}
			}
		}
	}
	if !any {
		return ErrGrammarRejectsAll
	}
	return nil
}

// Accept records the chosen token: the grammar (if any) advances first, then every
// sampler's history. If the grammar rejects the token, nothing changes.
func (s *Session) Accept(id int) error {
	if id < 0 {
		return paramErr("token", id, "token id must be >= 0")
	}
	if s.grammar != nil {
		if err := s.grammar.AcceptToken(id); err != nil {
			return err
		}
	}
	s.chain.Accept(id)
	return nil
}

// Reset clears every sampler's history and reseeds the generators (the grammar is the
// caller's to reset).
func (s *Session) Reset() {
	s.chain.Reset()
	s.stats = SessionStats{}
}

// Clone returns an independent session with a copy of the chain's state. The grammar
// is shared unless it implements interface{ CloneGrammar() Grammar }.
func (s *Session) Clone() *Session {
	g := s.grammar
	if c, ok := g.(interface{ CloneGrammar() Grammar }); ok {
		g = c.CloneGrammar()
	}
	return &Session{chain: s.chain.clone(), grammar: g, grammarFirst: s.grammarFirst,
		cands: NewCandidates(0), stats: s.stats}
}
