package bindings

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"

	"github.com/tetherlm/tether/gocore/tokenmask"

	"github.com/tetherlm/tether/gocore/safecall"
	"github.com/tetherlm/tether/gocore/session"
)

// The bitmask API for callers that run their own decoding loop (vLLM, SGLang, a
// hand-written loop): the caller owns an int32 [rows × words] buffer in xgrammar's
// layout (bit i of word i/32 of a row is token i, least significant bit first) and asks
// matchers to fill rows of it. Buffers are used for the call's duration only.

// bitmaskRows checks a caller's [rows × words] bitmask buffer and returns it.
func bitmaskRows(buf uintptr, rows, words int) (tokenmask.Mask, error) {
	if rows <= 0 || words <= 0 {
		return nil, fmt.Errorf("bitmask: bad shape [%d, %d]", rows, words)
	}
	v, err := view[uint32](buf, rows*words, "bitmask")
	return tokenmask.Mask(v), err
}

// fillRow fills one row of a bitmask from matcher h and returns the number of allowed
// tokens when count is set (else 0); the row is cleared when it fails.
func fillRow(h int64, dst tokenmask.Mask, count bool) (int, error) {
	m, err := matchers.get(h)
	if err != nil {
		clear(dst)
		return 0, err
	}
	return fillMatcherRow(m, dst, count)
}

// rowFits checks that a row of dst's width covers the matcher's token ids.
func rowFits(m session.EngineMatcher, dst tokenmask.Mask) error {
	if n := m.Grammar().Vocabulary().Size(); len(dst)*32 < n {
		return fmt.Errorf("bitmask: rows of %d words hold %d token ids, fewer than the tokenizer's %d", len(dst), len(dst)*32, n)
	}
	return nil
}

func fillMatcherRow(m session.EngineMatcher, dst tokenmask.Mask, count bool) (int, error) {
	if err := rowFits(m, dst); err != nil {
		clear(dst)
		return 0, err
	}
	if err := m.FillMask(dst); err != nil {
		return 0, coreError(err)
	}
	if !count {
		return 0, nil
	}
	return dst.Count(), nil
}

// MatcherFillBitmask writes matcher h's allowed-token bitset into row index of the
// caller's int32 [rows × words] buffer at address buf, and returns the number of allowed
// tokens. words*32 must cover the tokenizer's ids; ids at or above it (a model's padding
// columns) are cleared.
func MatcherFillBitmask(h int64, buf uintptr, rows, words, index int) (int, error) {
	return safecall.Do("MatcherFillBitmask", func() (int, error) {
		all, err := bitmaskRows(buf, rows, words)
		if err != nil {
			return 0, err
		}
		if index < 0 || index >= rows {
			return 0, fmt.Errorf("bitmask: row index %d outside [0, %d)", index, rows)
		}
		return fillRow(h, all[index*words:(index+1)*words], true)
	})
}

// MatcherAcceptFillBitmask is one decoding step in one call: matcher h accepts token
// (skipped when token is negative), then writes its allowed-token bitset into row index
// of the caller's int32 [rows × words] buffer at buf, as MatcherFillBitmask does but
// without counting the allowed tokens (it returns 0). When the token is refused the
// matcher is unchanged, the row is cleared and the error says why.
func MatcherAcceptFillBitmask(h int64, token int, buf uintptr, rows, words, index int) (int, error) {
	return safecall.Do("MatcherAcceptFillBitmask", func() (int, error) {
		all, err := bitmaskRows(buf, rows, words)
		if err != nil {
			return 0, err
		}
		if index < 0 || index >= rows {
			return 0, fmt.Errorf("bitmask: row index %d outside [0, %d)", index, rows)
		}
		dst := all[index*words : (index+1)*words]
		m, err := matchers.get(h)
		if err != nil {
			clear(dst)
			return 0, err
		}
		if err := rowFits(m, dst); err != nil {
			clear(dst)
			return 0, err
		}
		if token >= 0 {
			if err := coreError(m.AcceptToken(token)); err != nil {
				clear(dst)
				return 0, err
			}
		}
		return fillMatcherRow(m, dst, false)
	})
}

