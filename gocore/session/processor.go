package session

import (
	"bytes"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/tetherlm/tether/gocore/tokenmask"
)

// StepMode says what a processor step belongs to.
type StepMode int

const (
	// FreeStep: a step of a stream whose call boundaries the processor guesses (a
	// Free session: see Mode). Used for direct calls outside generate.
	FreeStep StepMode = iota
	// CallBegin: the first step of a generate call; the key must be new (an old
	// session under it is dropped).
	CallBegin
	// CallStep: a later step of the generate call begun under the same key.
	CallStep
)

// Step is one call of a logits processor: the host's token matrix and which stream or
// generate call it belongs to.
type Step struct {
	Key    int64    // names the stream or generate call (chosen by the host)
	Mode   StepMode // see StepMode
	IDs    []int64  // row-major [Batch × SeqLen] token ids
	Batch  int
	SeqLen int
}

// Processor is the Go half of a transformers logits processor over one compiled
// grammar: one Session per generate call (or per free stream), so concurrent calls
// sharing the processor never see each other's rows. Safe for concurrent use; steps of
// different keys run in parallel.
type Processor struct {
	g      *Grammar
	eogIDs []int

	mu    sync.Mutex
	calls map[int64]*call
	clock uint64
	idle  []EngineMatcher // root matchers of ended calls, warm for the next call

	rejected atomic.Int64
}

// call is one session and its per-width end-of-generation bitset.
type call struct {
	mu       sync.Mutex
	root     EngineMatcher
	sess     *Session[EngineMatcher]
	eog      tokenmask.Mask
	rejected int // sess.Rejected already added to the processor's count
	lastUse  uint64
}

// MaxCalls bounds the sessions a processor keeps; beyond it the least recently used
// is dropped (a later CallStep under its key is an error, never a guess).
const MaxCalls = 1024

// NewProcessor returns a processor for g. End-of-generation tokens are the grammar's
// vocabulary's.
func NewProcessor(g *Grammar) *Processor {
	v := g.Vocabulary()
	var eog []int
	for id := 0; id < v.Size(); id++ {
		if v.IsEOG(id) {
			eog = append(eog, id)
		}
	}
	return &Processor{g: g, eogIDs: eog, calls: map[int64]*call{}}
}

// Grammar is the processor's compiled grammar.
func (p *Processor) Grammar() *Grammar { return p.g }

// Rejected is how many chosen tokens the grammar rejected since the processor was
// made or Reset, over all calls.
func (p *Processor) Rejected() int { return int(p.rejected.Load()) }

// Reset drops every session: free streams start over, and later steps of calls begun
// before fail.
func (p *Processor) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = map[int64]*call{}
	p.rejected.Store(0)
}

// End drops the session of a key (a generate call that returned, a thread that
// exited). It reports whether there was one.
func (p *Processor) End(key int64) bool {
	p.mu.Lock()
	c, ok := p.calls[key]
	delete(p.calls, key)
	p.mu.Unlock()
	if !ok {
		return false
	}
	// Once no step of the call runs any more, its root matcher is free for the next.
	c.mu.Lock()
	c.sess = nil
	c.mu.Unlock()
	p.mu.Lock()
	if len(p.idle) < maxIdle {
		p.idle = append(p.idle, c.root)
	}
	p.mu.Unlock()
	return true
}

// maxIdle bounds the warm root matchers a processor keeps for later calls.
const maxIdle = 8

// Calls is the number of sessions the processor holds.
func (p *Processor) Calls() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.calls)
}

