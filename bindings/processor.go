package bindings

import (
	"fmt"

	"github.com/tetherlm/tether/gocore/tokenmask"

	"github.com/tetherlm/tether/gocore/safecall"
	"github.com/tetherlm/tether/gocore/session"
)

// Processors are gocore/session processors; this file only checks the buffers Python
// hands over and converts errors.
var processors = newRegistry[*session.Processor]("processor")

// ProcessorNew makes a processor for a compiled grammar.
func ProcessorNew(grammarHandle int64) (int64, error) {
	return safecall.Do("ProcessorNew", func() (int64, error) {
		g, err := grammars.get(grammarHandle)
		if err != nil {
			return 0, err
		}
		return processors.add(session.NewProcessor(g)), nil
	})
}

// step describes a call: key names the generate call or free stream, mode is a
// session.StepMode (0 free, 1 a call's first step, 2 a later step), ids the address of
// a row-major int64 [batch × seqLen] buffer of idsLen values.
func step(key int64, mode int, ids uintptr, idsLen, batch, seqLen int) (session.Step, error) {
	if mode < int(session.FreeStep) || mode > int(session.CallStep) {
		return session.Step{}, fmt.Errorf("step mode %d is not 0, 1 or 2", mode)
	}
	if batch <= 0 || seqLen < 0 {
		return session.Step{}, fmt.Errorf("input_ids: bad shape [%d, %d]", batch, seqLen)
	}
	if idsLen != batch*seqLen {
		return session.Step{}, fmt.Errorf("input_ids: buffer of %d values for shape [%d, %d]", idsLen, batch, seqLen)
	}
	buf, err := view[int64](ids, idsLen, "input_ids")
	if err != nil {
		return session.Step{}, err
	}
	return session.Step{Key: key, Mode: session.StepMode(mode), IDs: buf, Batch: batch, SeqLen: seqLen}, nil
}

// ProcessorFillMasks brings the call up to date with input_ids and writes each row's
// allowed-token bitset for width columns into the caller's uint32 buffer of masksLen
// values ([batch × ceil(width/32)]). It returns the number of rows.
func ProcessorFillMasks(h, key int64, mode int, ids uintptr, idsLen, batch, seqLen int, masks uintptr, masksLen, width int) (int, error) {
	return safecall.Do("ProcessorFillMasks", func() (int, error) {
		p, err := processors.get(h)
		if err != nil {
			return 0, err
		}
		st, err := step(key, mode, ids, idsLen, batch, seqLen)
		if err != nil {
			return 0, err
		}
		if width <= 0 || masksLen != batch*tokenmask.Words(width) {
			return 0, fmt.Errorf("masks: buffer of %d words for %d rows of width %d", masksLen, batch, width)
		}
		dst, err := view[uint32](masks, masksLen, "masks")
		if err != nil {
			return 0, err
		}
		return batch, coreError(p.FillMasks(st, dst, width))
	})
}

// ProcessorStepApply brings the call up to date with input_ids and copies the scores
// (row-major [batch × width], scoresLen values of dtype "float32", "bfloat16" or
// "float16", CPU, contiguous) from src to dst with -inf for every token the row's
// state does not allow. src and dst may be the same buffer; both hold scoresLen values.
func ProcessorStepApply(h, key int64, mode int, ids uintptr, idsLen, batch, seqLen int, src, dst uintptr, scoresLen, width int, dtype string) (int, error) {
	return safecall.Do("ProcessorStepApply", func() (int, error) {
		p, err := processors.get(h)
		if err != nil {
			return 0, err
		}
		st, err := step(key, mode, ids, idsLen, batch, seqLen)
		if err != nil {
			return 0, err
		}
		if width <= 0 || scoresLen != batch*width {
			return 0, fmt.Errorf("scores: buffer of %d values for %d rows of width %d", scoresLen, batch, width)
		}
		switch dtype {
		case "float32":
			in, out, err := views[float32](src, dst, scoresLen)
			if err != nil {
				return 0, err
			}
			return batch, coreError(session.Apply(p, st, in, out, width, session.NegInf32))
		case "bfloat16", "float16":
			in, out, err := views[uint16](src, dst, scoresLen)
			if err != nil {
				return 0, err
			}
			inf := session.NegInfBF16
			if dtype == "float16" {
				inf = session.NegInfF16
			}
			return batch, coreError(session.Apply(p, st, in, out, width, inf))
		}
		return 0, fmt.Errorf("scores: dtype %q is not float32, bfloat16 or float16", dtype)
	})
}

func views[T any](src, dst uintptr, n int) ([]T, []T, error) {
	in, err := view[T](src, n, "scores")
	if err != nil {
		return nil, nil, err
	}
	out, err := view[T](dst, n, "out")
	return in, out, err
}

// ProcessorEnd drops the session of a generate call or free stream; it reports
// whether there was one.
func ProcessorEnd(h, key int64) (bool, error) {
	return safecall.Do("ProcessorEnd", func() (bool, error) {
		p, err := processors.get(h)
		if err != nil {
			return false, err
		}
		return p.End(key), nil
	})
}

// ProcessorCalls is the number of sessions (open generate calls and free streams).
func ProcessorCalls(h int64) (int, error) {
	return safecall.Do("ProcessorCalls", func() (int, error) {
		p, err := processors.get(h)
		if err != nil {
			return 0, err
		}
		return p.Calls(), nil
	})
}

// ProcessorRejected is how many chosen tokens the grammar rejected since the
// processor was made or reset, over all calls.
func ProcessorRejected(h int64) (int, error) {
	return safecall.Do("ProcessorRejected", func() (int, error) {
		p, err := processors.get(h)
		if err != nil {
			return 0, err
		}
		return p.Rejected(), nil
	})
}

// ProcessorReset drops every session: the next step starts a new generation.
func ProcessorReset(h int64) (bool, error) {
	return safecall.Do("ProcessorReset", func() (bool, error) {
		p, err := processors.get(h)
		if err != nil {
			return false, err
		}
		p.Reset()
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