// MatchersFillBitmasks fills n rows of the caller's int32 [rows × words] bitmask at buf
// in one call: row idx[i] from matcher hs[i], where hs and idx are the addresses of n
// int64 values each. Rows are computed in parallel (matchers made by separate
// Grammar.matcher() calls run independently; clones of one matcher share a lock). Every
// row is filled or, when it fails, cleared; the error names the first row that failed.
// It returns n.
func MatchersFillBitmasks(hs, idx uintptr, n int, buf uintptr, rows, words int) (int, error) {
	return safecall.Do("MatchersFillBitmasks", func() (int, error) {
		if n <= 0 {
			return 0, fmt.Errorf("bitmask: %d matchers", n)
		}
		all, err := bitmaskRows(buf, rows, words)
		if err != nil {
			return 0, err
		}
		handles, err := view[int64](hs, n, "matchers")
		if err != nil {
			return 0, err
		}
		index, err := view[int64](idx, n, "indices")
		if err != nil {
			return 0, err
		}
		seen := make(map[int64]int, n)
		for i, r := range index {
			if r < 0 || r >= int64(rows) {
				return 0, fmt.Errorf("bitmask: indices[%d] = %d outside [0, %d)", i, r, rows)
			}
			if j, dup := seen[r]; dup {
				return 0, fmt.Errorf("bitmask: indices[%d] and indices[%d] both name row %d", j, i, r)
			}
			seen[r] = i
		}
		errs := make([]error, n)
		fill := func(i int) {
			defer func() { // a goroutine's panic would abort the host: report it as this row's error
				if v := recover(); v != nil {
					errs[i] = &safecall.PanicError{Op: "MatchersFillBitmasks", Value: v}
				}
			}()
			r := int(index[i])
			_, errs[i] = fillRow(handles[i], all[r*words:(r+1)*words], false)
		}
		workers := min(n, runtime.GOMAXPROCS(0))
		if workers <= 1 {
			for i := range n {
				fill(i)
			}
		} else {
			var wg sync.WaitGroup
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := w; i < n; i += workers {
						fill(i)
					}
				}()
			}
			wg.Wait()
		}
		for i, err := range errs {
			if err != nil {
				return 0, inRow(err, fmt.Sprintf("matchers[%d] (bitmask row %d): ", i, index[i]))
			}
		}
		return n, nil
	})
}

// inRow prefixes an error's message with where it happened, keeping a structured
// error structured (Python maps it to its exception type by the prefix).
func inRow(err error, where string) error {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, structuredPrefix); ok {
		var s structured
		if json.Unmarshal([]byte(rest), &s) == nil {
			s.Message = where + s.Message
			return s.encode()
		}
	}
	if strings.HasPrefix(msg, "tether internal error") {
		return fmt.Errorf("%s (%s)", msg, strings.TrimSuffix(where, ": "))
	}
	return fmt.Errorf("%s%w", where, err)
}

// MatcherForcedBytes writes the bytes the grammar forces next (at most max) into the
// caller's byte buffer at buf and returns how many: text a jump-forward decoder can
// append without asking the model. It stops where the grammar could end or could go
// more than one way, so it may end inside a UTF-8 character.
func MatcherForcedBytes(h int64, buf uintptr, max int) (int, error) {
	return safecall.Do("MatcherForcedBytes", func() (int, error) {
		m, err := matchers.get(h)
		if err != nil {
			return 0, err
		}
		if max <= 0 {
			return 0, fmt.Errorf("forced bytes: buffer of %d bytes", max)
		}
		dst, err := view[byte](buf, max, "forced bytes")
		if err != nil {
			return 0, err
		}
		b, err := m.ForcedBytes(max)
		if err != nil {
			return 0, coreError(err)
		}
		return copy(dst, b), nil
	})
}
