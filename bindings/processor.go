package bindings

import (
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"sync"

	"github.com/tetherlm/tether/gocore/engine"
	"github.com/tetherlm/tether/gocore/safecall"
	"github.com/tetherlm/tether/gocore/session"
)

// processor is the Go half of a transformers logits processor: a session of rows over
// one compiled grammar, and the end-of-generation bitset at the mask width in use.
type processor struct {
	mu      sync.Mutex // gopy releases the GIL: two Python threads could call at once
	grammar *engine.Grammar
	sess    *session.Session[*engine.Matcher]
	eogIDs  []int
	eog     []uint32 // bitset of eogIDs at len(eog) words
}

var processors = newRegistry[*processor]("processor")

// ProcessorNew makes a processor for a compiled grammar.
func ProcessorNew(grammarHandle int64) (int64, error) {
	return safecall.Do("ProcessorNew", func() (int64, error) {
		g, err := grammars.get(grammarHandle)
		if err != nil {
			return 0, err
		}
		v := g.Vocabulary()
		var eog []int
		for id := 0; id < v.Size(); id++ {
			if v.IsEOG(id) {
				eog = append(eog, id)
			}
		}
		p := &processor{grammar: g, eogIDs: eog}
		p.sess = session.New(g.NewMatcher(), v.IsEOG)
		return processors.add(p), nil
	})
}

func (p *processor) eogBits(words int) []uint32 {
	if len(p.eog) != words {
		p.eog = make([]uint32, words)
		for _, id := range p.eogIDs {
			if id/32 < words {
				p.eog[id/32] |= 1 << (id % 32)
			}
		}
	}
	return p.eog
}

// masks computes every row's allowed-token bitset at the given width (distinct states
// once each, in parallel) and returns them by row. The caller holds p.mu.
func (p *processor) masks(batch, words int) ([][]uint32, error) {
	eog := p.eogBits(words)
	if err := p.sess.FillAll(words, eog, workers(batch)); err != nil {
		return nil, err
	}
	out := make([][]uint32, batch)
	for r := range out {
		m, err := p.sess.Mask(r, words, eog)
		if err != nil {
			return nil, err
		}
		out[r] = m
	}
	return out, nil
}

// ProcessorStep brings the rows up to date with input_ids, a row-major int64
// [batch × seqLen] buffer, and returns how many chosen tokens the grammar has rejected
// so far in this generation.
func ProcessorStep(h int64, ids uintptr, batch, seqLen int) (int, error) {
	return safecall.Do("ProcessorStep", func() (int, error) {
		p, err := processors.get(h)
		if err != nil {
			return 0, err
		}
		if batch <= 0 || seqLen < 0 {
			return 0, fmt.Errorf("input_ids: bad shape [%d, %d]", batch, seqLen)
		}
		buf, err := view[int64](ids, batch*seqLen, "input_ids")
		if err != nil {
			return 0, err
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		if err := p.sess.Step(buf, batch, seqLen); err != nil {
			return 0, err
		}
		return p.sess.Rejected, nil
	})
}

// workers is how many goroutines compute a batch's masks.
func workers(batch int) int { return min(batch, runtime.GOMAXPROCS(0)) }

// ProcessorFillMasks writes each row's allowed-token bitset into the caller's int32
// [batch × words] buffer (after ProcessorStep).
func ProcessorFillMasks(h int64, masks uintptr, batch, words int) (int, error) {
	return safecall.Do("ProcessorFillMasks", func() (int, error) {
		p, err := processors.get(h)
		if err != nil {
			return 0, err
		}
		dst, err := view[uint32](masks, batch*words, "masks")
		if err != nil {
			return 0, err
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		ms, err := p.masks(batch, words)
		if err != nil {
			return 0, err
		}
		for r, m := range ms {
			copy(dst[r*words:(r+1)*words], m)
		}
		return batch, nil
	})
}

// ProcessorStepApply is ProcessorStep followed by ProcessorApply in one call: the
// per-step path of the Python processor for CPU scores.
func ProcessorStepApply(h int64, ids uintptr, batch, seqLen int, src, dst uintptr, vocabSize int, dtype string) (int, error) {
	if _, err := ProcessorStep(h, ids, batch, seqLen); err != nil {
		return 0, err
	}
	return ProcessorApply(h, src, dst, batch, vocabSize, dtype)
}

// ProcessorApply copies scores [batch × vocab] from src to dst, writing -inf for every
// token the row's grammar state does not allow (after ProcessorStep). dtype is
// "float32", "bfloat16" or "float16" (CPU, contiguous); src and dst may be the same
// buffer. Doing this in Go, in one pass, avoids a bitmask round trip through torch.
func ProcessorApply(h int64, src, dst uintptr, batch, vocabSize int, dtype string) (int, error) {
	return safecall.Do("ProcessorApply", func() (int, error) {
		p, err := processors.get(h)
		if err != nil {
			return 0, err
		}
		n := batch * vocabSize
		words := (vocabSize + 31) / 32
		var apply func(r int, mask []uint32)
		switch dtype {
		case "float32":
			in, err := view[float32](src, n, "scores")
			if err != nil {
				return 0, err
			}
			out, err := view[float32](dst, n, "out")
			if err != nil {
				return 0, err
			}
			apply = func(r int, mask []uint32) {
				applyMask(out[r*vocabSize:(r+1)*vocabSize], in[r*vocabSize:(r+1)*vocabSize], mask, negInf)
			}
		case "bfloat16", "float16":
			in, err := view[uint16](src, n, "scores")
			if err != nil {
				return 0, err
			}
			out, err := view[uint16](dst, n, "out")
			if err != nil {
				return 0, err
			}
			inf := uint16(0xFF80) // bfloat16 -inf
			if dtype == "float16" {
				inf = 0xFC00
			}
			apply = func(r int, mask []uint32) {
				applyMask(out[r*vocabSize:(r+1)*vocabSize], in[r*vocabSize:(r+1)*vocabSize], mask, inf)
			}
		default:
			return 0, fmt.Errorf("scores: dtype %q is not float32, bfloat16 or float16", dtype)
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		masks, err := p.masks(batch, words)
		if err != nil {
			return 0, err
		}
		parallelRows(batch, func(r int) { apply(r, masks[r]) })
		return batch, nil
	})
}

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

var negInf = float32(math.Inf(-1))

// applyMask sets out[i] = in[i] where bit i of mask is set and masked elsewhere. It
// copies the row in one bulk move (skipped when out and in are the same memory), then
// writes only the masked positions, walking the zero bits of each word.
func applyMask[T float32 | uint16](out, in []T, mask []uint32, masked T) {
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
}

// ProcessorRejected is how many chosen tokens the grammar rejected in this generation.
func ProcessorRejected(h int64) (int, error) {
	return safecall.Do("ProcessorRejected", func() (int, error) {
		p, err := processors.get(h)
		if err != nil {
			return 0, err
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.sess.Rejected, nil
	})
}

// ProcessorReset forgets all rows: the next step starts a new generation.
func ProcessorReset(h int64) (bool, error) {
	return safecall.Do("ProcessorReset", func() (bool, error) {
		p, err := processors.get(h)
		if err != nil {
			return false, err
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		p.sess.Reset()
		return true, nil
	})
}

// ProcessorClose releases a processor.
func ProcessorClose(h int64) (bool, error) {
	return safecall.Do("ProcessorClose", func() (bool, error) {
		_, err := processors.remove(h)
		return err == nil, err
	})
}
