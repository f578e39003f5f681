package sampling

import (
	"bytes"
	"math"
)

// DefaultDRYSequenceBreakers are llama.cpp's default dry_sequence_breakers.
var DefaultDRYSequenceBreakers = []string{"\n", ":", "\"", "*"}

// DRY is the "Don't Repeat Yourself" sampler (llama_sampler_init_dry): a token that would
// extend a repetition of the recent context longer than allowedLength tokens gets
// logit -= multiplier * base^(length - allowedLength). Sequence breakers cut repetitions:
// a breaker is a head token plus a (possibly empty) tail of tokens; single-token
// breakers are never penalized.
type DRY struct {
	multiplier, base float32
	allowedLength    int
	penaltyLastN     int // as given: -1 = context size
	contextSize      int
	breakers         map[int32][][]int32 // head -> tails
	enabled          bool

	last        ring
	repeatCount []int
	maxRepeat   []int32 // by token id; > 0 for tokens touched this step
	touched     []int32
}

// DRYParams are the DRY sampler's settings, with llama.cpp's names in the field docs.
type DRYParams struct {
	Multiplier    float32 // dry_multiplier; 0 disables DRY
	Base          float32 // dry_base; < 1 disables DRY
	AllowedLength int     // dry_allowed_length
	PenaltyLastN  int     // dry_penalty_last_n; -1 = context size, 0 disables DRY
	ContextSize   int     // n_ctx; needed when PenaltyLastN is -1 (0 = no limit otherwise)
}

// NewDRY returns a DRY sampler whose sequence breakers are token-id sequences (head token
// first), like llama.cpp's llama_sampler_init_dry_testing. Use DRYBreakersFromText to
// derive them from text breakers and a vocabulary.
func NewDRY(p DRYParams, breakers [][]int) (*DRY, error) {
	if err := checkFinite("dry_multiplier", p.Multiplier); err != nil {
		return nil, err
	}
	if p.Multiplier < 0 {
		return nil, paramErr("dry_multiplier", p.Multiplier, "must be >= 0 (0 = off)")
	}
	if err := checkFinite("dry_base", p.Base); err != nil {
		return nil, err
	}
	if err := checkNonNeg("dry_allowed_length", p.AllowedLength); err != nil {
		return nil, err
	}
	if p.PenaltyLastN < -1 {
		return nil, paramErr("dry_penalty_last_n", p.PenaltyLastN, "must be >= -1 (-1 = context size, 0 = off)")
	}
	if err := checkNonNeg("n_ctx", p.ContextSize); err != nil {
		return nil, err
	}
	d := &DRY{multiplier: p.Multiplier, base: p.Base, allowedLength: p.AllowedLength,
		penaltyLastN: p.PenaltyLastN, contextSize: p.ContextSize,
		breakers: map[int32][][]int32{}}
	d.enabled = p.Multiplier != 0 && p.Base >= 1 && p.PenaltyLastN != 0
	effective := p.PenaltyLastN
	if effective == -1 {
		if p.ContextSize <= 0 && d.enabled {
			return nil, paramErr("dry_penalty_last_n", -1, "-1 means the context size: set n_ctx")
		}
		effective = p.ContextSize
	}
	for _, b := range breakers {
		if len(b) == 0 {
			continue
		}
		for _, id := range b {
			if id < 0 || id > math.MaxInt32 {
				return nil, paramErr("dry_sequence_breakers", id, "token id out of range")
			}
		}
		head := int32(b[0])
		tail := make([]int32, len(b)-1)
		for i, id := range b[1:] {
			tail[i] = int32(id)
		}
		d.breakers[head] = append(d.breakers[head], tail)
	}
	if d.enabled {
		d.last = newRing(effective)
		d.repeatCount = make([]int, effective)
	}
	return d, nil
}

// Name returns "dry".
func (*DRY) Name() string { return "dry" }

// Accept records id in the history window.
func (d *DRY) Accept(id int) {
	if !d.enabled {
		return
	}
	d.last.push(int32(id))
}

// Reset clears the history.
func (d *DRY) Reset() { d.last.clear() }

