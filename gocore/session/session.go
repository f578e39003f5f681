// Package session tracks the grammar state of every row of a batched generation, for
// logits processors driven by a host that owns the tokens (🤗 transformers' generate).
//
// The host calls Step with the whole input_ids matrix at every step. Rows may be
// reordered between steps (beam search), duplicated (num_return_sequences) or finish
// early (end-of-generation, then padding), so a row's state is found from the tokens it
// holds, never from its row number: each row is split into its prompt and its generated
// part, the pair is hashed, and the hash of all but the last generated token names the
// state the row had one step earlier; accepting the last token gives its state now.
// Rows that hold the same prompt and tokens share one state, and its mask is computed
// once.
//
// A Session serves one stream of steps. In Free mode (a caller that cannot say where one
// generate call ends and the next begins) a step continues the previous one only when
// it is exactly one token longer and every row extends a row of that step; anything
// else starts a new generation whose prompt is the whole input. In Call mode the caller
// vouches that the steps belong to one generate call: the first step fixes the prompts,
// and later steps may have any length (assisted decoding checks candidates at several
// lengths); an input whose rows do not all begin with those prompts cannot be a step of
// the call (generate never changes its prompts) and starts a new generation.
//
// Processor (processor.go) puts sessions, masks and score rows together for one
// compiled grammar; this file knows nothing of grammars beyond the Matcher interface.
package session

import (
	"fmt"
	"sync"

	"github.com/tetherlm/tether/gocore/tokenmask"
)

// Matcher is the per-sequence grammar state the session drives (EngineMatcher adapts
// gocore/engine's *Matcher). M is the concrete type, so Clone needs no type assertion.
type Matcher[M any] interface {
	// AcceptToken advances the state by one token, or returns an error saying why the
	// token is not allowed (the state is then unchanged).
	AcceptToken(id int) error
	// FillMask writes the allowed-token bitset (bit i of word i/32 is token i), or
	// returns an error (a limit that prevents an exact mask) and no mask.
	FillMask(mask tokenmask.Mask) error
	// Clone returns an independent copy.
	Clone() M
}

// Mode says how a Session tells one generate call from the next.
type Mode uint8

const (
	// Free: the session guesses call boundaries from the input alone (see the package
	// doc). A call whose input is exactly the previous step's rows plus one token each
	// cannot be told from the next step of the same call, and continues it.
	Free Mode = iota
	// Call: the steps belong to the generate call whose first step created the
	// session; they may step back and forth (assisted decoding). Only an input that
	// does not extend the call's prompts starts over.
	Call
)

// Session maps the rows of a batch to grammar states across generation steps.
// It is not safe for concurrent use; one host calls Step at a time.
type Session[M Matcher[M]] struct {
	start func(prompt []int64) (M, error)
	isEOG func(id int) bool
	mode  Mode

	promptLen int
	batch     int
	lastLen   int
	prompts   map[uint64]*node[M] // this call's prompts (by hash): their start states

	prev map[uint64]*node[M] // states of the rows at the last step, by (prompt, generated) hash
	cur  map[uint64]*node[M]

	rowNode []*node[M] // the state of each row at this step
	rowSeed []uint64   // each row's prompt hash at this step
	// Rejected counts tokens the host chose that the grammar did not allow (another
	// processor overrode the mask, or the row was already finished and padded).
	Rejected int
	// Starts counts the generations begun (the first step, and every start-over).
	Starts int
}

// node is the state after a particular prompt and generated sequence.
type node[M Matcher[M]] struct {
	m        M
	finished bool  // an end-of-generation token was accepted: the row is done
	dead     bool  // the host chose a token the grammar rejects
	fatal    bool  // dead because of a limit, not the grammar: Step fails
	err      error // why it is dead
	maskDone bool
	maskErr  error
	mask     tokenmask.Mask
}

// New returns a session. start gives the state a row begins in after a prompt (for
// most grammars the same for every prompt: a clone of one root matcher; a grammar that
// wakes up after a marker already in the prompt starts awake). isEOG tells
// end-of-generation tokens.
func New[M Matcher[M]](start func(prompt []int64) (M, error), isEOG func(id int) bool, mode Mode) *Session[M] {
	return &Session[M]{start: start, isEOG: isEOG, mode: mode}
}

// FromRoot is a start function for New: every row starts from a clone of root.
func FromRoot[M Matcher[M]](root M) func([]int64) (M, error) {
	return func([]int64) (M, error) { return root.Clone(), nil }
}

