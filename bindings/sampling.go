package bindings

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/tetherlm/tether/gocore/engine"
	"github.com/tetherlm/tether/gocore/safecall"
	"github.com/tetherlm/tether/gocore/sampling"
	"github.com/tetherlm/tether/gocore/session"
)

// paramPrefix marks a sampling parameter error; python/tether/sampling.py raises
// tether.ParamError with the parameter's name from the JSON that follows.
const paramPrefix = "tether-param:"

// paramError turns a *sampling.ParamError into the form Python recognizes.
func paramError(err error) error {
	var pe *sampling.ParamError
	if !errors.As(err, &pe) {
		return err
	}
	b, _ := json.Marshal(map[string]string{"param": pe.Param, "message": err.Error()})
	return errors.New(paramPrefix + string(b))
}

// sampler is the Go half of tether.SamplerChain and tether.SamplingLogitsProcessor:
// llama.cpp's chain configured once, and one sequence state per row of a batch (the
// chain's history and random generator, and the row's grammar matcher when the chain
// is grammar-aware).
type sampler struct {
	mu      sync.Mutex // gopy releases the GIL: two Python threads could call at once
	params  sampling.Params
	grammar *engine.Grammar // nil: unconstrained
	eog     []int           // end-of-generation ids (from the grammar's or the given vocabulary)
	isEOG   func(int) bool
	warns   []string

	rows    []*seqState
	lastLen int
	pending []int64 // SamplerChain prompt tokens given before the vocabulary size was known
}

// seqState is one sequence: its sampler session (chain + grammar) and the tokens it
// has seen (prompt first).
type seqState struct {
	sess      *sampling.Session
	m         *engine.Matcher
	hist      []int64
	promptLen int
	finished  bool  // accepted an end-of-generation token
	dead      bool  // the grammar refused a token the host chose
	err       error // why it is dead
}

var samplers = newRegistry[*sampler]("sampler")

// SamplerNew configures a sampler chain from paramsJSON, a JSON object of llama.cpp's
// parameter names (top_k, temp, penalty_repeat, dry_multiplier, samplers, seed, ...;
// see sampling.ParamSpecs), unset ones at llama.cpp's defaults. grammarHandle (0 for
// none) makes the chain grammar-aware: it samples, checks the pick against the
// grammar and resamples from the masked logits only when the pick is refused.
// vocabHandle (0 for none; the grammar's vocabulary when a grammar is given)
// tokenizes DRY sequence breakers and names the end-of-generation tokens.
func SamplerNew(paramsJSON string, grammarHandle, vocabHandle int64) (int64, error) {
	return safecall.Do("SamplerNew", func() (int64, error) {
		s := &sampler{params: sampling.DefaultParams()}
		if paramsJSON != "" {
			var m map[string]any
			if err := json.Unmarshal([]byte(paramsJSON), &m); err != nil {
				return 0, fmt.Errorf("sampling parameters: %v", err)
			}
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				if err := s.params.Set(k, m[k]); err != nil {
					return 0, paramError(err)
				}
			}
		}
		var voc engine.Vocabulary
		if grammarHandle != 0 {
			g, err := grammars.get(grammarHandle)
			if err != nil {
				return 0, err
			}
			s.grammar = g.Grammar
			voc = g.Vocabulary()
		}
		if vocabHandle != 0 {
			v, err := vocabs.get(vocabHandle)
			if err != nil {
				return 0, err
			}
			if voc == nil {
				voc = v
			}
		}
		s.isEOG = func(int) bool { return false }
		if voc != nil {
			s.params.DryVocab = voc
			s.isEOG = voc.IsEOG
			for id := 0; id < voc.Size(); id++ {
				if voc.IsEOG(id) {
					s.eog = append(s.eog, id)
				}
			}
		}
		// Check every parameter now, so a bad one fails at construction.
		p := s.params
		if p.NVocab == 0 && voc != nil {
			p.NVocab = voc.Size()
		}
		if p.NVocab == 0 && p.Mirostat == 1 {
			p.NVocab = 1 // known at the first sample, from the logits' width
		}
		_, warns, err := sampling.NewChainFromParams(p)
		if err != nil {
			return 0, paramError(err)
		}
		s.warns = warns
		return samplers.add(s), nil
	})
}