// Clone returns a copy with its own history (breakers are shared: they never change).
func (d *DRY) Clone() Sampler {
	cp := *d
	cp.last = d.last.clone()
	cp.repeatCount = append([]int(nil), d.repeatCount...)
	cp.maxRepeat = nil
	cp.touched = nil
	return &cp
}

// Apply penalizes the tokens that would extend a repetition.
func (d *DRY) Apply(c *Candidates) error {
	if len(c.Data) == 0 {
		return ErrEmptyCandidates
	}
	if !d.enabled {
		return nil
	}
	n := d.last.size
	if d.contextSize > 0 && n > d.contextSize {
		n = d.contextSize
	}
	if n <= d.allowedLength {
		return nil
	}
	rc := d.repeatCount[:n]
	for i := range rc {
		rc[i] = 0
	}

	// Step 1: the most recent sequence breaker limits how far back a repetition reaches.
	repLimit := n
	for i := 0; i < n; i++ {
		tails, ok := d.breakers[d.last.rat(i)]
		if !ok {
			continue
		}
		longest := -1
		for _, tail := range tails {
			sl := len(tail)
			if sl > longest && sl <= i {
				match := true
				for off := 0; off < sl; off++ {
					if tail[off] != d.last.rat(i-off-1) {
						match = false
						break
					}
				}
				if match {
					longest = sl
				}
			}
		}
		if longest >= 0 {
			repLimit = i - longest
			break
		}
	}
	if repLimit < d.allowedLength {
		return nil
	}

	// Step 2: Z-algorithm over the reversed context: rc[last-k] is the length of the
	// longest suffix of the context that also ends k tokens before the end.
	last := n - 1
	lt, rt := 0, 0
	for k := 1; k < n; k++ {
		if k > rt {
			m := 0
			for m+k < n && d.last.rat(m) == d.last.rat(m+k) {
				m++
			}
			rc[last-k] = min(m, repLimit)
			if m > 0 {
				lt, rt = k, k+m-1
			}
		} else {
			p := k - lt
			right := rt - k + 1
			if rc[last-p] < right {
				rc[last-k] = min(rc[last-p], repLimit)
			} else {
				i := rt + 1
				for i < n && d.last.rat(i) == d.last.rat(i-k) {
					i++
				}
				rc[last-k] = min(i-k, repLimit)
				lt, rt = k, i-1
			}
		}
	}

	// Step 3: the token after each long-enough repeat would extend it.
	d.touched = d.touched[:0]
	for i := 0; i < n-1; i++ {
		rl := rc[i]
		if rl < d.allowedLength {
			continue
		}
		t := d.last.rat(n - 2 - i)
		d.maxRepeat = growCounts(d.maxRepeat, t)
		if d.maxRepeat[t] == 0 {
			d.touched = append(d.touched, t)
		}
		// stored as length+1 so that 0 means "not touched" even when allowedLength is 0
		if v := int32(rl) + 1; v > d.maxRepeat[t] {
			d.maxRepeat[t] = v
		}
	}
	if len(d.touched) == 0 {
		return nil
	}

	// Step 4: penalize.
	const floatMaxLog = 88.7228391
	maxExp := 0
	if d.base > 1.000001 {
		maxExp = int(float32(floatMaxLog / logf(d.base)))
	}
	penalize := func(t *Candidate, rl int32) {
		for _, tail := range d.breakers[t.ID] {
			if len(tail) == 0 {
				return // single-token breakers are never penalized
			}
		}
		e := int(rl) - 1 - d.allowedLength
		if maxExp > 0 && e > maxExp {
			e = maxExp
		}
		// C++: float * std::pow(float, int) is computed in double
		t.Logit -= float32(float64(d.multiplier) * math.Pow(float64(d.base), float64(e)))
	}
	data := c.Data
	direct := true
	for _, t := range d.touched {
		if int(t) >= len(data) || data[t].ID != t {
			direct = false
			break
		}
	}
	if direct {
		for _, t := range d.touched {
			penalize(&data[t], d.maxRepeat[t])
		}
	} else {
		for i := range data {
			if t := data[i].ID; t >= 0 && int(t) < len(d.maxRepeat) && d.maxRepeat[t] > 0 {
				penalize(&data[i], d.maxRepeat[t])
			}
		}
	}
	for _, t := range d.touched {
		d.maxRepeat[t] = 0
	}
	c.Sorted = false
	return nil
}