// Reset forgets all rows; the next Step starts a new generation.
func (s *Session[M]) Reset() {
	s.promptLen, s.batch, s.lastLen = 0, 0, 0
	s.prompts, s.prev, s.cur, s.rowNode = nil, nil, nil, nil
}

const hashMul = 0x100000001b3 // FNV-1a's 64-bit prime: a cheap polynomial hash over ids

func hashIDs(ids []int64, h uint64) uint64 {
	for _, id := range ids {
		h = (h ^ uint64(id)) * hashMul
	}
	return h
}

const hashSeed = 0xcbf29ce484222325

// Step brings every row up to date with ids, a row-major [batch × seqLen] matrix of
// token ids. After Step, Mask(row) gives each row's allowed tokens. It fails on
// malformed input, when a row's start state cannot be made, and when a limit keeps the
// engine from following a row.
func (s *Session[M]) Step(ids []int64, batch, seqLen int) error {
	if batch <= 0 || seqLen < 0 || len(ids) != batch*seqLen {
		return fmt.Errorf("session: input_ids has %d values, want batch %d × length %d", len(ids), batch, seqLen)
	}
	if cap(s.rowSeed) < batch {
		s.rowSeed = make([]uint64, batch)
	}
	s.rowSeed = s.rowSeed[:batch]
	if s.prev == nil || s.checkContinues(ids, batch, seqLen) != nil {
		s.begin(ids, batch, seqLen)
	}
	s.lastLen = seqLen
	s.cur = make(map[uint64]*node[M], batch)
	if cap(s.rowNode) < batch {
		s.rowNode = make([]*node[M], batch)
	}
	s.rowNode = s.rowNode[:batch]
	for r := 0; r < batch; r++ {
		seed := s.rowSeed[r]
		gen := ids[r*seqLen+s.promptLen : (r+1)*seqLen]
		full := hashIDs(gen, seed)
		if n, ok := s.cur[full]; ok {
			s.rowNode[r] = n
			continue
		}
		start := s.prompts[seed]
		if start.err != nil {
			return start.err
		}
		var n *node[M]
		if len(gen) == 0 {
			n = start
		} else if parent, ok := s.prev[hashIDs(gen[:len(gen)-1], seed)]; ok {
			n = s.advance(parent, gen[len(gen)-1])
		} else {
			n = s.replay(start, gen) // unseen history (assisted decoding): rebuild it
		}
		if n.fatal {
			s.cur = nil
			return fmt.Errorf("row %d: %w", r, n.err)
		}
		s.cur[full] = n
		s.rowNode[r] = n
	}
	s.prev, s.cur = s.cur, nil
	return nil
}

// begin starts a new generation: the whole current input is the prompt. Each distinct
// prompt gets its start state now (an error is kept and reported by Step).
func (s *Session[M]) begin(ids []int64, batch, seqLen int) {
	s.Starts++
	s.promptLen, s.batch = seqLen, batch
	s.prompts = make(map[uint64]*node[M], batch)
	for r := 0; r < batch; r++ {
		prompt := ids[r*seqLen : (r+1)*seqLen]
		h := hashIDs(prompt, hashSeed)
		s.rowSeed[r] = h
		if _, ok := s.prompts[h]; !ok {
			m, err := s.start(prompt)
			s.prompts[h] = &node[M]{m: m, err: err}
		}
	}
	s.prev = map[uint64]*node[M]{}
}

// checkContinues reports why ids is not the next step of the current generation (nil
// when it is), filling s.rowSeed with each row's prompt hash as it goes.
func (s *Session[M]) checkContinues(ids []int64, batch, seqLen int) error {
	if s.mode == Free {
		if batch != s.batch || seqLen != s.lastLen+1 {
			return fmt.Errorf("session: input_ids is [%d, %d] after [%d, %d]", batch, seqLen, s.batch, s.lastLen)
		}
	} else if seqLen < s.promptLen {
		return fmt.Errorf("session: input_ids has %d tokens per row, shorter than this generate call's prompt (%d)", seqLen, s.promptLen)
	}
	for r := 0; r < batch; r++ {
		row := ids[r*seqLen : (r+1)*seqLen]
		seed := hashIDs(row[:s.promptLen], hashSeed)
		if _, ok := s.prompts[seed]; !ok {
			return fmt.Errorf("session: row %d of input_ids does not begin with a prompt of this generate call", r)
		}
		s.rowSeed[r] = seed
		if s.mode == Free {
			if _, ok := s.prev[hashIDs(row[s.promptLen:seqLen-1], seed)]; !ok {
				return fmt.Errorf("session: row %d of input_ids does not extend a row of the previous step", r)
			}
		}
	}
	return nil
}

