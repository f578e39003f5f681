// Package session tracks the grammar state of every row of a batched generation, for
// logits processors driven by a host that owns the tokens (🤗 transformers' generate).
//
// The host calls Step with the whole input_ids matrix at every step. Rows may be
// reordered between steps (beam search), duplicated (num_return_sequences) or finish
// early (end-of-generation, then padding), so a row's state is found from the tokens it
// holds, never from its row number: the generated part of each row (everything after
// the prompt) is hashed, and the hash of all but its last token names the state the row
// had one step earlier; accepting the last token gives its state now. Rows that hold the
// same tokens share one state, and its mask is computed once.
//
// A new generate call (other prompts, another batch size, or an input that jumped
// ahead by more than one token) starts over; Reset forces it.
//
// The package knows nothing of grammars beyond the Matcher interface, and nothing of
// Python.
package session

import (
	"fmt"
	"sync"
)

// Matcher is the per-sequence grammar state the session drives (gocore/engine's
// *Matcher satisfies it). M is the concrete type, so Clone needs no type assertion.
type Matcher[M any] interface {
	// AcceptToken advances the state by one token, or returns an error saying why the
	// token is not allowed (the state is then unchanged).
	AcceptToken(id int) error
	// FillMask writes the allowed-token bitset (bit i of word i/32 is token i), or
	// returns an error (then the mask must not be used: e.g. a grammar limit).
	FillMask(mask []uint32) error
	// Clone returns an independent copy.
	Clone() M
}

// Session maps the rows of a batch to grammar states across generation steps.
// It is not safe for concurrent use; one host calls Step at a time.
type Session[M Matcher[M]] struct {
	root  M
	isEOG func(id int) bool

	promptLen int
	batch     int
	lastLen   int
	prompts   map[uint64]bool // hashes of the prompts of this generate call

	prev map[uint64]*node[M] // states of the rows at the last step, by generated-token hash
	cur  map[uint64]*node[M]

	rowNode []*node[M] // the state of each row at this step
	// Rejected counts tokens the host chose that the grammar did not allow (another
	// processor overrode the mask, or the row was already finished and padded).
	Rejected int
}

// node is the state after a particular generated sequence.
type node[M Matcher[M]] struct {
	m        M
	finished bool  // an end-of-generation token was accepted: the row is done
	dead     bool  // the host chose a token the grammar rejects
	err      error // why it is dead
	maskDone bool
	maskErr  error // why the mask could not be computed
	mask     []uint32
}