// TokenTexts gives the exact bytes of each token; gocore/vocab's vocabulary and
// gocore/engine's Vocabulary satisfy it.
type TokenTexts interface {
	Size() int
	TokenBytes(id int) []byte
}

// Encoder tokenizes text without adding special tokens (used for breaker tails).
type Encoder func(text []byte) ([]int, error)

const (
	dryMaxBreakerBytes = 40 // llama.cpp's MAX_CHAR_LEN
	dryMaxTailTokens   = 20 // llama.cpp's MAX_SEQ_LEN
)

// DRYBreakersFromText turns text sequence breakers into token sequences the way llama.cpp
// does (get_overlapping_token_sequences): every token whose text contains a breaker is a
// single-token breaker; a token whose text ends with a proper prefix of a breaker is a
// head, and the rest of the breaker, encoded, is its tail (at most 20 tokens). Breakers
// are truncated to 40 bytes; empty ones are skipped. encode may be nil: tails are then
// encoded greedily, longest token first, from vocab's bytes.
func DRYBreakersFromText(vocab TokenTexts, encode Encoder, breakers []string) ([][]int, error) {
	if vocab == nil {
		return nil, paramErr("dry_sequence_breakers", nil, "a vocabulary is needed to tokenize text breakers")
	}
	if encode == nil {
		encode = greedyEncoder(vocab)
	}
	var out [][]int
	seen := map[string]bool{}
	add := func(seq []int) {
		key := string(appendInts(nil, seq))
		if !seen[key] {
			seen[key] = true
			out = append(out, seq)
		}
	}
	for _, s := range breakers {
		if s == "" {
			continue
		}
		str := []byte(s)
		if len(str) > dryMaxBreakerBytes {
			str = str[:dryMaxBreakerBytes]
		}
		for id := 0; id < vocab.Size(); id++ {
			word := vocab.TokenBytes(id)
			if bytes.Contains(word, str) {
				add([]int{id})
				continue
			}
			// every position where word's end matches a prefix of str
			for pos := bytes.IndexByte(word, str[0]); pos >= 0; {
				i := 1
				match := true
				for ; i < len(str) && pos+i < len(word); i++ {
					if word[pos+i] != str[i] {
						match = false
						break
					}
				}
				if match {
					tail, err := encode(str[i:])
					if err != nil {
						return nil, &ParamError{Param: "dry_sequence_breakers", Value: s, Reason: "encoding the breaker's tail: " + err.Error()}
					}
					if len(tail) > dryMaxTailTokens {
						tail = tail[:dryMaxTailTokens]
					}
					add(append([]int{id}, tail...))
				}
				next := bytes.IndexByte(word[pos+1:], str[0])
				if next < 0 {
					break
				}
				pos += 1 + next
			}
		}
	}
	return out, nil
}

func appendInts(b []byte, xs []int) []byte {
	for _, x := range xs {
		b = append(b, byte(x), byte(x>>8), byte(x>>16), byte(x>>24))
	}
	return b
}

// greedyEncoder encodes by repeatedly taking the longest token that is a prefix of the
// remaining text. Good enough for breaker tails when no real tokenizer is at hand.
func greedyEncoder(v TokenTexts) Encoder {
	return func(text []byte) ([]int, error) {
		var ids []int
		for len(text) > 0 {
			best, bestLen := -1, 0
			for id := 0; id < v.Size(); id++ {
				w := v.TokenBytes(id)
				if len(w) > bestLen && bytes.HasPrefix(text, w) {
					best, bestLen = id, len(w)
				}
			}
			if best < 0 {
				return nil, paramErr("dry_sequence_breakers", string(text), "no token covers this text")
			}
			ids = append(ids, best)
			text = text[bestLen:]
		}
		return ids, nil
	}
}