func (p *Processor) call(key int64, mode StepMode) (*call, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clock++
	c := p.calls[key]
	switch {
	case mode == CallStep && c == nil:
		return nil, fmt.Errorf("session: no generate call under key %d (it ended, the processor was reset, or more than %d calls were open)", key, MaxCalls)
	case mode == CallStep && c.sess.mode != Call:
		return nil, fmt.Errorf("session: key %d names a free stream, not a generate call", key)
	case c == nil || mode == CallBegin || (mode == FreeStep && c.sess.mode != Free):
		if c == nil && len(p.calls) >= MaxCalls {
			p.evictLocked()
		}
		m := Free
		if mode != FreeStep {
			m = Call
		}
		// Each call gets its own root matcher, so its caches and lock are its own and
		// calls run in parallel; an ended call's root (warm transitions) is reused.
		var root EngineMatcher
		if n := len(p.idle); n > 0 {
			root, p.idle = p.idle[n-1], p.idle[:n-1]
		} else {
			root = p.g.NewMatcher()
		}
		c = &call{root: root, sess: New(p.startFunc(root), p.g.Vocabulary().IsEOG, m)}
		p.calls[key] = c
	}
	c.lastUse = p.clock
	return c, nil
}

func (p *Processor) evictLocked() {
	var oldest int64
	first := true
	for k, c := range p.calls {
		if first || c.lastUse < p.calls[oldest].lastUse {
			oldest, first = k, false
		}
	}
	delete(p.calls, oldest)
}

// startFunc returns where a row begins after its prompt. A lazy grammar whose After
// marker already ends the prompt (the last occurrence not followed by a new opening,
// such as Qwen3's chat template closing an empty thinking block) starts awake, at the
// first generated token; otherwise every row starts from a clone of root.
func (p *Processor) startFunc(root EngineMatcher) func([]int64) (EngineMatcher, error) {
	t := p.g.Spec.Triggers
	if t == nil || t.After == "" {
		return FromRoot(root)
	}
	after := []byte(t.After)
	var opening []byte
	if bytes.HasPrefix(after, []byte("</")) {
		opening = append([]byte("<"), after[2:]...)
	}
	v := p.g.Vocabulary()
	afterID, hasID := v.TokenID(t.After)
	return func(prompt []int64) (EngineMatcher, error) {
		m := root.Clone()
		var text []byte
		for _, id := range prompt {
			if id < 0 || id >= int64(v.Size()) {
				continue // padding ids beyond the tokenizer carry no text
			}
			b := v.TokenBytes(int(id))
			if len(b) == 0 && hasID && int(id) == afterID {
				b = after // the marker is a special token without text
			}
			text = append(text, b...)
		}
		i := bytes.LastIndex(text, after)
		if i < 0 || (opening != nil && bytes.Contains(text[i+len(after):], opening)) {
			return m, nil
		}
		if err := m.AcceptBytes(after); err != nil {
			return m, fmt.Errorf("session: the prompt ends with the marker %q but the grammar cannot start after it: %w", t.After, err)
		}
		return m, nil
	}
}

// step runs st under its call's lock, then f with the call's session.
func (p *Processor) step(st Step, f func(c *call) error) error {
	if st.Batch <= 0 || st.SeqLen < 0 || len(st.IDs) != st.Batch*st.SeqLen {
		return fmt.Errorf("input_ids: %d values for shape [%d, %d]", len(st.IDs), st.Batch, st.SeqLen)
	}
	c, err := p.call(st.Key, st.Mode)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sess == nil {
		return fmt.Errorf("session: the call under key %d ended while a step of it ran", st.Key)
	}
	err = c.sess.Step(st.IDs, st.Batch, st.SeqLen)
	if d := c.sess.Rejected - c.rejected; d != 0 {
		p.rejected.Add(int64(d))
		c.rejected = c.sess.Rejected
	}
	if err != nil {
		return err
	}
	return f(c)
}

func (p *Processor) eogBits(c *call, words int) tokenmask.Mask {
	if len(c.eog) != words {
		c.eog = make(tokenmask.Mask, words)
		for _, id := range p.eogIDs {
			c.eog.Set(id)
		}
	}
	return c.eog
}

// checkWidth refuses score rows narrower than the tokenizer's vocabulary.
func (p *Processor) checkWidth(width int) error {
	if n := p.g.Vocabulary().Size(); width < n {
		return fmt.Errorf("scores: %d columns, fewer than the %d token ids of the grammar's tokenizer (a tokenizer made for another model?)", width, n)
	}
	return nil
}