// New returns a session whose rows start from root (which the session never
// modifies; it clones it). isEOG tells end-of-generation tokens.
func New[M Matcher[M]](root M, isEOG func(id int) bool) *Session[M] {
	return &Session[M]{root: root, isEOG: isEOG}
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
// token ids, and returns an error only for malformed input. After Step, Mask(row)
// gives each row's allowed tokens.
func (s *Session[M]) Step(ids []int64, batch, seqLen int) error {
	if batch <= 0 || seqLen < 0 || len(ids) != batch*seqLen {
		return fmt.Errorf("session: input_ids has %d values, want batch %d × length %d", len(ids), batch, seqLen)
	}
	// A new generate call shows as a different batch, other prompts, or an input that
	// jumped ahead. An input that did not grow by exactly one (assisted decoding checks
	// candidates at several lengths; the same prompt generated again) continues: states
	// are found by content, and rows whose history is not at hand are replayed.
	if s.prev == nil || batch != s.batch || seqLen > s.lastLen+1 || seqLen < s.promptLen ||
		!s.samePrompts(ids, batch, seqLen) {
		s.start(ids, batch, seqLen)
	}
	s.lastLen = seqLen
	s.cur = make(map[uint64]*node[M], batch)
	if cap(s.rowNode) < batch {
		s.rowNode = make([]*node[M], batch)
	}
	s.rowNode = s.rowNode[:batch]
	for r := 0; r < batch; r++ {
		gen := ids[r*seqLen+s.promptLen : (r+1)*seqLen]
		full := hashIDs(gen, hashSeed)
		if n, ok := s.cur[full]; ok {
			s.rowNode[r] = n
			continue
		}
		var n *node[M]
		if len(gen) == 0 {
			n = &node[M]{m: s.root.Clone()}
		} else if parent, ok := s.prev[hashIDs(gen[:len(gen)-1], hashSeed)]; ok {
			n = s.advance(parent, gen[len(gen)-1])
		} else {
			n = s.replay(gen) // unseen history: rebuild it from the start
		}
		s.cur[full] = n
		s.rowNode[r] = n
	}
	s.prev, s.cur = s.cur, nil
	return nil
}

// start begins a new generate call: the whole current input is the prompt.
func (s *Session[M]) start(ids []int64, batch, seqLen int) {
	s.promptLen, s.batch = seqLen, batch
	s.prompts = make(map[uint64]bool, batch)
	for r := 0; r < batch; r++ {
		s.prompts[hashIDs(ids[r*seqLen:r*seqLen+seqLen], hashSeed)] = true
	}
	s.prev = map[uint64]*node[M]{}
}

// samePrompts reports whether every row still begins with one of this call's prompts.
func (s *Session[M]) samePrompts(ids []int64, batch, seqLen int) bool {
	if s.promptLen > seqLen {
		return false
	}
	for r := 0; r < batch; r++ {
		if !s.prompts[hashIDs(ids[r*seqLen:r*seqLen+s.promptLen], hashSeed)] {
			return false
		}
	}
	return true
}

// advance returns the state after parent accepts tok.
func (s *Session[M]) advance(parent *node[M], tok int64) *node[M] {
	if parent.finished || parent.dead {
		// Finished rows are padded by the host; their tokens mean nothing.
		return parent
	}
	m := parent.m.Clone()
	if err := m.AcceptToken(int(tok)); err != nil {
		s.Rejected++
		return &node[M]{m: m, dead: true, err: err}
	}
	return &node[M]{m: m, finished: s.isEOG(int(tok))}
}

func (s *Session[M]) replay(gen []int64) *node[M] {
	n := &node[M]{m: s.root.Clone()}
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

// Mask returns row r's allowed-token bitset of the given number of words, computing it
// once per distinct state. Finished and dead rows allow only end-of-generation tokens
// (eog is that bitset), so the host ends them. The slice is owned by the session and
// valid until the next Step. An error from the matcher's FillMask is returned
// instead of a mask.
func (s *Session[M]) Mask(r, words int, eog []uint32) ([]uint32, error) {
	n := s.rowNode[r]
	if !n.maskDone {
		s.fill(n, words, eog)
	}
	if n.maskErr != nil {
		return nil, n.maskErr
	}
	return n.mask, nil
}

func (s *Session[M]) fill(n *node[M], words int, eog []uint32) {
	if cap(n.mask) < words {
		n.mask = make([]uint32, words)
	}
	n.mask = n.mask[:words]
	if n.finished || n.dead {
		copy(n.mask, eog)
		clear(n.mask[min(len(eog), words):])
	} else {
		n.maskErr = n.m.FillMask(n.mask)
	}
	n.maskDone = true
}

// FillAll computes the masks of all rows, distinct states in parallel on up to
// `workers` goroutines (a batch's rows are independent). It returns the first
// row's error, if any (see Mask).
func (s *Session[M]) FillAll(words int, eog []uint32, workers int) error {
	todo := make([]*node[M], 0, len(s.rowNode))
	seen := make(map[*node[M]]bool, len(s.rowNode))
	for _, n := range s.rowNode {
		if !n.maskDone && !seen[n] {
			seen[n] = true
			todo = append(todo, n)
		}
	}
	if workers <= 1 || len(todo) <= 1 {
		for _, n := range todo {
			s.fill(n, words, eog)
		}
		return s.firstErr()
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
	return s.firstErr()
}

// firstErr returns the first row's mask error, if any.
func (s *Session[M]) firstErr() error {
	for _, n := range s.rowNode {
		if n.maskErr != nil {
			return n.maskErr
		}
	}
	return nil
}