// advance returns the state after parent accepts tok.
func (s *Session[M]) advance(parent *node[M], tok int64) *node[M] {
	if parent.finished || parent.dead {
		// Finished rows are padded by the host; their tokens mean nothing.
		return parent
	}
	m := parent.m.Clone()
	if err := m.AcceptToken(int(tok)); err != nil {
		if IsLimit(err) {
			// Not a verdict of the grammar: the state cannot be followed exactly.
			return &node[M]{m: m, dead: true, fatal: true, err: err}
		}
		s.Rejected++
		return &node[M]{m: m, dead: true, err: err}
	}
	return &node[M]{m: m, finished: s.isEOG(int(tok))}
}

func (s *Session[M]) replay(start *node[M], gen []int64) *node[M] {
	n := start
	for _, tok := range gen {
		n = s.advance(n, tok)
	}
	return n
}

// RowState describes a row after Step.
type RowState struct {
	Finished bool  // the row accepted an end-of-generation token
	Dead     bool  // the row holds a token the grammar rejects
	Err      error // why it is dead
}

// Row reports the state of row r after the last Step.
func (s *Session[M]) Row(r int) RowState {
	n := s.rowNode[r]
	return RowState{Finished: n.finished, Dead: n.dead, Err: n.err}
}

// DeadEndError says that a row's state allows no token at all, not even an end of
// generation: a mask of all -inf would leave the host nothing to choose.
type DeadEndError struct {
	Row    int
	Reason string
}

func (e *DeadEndError) Error() string {
	return fmt.Sprintf("session: row %d: no token is allowed (%s)", e.Row, e.Reason)
}

// Mask returns row r's allowed-token bitset of the given number of words, computing it
// once per distinct state. Finished and dead rows allow only end-of-generation tokens
// (eog is that bitset), so the host ends them. The slice is owned by the session and
// valid until the next Step. A mask that allows nothing is a *DeadEndError; a limit
// hit while computing it is returned as the matcher reported it.
func (s *Session[M]) Mask(r, words int, eog tokenmask.Mask) (tokenmask.Mask, error) {
	n := s.rowNode[r]
	if !n.maskDone || len(n.mask) != words {
		s.fill(n, words, eog)
	}
	if n.maskErr != nil {
		if de, ok := n.maskErr.(*DeadEndError); ok {
			return nil, &DeadEndError{Row: r, Reason: de.Reason}
		}
		return nil, fmt.Errorf("row %d: %w", r, n.maskErr)
	}
	return n.mask, nil
}

func (s *Session[M]) fill(n *node[M], words int, eog tokenmask.Mask) {
	if cap(n.mask) < words {
		n.mask = make(tokenmask.Mask, words)
	}
	n.mask = n.mask[:words]
	n.maskErr = nil
	reason := "the grammar allows nothing here and cannot end"
	if n.finished || n.dead {
		copy(n.mask, eog)
		clear(n.mask[min(len(eog), words):])
		reason = "the row has ended but there is no end-of-generation token to offer"
	} else if err := n.m.FillMask(n.mask); err != nil {
		clear(n.mask)
		n.maskErr = err
	}
	if n.maskErr == nil && !n.mask.Any() {
		n.maskErr = &DeadEndError{Row: -1, Reason: reason}
	}
	n.maskDone = true
}

// FillAll computes the masks of all rows, distinct states in parallel on up to
// `workers` goroutines (a batch's rows are independent). Errors are reported by Mask.
func (s *Session[M]) FillAll(words int, eog tokenmask.Mask, workers int) {
	todo := make([]*node[M], 0, len(s.rowNode))
	seen := make(map[*node[M]]bool, len(s.rowNode))
	for _, n := range s.rowNode {
		if (!n.maskDone || len(n.mask) != words) && !seen[n] {
			seen[n] = true
			todo = append(todo, n)
		}
	}
	if workers <= 1 || len(todo) <= 1 {
		for _, n := range todo {
			s.fill(n, words, eog)
		}
		return
	}
	var wg sync.WaitGroup
	next := make(chan *node[M])
	for w := 0; w < min(workers, len(todo)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range next {
				s.fill(n, words, eog)
			}
		}()
	}
	for _, n := range todo {
		next <- n
	}
	close(next)
	wg.Wait()
}