// newSeq starts a sequence; row > 0 offsets a fixed seed so that rows of one batch
// (num_return_sequences) draw differently.
func (s *sampler) newSeq(row, nVocab int) (*seqState, error) {
	p := s.params
	if p.NVocab == 0 {
		p.NVocab = nVocab
	}
	if row > 0 && p.Seed != sampling.DefaultSeed {
		p.Seed += uint32(row)
	}
	var g sampling.Grammar
	st := &seqState{}
	if s.grammar != nil {
		st.m = s.grammar.NewMatcher()
		g = st.m
	}
	sess, _, err := sampling.NewSessionFromParams(p, g)
	if err != nil {
		return nil, paramError(err)
	}
	st.sess = sess
	return st, nil
}

func (st *seqState) clone() *seqState {
	c := &seqState{promptLen: st.promptLen, finished: st.finished, dead: st.dead, err: st.err,
		hist: slices.Clone(st.hist)}
	ch := st.sess.Chain().Clone().(*sampling.Chain)
	var g sampling.Grammar
	if st.m != nil {
		c.m = st.m.Clone()
		g = c.m
	}
	c.sess = sampling.NewSession(ch, g, st.sess.GrammarFirst())
	return c
}

// acceptPrompt feeds prompt tokens to the chain's history only (llama.cpp accepts the
// prompt into the sampler without the grammar).
func (st *seqState) acceptPrompt(ids []int64) {
	for _, id := range ids {
		st.sess.Chain().Accept(int(id))
	}
	st.hist = append(st.hist, ids...)
	st.promptLen = len(st.hist)
}

// acceptGen records a generated token: the grammar first, then the chain's history.
func (st *seqState) acceptGen(id int64, isEOG func(int) bool) {
	st.hist = append(st.hist, id)
	if st.finished || st.dead {
		return // the host pads finished rows: their tokens mean nothing
	}
	if st.m != nil {
		if err := st.m.AcceptToken(int(id)); err != nil {
			st.dead, st.err = true, err
			return
		}
	}
	st.sess.Chain().Accept(int(id))
	st.finished = isEOG(int(id))
}

// extends reports whether row holds this sequence's tokens followed by at most one more.
func (st *seqState) extends(row []int64) bool {
	n := len(st.hist)
	return n <= len(row) && len(row)-n <= 1 && slices.Equal(st.hist, row[:n])
}

func (s *sampler) sample(st *seqState, logits []float32) (int, error) {
	if st.finished || st.dead {
		if len(s.eog) > 0 {
			return s.eog[0], nil
		}
	}
	id, err := st.sess.Sample(logits)
	if err != nil {
		// A grammar that hit an engine limit cannot promise an exact check or mask:
		// its *engine.LimitError is reported rather than a token it might refuse.
		var le *engine.LimitError
		if errors.As(err, &le) {
			return -1, coreError(err) // Python: GrammarLimitError
		}
		return -1, paramError(err)
	}
	return id, nil
}