// masks computes every row's mask at the given width and calls f for each row, rows in
// parallel. The first error (a limit, a dead end) is returned and f is not called.
func (p *Processor) masks(c *call, batch, words int, f func(r int, mask tokenmask.Mask)) error {
	eog := p.eogBits(c, words)
	c.sess.FillAll(words, eog, workers(batch))
	masks := make([]tokenmask.Mask, batch)
	for r := range masks {
		m, err := c.sess.Mask(r, words, eog)
		if err != nil {
			return err
		}
		masks[r] = m
	}
	parallelRows(batch, func(r int) { f(r, masks[r]) })
	return nil
}

// FillMasks brings st's call up to date and writes each row's allowed-token bitset of
// width columns into dst, row-major [Batch × ceil(width/32)] uint32 words.
func (p *Processor) FillMasks(st Step, dst []uint32, width int) error {
	if err := p.checkWidth(width); err != nil {
		return err
	}
	words := tokenmask.Words(width)
	if len(dst) != st.Batch*words {
		return fmt.Errorf("masks: buffer of %d words, want %d rows × %d words", len(dst), st.Batch, words)
	}
	return p.step(st, func(c *call) error {
		return p.masks(c, st.Batch, words, func(r int, m tokenmask.Mask) { copy(dst[r*words:(r+1)*words], m) })
	})
}

// Float is the element type of score rows Apply writes: float32, or the raw bits of
// bfloat16 / float16 (uint16).
type Float interface{ float32 | uint16 }

// NegInf32 and the 16-bit -inf patterns are the values masked scores get.
var NegInf32 = float32(math.Inf(-1))

const (
	NegInfBF16 uint16 = 0xFF80
	NegInfF16  uint16 = 0xFC00
)

// Apply brings st's call up to date and copies the scores in (row-major [Batch ×
// width]) to out, writing masked for every token the row's state does not allow. in
// and out may be the same memory. Nothing is written when it fails.
func Apply[T Float](p *Processor, st Step, in, out []T, width int, masked T) error {
	if err := p.checkWidth(width); err != nil {
		return err
	}
	if len(in) != st.Batch*width || len(out) != len(in) {
		return fmt.Errorf("scores: %d in and %d out values, want %d rows × %d columns", len(in), len(out), st.Batch, width)
	}
	words := tokenmask.Words(width)
	return p.step(st, func(c *call) error {
		return p.masks(c, st.Batch, words, func(r int, m tokenmask.Mask) {
			ApplyMask(out[r*width:(r+1)*width], in[r*width:(r+1)*width], m, masked)
		})
	})
}

// workers is how many goroutines compute a batch's masks.
func workers(batch int) int { return min(batch, runtime.GOMAXPROCS(0)) }

// parallelRows runs f for every row, on up to GOMAXPROCS goroutines when there are
// several rows (each row's scores are separate memory).
func parallelRows(batch int, f func(r int)) {
	w := workers(batch)
	if w <= 1 {
		for r := 0; r < batch; r++ {
			f(r)
		}
		return
	}
	var wg sync.WaitGroup
	for g := 0; g < w; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for r := g; r < batch; r += w {
				f(r)
			}
		}(g)
	}
	wg.Wait()
}

// ApplyMask sets out[i] = in[i] where bit i of mask is set and masked elsewhere. It
// copies the row in one bulk move (skipped when out and in are the same memory), then
// writes only the masked positions, walking the zero bits of each word. Columns past
// the mask's words are masked.
func ApplyMask[T Float](out, in []T, mask tokenmask.Mask, masked T) {
	n := len(in)
	if len(out) > 0 && &out[0] != &in[0] {
		copy(out, in)
	}
	for w, word := range mask {
		lo := w * 32
		if lo >= n {
			break
		}
		if word == ^uint32(0) {
			continue
		}
		hi := min(lo+32, n)
		if word == 0 {
			row := out[lo:hi]
			for i := range row {
				row[i] = masked
			}
			continue
		}
		for z := ^word; z != 0; z &= z - 1 {
			if i := lo + bits.TrailingZeros32(z); i < hi {
				out[i] = masked
			}
		}
	}
	for i := len(mask) * 32; i < n; i++ {
		out[i] = masked
	}
}