// SamplerSample samples one token for the single sequence of a SamplerChain from
// n float32 logits at address logits. It does not record the token: call SamplerAccept.
func SamplerSample(h int64, logits uintptr, n int) (int, error) {
	return safecall.Do("SamplerSample", func() (int, error) {
		s, err := samplers.get(h)
		if err != nil {
			return 0, err
		}
		row, err := view[float32](logits, n, "logits")
		if err != nil {
			return 0, err
		}
		if n == 0 {
			return 0, paramError(sampling.ErrEmptyCandidates)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		st, err := s.single(n)
		if err != nil {
			return 0, err
		}
		return s.sample(st, row)
	})
}

// single is the SamplerChain's one sequence, made on first use.
func (s *sampler) single(nVocab int) (*seqState, error) {
	if len(s.rows) == 1 {
		return s.rows[0], nil
	}
	st, err := s.newSeq(0, nVocab)
	if err != nil {
		return nil, err
	}
	st.acceptPrompt(s.pending)
	s.rows, s.pending = []*seqState{st}, nil
	return st, nil
}

// SamplerAccept records a token of the SamplerChain's sequence: a prompt token goes
// into the history of penalties and DRY only; a generated one also advances the
// grammar (an error if it refuses the token; nothing changes then).
func SamplerAccept(h int64, id int, prompt bool, nVocab int) (bool, error) {
	return safecall.Do("SamplerAccept", func() (bool, error) {
		s, err := samplers.get(h)
		if err != nil {
			return false, err
		}
		if id < 0 {
			return false, paramError(&sampling.ParamError{Param: "token", Value: id, Reason: "token id must be >= 0"})
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if prompt && len(s.rows) == 0 && nVocab == 0 && s.params.NVocab == 0 {
			// Mirostat 1 needs the vocabulary size, known at the first sample.
			s.pending = append(s.pending, int64(id))
			return true, nil
		}
		st, err := s.single(nVocab)
		if err != nil {
			return false, err
		}
		if prompt {
			st.acceptPrompt([]int64{int64(id)})
			return true, nil
		}
		if st.m != nil && !st.finished {
			if err := st.m.AcceptToken(id); err != nil {
				return false, err
			}
		}
		st.hist = append(st.hist, int64(id))
		st.sess.Chain().Accept(id)
		st.finished = st.finished || s.isEOG(id)
		return true, nil
	})
}

// SamplerStepSample is the per-step call of tether.SamplingLogitsProcessor: it brings
// every row up to date with input_ids (row-major int64 [batch × seqLen]; the first
// call's input is the prompt, which goes into the penalty history), samples each row
// from scores (float32 [batch × vocabSize], CPU, contiguous) and writes the chosen ids
// into out (int64 [batch]). If outScores is not 0, it is a float32 [batch × vocabSize]
// buffer that gets -inf everywhere but at each row's chosen token, which keeps its score
// (0 when that score is not finite): the processor's result, written here in one pass.
//
// Rows are matched to their state by content: a row holding a known sequence plus one
// token continues it (beams reordered or duplicated included); anything else, or an
// input that did not grow by exactly one token, starts a new sequence.
func SamplerStepSample(h int64, ids uintptr, batch, seqLen int, scores uintptr, vocabSize int, out, outScores uintptr) (int, error) {
	return safecall.Do("SamplerStepSample", func() (int, error) {
		s, err := samplers.get(h)
		if err != nil {
			return 0, err
		}
		if batch <= 0 || seqLen <= 0 || vocabSize <= 0 {
			return 0, fmt.Errorf("bad shapes: batch %d, sequence length %d, vocabulary %d", batch, seqLen, vocabSize)
		}
		in, err := view[int64](ids, batch*seqLen, "input_ids")
		if err != nil {
			return 0, err
		}
		sc, err := view[float32](scores, batch*vocabSize, "scores")
		if err != nil {
			return 0, err
		}
		dst, err := view[int64](out, batch, "out")
		if err != nil {
			return 0, err
		}
		var res []float32
		if outScores != 0 {
			if res, err = view[float32](outScores, batch*vocabSize, "out_scores"); err != nil {
				return 0, err
			}
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if err := s.step(in, batch, seqLen, vocabSize); err != nil {
			return 0, err
		}
		for r := 0; r < batch; r++ {
			id, err := s.sample(s.rows[r], sc[r*vocabSize:(r+1)*vocabSize])
			if err != nil {
				var le *engine.LimitError
				if errors.As(err, &le) {
					return 0, coreError(fmt.Errorf("row %d: %w", r, le))
				}
				return 0, fmt.Errorf("row %d: %w", r, err)
			}
			dst[r] = int64(id)
			if res != nil {
				row := res[r*vocabSize : (r+1)*vocabSize]
				for i := range row {
					row[i] = session.NegInf32
				}
				if id >= 0 && id < vocabSize {
					v := sc[r*vocabSize+id]
					if math.IsInf(float64(v), 0) || math.IsNaN(float64(v)) {
						v = 0
					}
					row[id] = v
				}
			}
		}
		return batch, nil
	})
}

func (s *sampler) step(ids []int64, batch, seqLen, nVocab int) error {
	restart := len(s.rows) != batch || seqLen != s.lastLen+1
	s.lastLen = seqLen
	rows := make([]*seqState, batch)
	if !restart {
		// Find each row's parent before changing any state, then give the first row
		// of a parent the state itself and later ones clones.
		parents := make([]*seqState, batch)
		for r := 0; r < batch; r++ {
			cur := ids[r*seqLen : (r+1)*seqLen]
			if old := s.rows[r]; old.extends(cur) {
				parents[r] = old
				continue
			}
			for _, old := range s.rows {
				if old.extends(cur) {
					parents[r] = old
					break
				}
			}
		}
		claimed := map[*seqState]bool{}
		for r, p := range parents {
			switch {
			case p == nil:
			case !claimed[p]:
				claimed[p] = true
				rows[r] = p
			default:
				rows[r] = p.clone()
			}
		}
	}
	for r := 0; r < batch; r++ {
		cur := ids[r*seqLen : (r+1)*seqLen]
		st := rows[r]
		if st == nil {
			var err error
			if st, err = s.newSeq(r, nVocab); err != nil {
				return err
			}
			st.acceptPrompt(cur)
			rows[r] = st
			continue
		}
		for _, id := range cur[len(st.hist):] {
			st.acceptGen(id, s.isEOG)
		}
	}
	s.rows = rows
	return nil
}

// SamplerWarnings lists, as a JSON array of strings, warnings about the configuration
// (e.g. a sampler order that makes little sense).
func SamplerWarnings(h int64) (string, error) {
	return safecall.Do("SamplerWarnings", func() (string, error) {
		s, err := samplers.get(h)
		if err != nil {
			return "", err
		}
		b, _ := json.Marshal(append([]string{}, s.warns...))
		return string(b), nil
	})
}

// SamplerDescribe is the chain as llama.cpp prints it ("logits -> logit-bias -> ... ->
// dist") and the parameters in effect, as JSON {"chain": ..., "params": {...}}.
func SamplerDescribe(h int64) (string, error) {
	return safecall.Do("SamplerDescribe", func() (string, error) {
		s, err := samplers.get(h)
		if err != nil {
			return "", err
		}
		p := s.params
		if p.NVocab == 0 && p.Mirostat == 1 {
			p.NVocab = 1
		}
		ch, _, err := sampling.NewChainFromParams(p)
		if err != nil {
			return "", paramError(err)
		}
		params := map[string]string{}
		for _, spec := range sampling.ParamSpecs() {
			params[spec.Name] = spec.Get(&s.params)
		}
		b, _ := json.Marshal(map[string]any{"chain": ch.String(), "params": params})
		return string(b), nil
	})
}

// SamplerReset forgets every sequence: the next call starts anew (generators reseeded).
func SamplerReset(h int64) (bool, error) {
	return safecall.Do("SamplerReset", func() (bool, error) {
		s, err := samplers.get(h)
		if err != nil {
			return false, err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.rows, s.lastLen, s.pending = nil, 0, nil
		return true, nil
	})
}

// SamplerClose releases a sampler.
func SamplerClose(h int64) (bool, error) {
	return safecall.Do("SamplerClose", func() (bool, error) {
		_, err := samplers.remove(h)
		return err == nil, err
	})
}
