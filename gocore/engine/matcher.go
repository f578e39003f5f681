package engine

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"sync"

	"github.com/tetherlm/tether/gocore/tokenmask"
)

// family is what a Matcher shares with its clones: the arena of interned stacks and
// memoized transitions, behind one lock taken once per call. A released family
// (see Matcher.Release) serves a later NewMatcher of the grammar; whoever still
// holds it shares it as a clone does, under the same lock.
type family struct {
	mu    sync.Mutex
	a     *arena
	start int32 // the grammar's start configuration
	end   int32 // the configuration {empty stack}
	refs  int32 // matchers not released that use the family (mu)
	// pooled: released to the grammar (put in its pool, or dropped there when
	// the pool was full) and not taken since (mu).
	pooled bool
}

// Matcher follows one sequence through a Grammar: it accepts tokens (or raw bytes)
// and fills token masks. A Matcher and its clones share caches and serialize on a
// common lock, so they are safe to use from several goroutines, but for parallel
// rows use separate NewMatcher values (each has its own caches).
type Matcher struct {
	g     *Grammar
	fam   *family
	cfg   int32
	hist  []histEntry
	depth []int32 // walk scratch: configuration per trie depth
	words tokenmask.Mask

	// lazy mode
	awaiting bool
	buf      []byte
	toks     []bufTok // the tokens whose text buf holds (see lazy.go)

	released bool // Release was called (fam.mu)
}

type histEntry struct {
	cfg      int32
	awaiting bool
	bufLen   int32
	toks     int32 // len(Matcher.toks) before the step
}

// RejectError says why a token or byte string was refused.
type RejectError struct {
	Token  int    // the token id, or -1 for AcceptBytes
	Text   []byte // the token's bytes (or the bytes given)
	Offset int    // byte offset in Text where matching failed, -1 if not about a byte
	Reason string
}

// Error says which token (and text) was refused and why.
func (e *RejectError) Error() string {
	var b strings.Builder
	if e.Token >= 0 {
		fmt.Fprintf(&b, "engine: token %d (%s) rejected: ", e.Token, strconv.Quote(string(e.Text)))
	} else {
		fmt.Fprintf(&b, "engine: bytes rejected at offset %d: ", e.Offset)
	}
	b.WriteString(e.Reason)
	return b.String()
}

// NewMatcher returns a Matcher at the start of the grammar (or, for a lazy grammar,
// awaiting its trigger). It starts with the caches of a released matcher of the
// grammar when there is one (see Release), else with empty ones.
func (g *Grammar) NewMatcher() *Matcher {
	f := g.takeFamily()
	if f == nil {
		a := newArena(g)
		f = &family{a: a, refs: 1}
		f.start = a.start()
		a.out = append(a.out[:0], mkEntry(nodeBottom, 0))
		f.end = a.internCfg(a.out)
	}
	m := &Matcher{g: g, fam: f}
	m.init()
	m.Reset()
	return m
}

// Release tells the grammar that the matcher is done with: once it and all its
// clones are released, their caches (interned stacks, memoized transitions, mask
// plans: what makes a matcher's later masks cheaper than its first) serve the next
// NewMatcher of the grammar, which then starts warm.
//
// It is a trade: on the MaskBench dev split, with each instance's matcher released,
// masks were faster at the median (-10%) and at p90 (-6%) and an eighth less
// memory was allocated, but p99 was 5-8% and p99.9 about 5% slower (thread CPU
// time, five interleaved pairs of runs), for reasons not yet found. The Python
// API does not release its matchers.
//
// Calling Release more than once, or not at all, is harmless. A matcher used
// after Release still works: it shares its caches with the matcher that took
// them, as a clone does (both correct, serialized on one lock).
//
// Caches that grew past a bound (maxPooledConfigs configurations) are dropped
// instead, and the grammar keeps at most maxPooledFamilies of them.
func (m *Matcher) Release() {
	f := m.fam
	f.mu.Lock()
	if m.released {
		f.mu.Unlock()
		return
	}
	m.released = true
	f.refs--
	keep := f.refs == 0 && !f.pooled && len(f.a.cfgs) <= maxPooledConfigs
	if keep {
		f.a.trim(maxPooledTables)
		f.pooled = true
	}
	f.mu.Unlock()
	if keep {
		m.g.putFamily(f)
	}
}

// maxPooledFamilies bounds the released caches a grammar keeps; maxPooledConfigs
// and maxPooledTables bound one of them (configurations interned, transition
// tables kept: a table is 1 KB).
const (
	maxPooledFamilies = 2
	maxPooledConfigs  = 1 << 13
	maxPooledTables   = 1 << 11
)

// takeFamily returns a released family for a new matcher, or nil.
func (g *Grammar) takeFamily() *family {
	g.famMu.Lock()
	n := len(g.families)
	if n == 0 {
		g.famMu.Unlock()
		return nil
	}
	f := g.families[n-1]
	g.families[n-1] = nil
	g.families = g.families[:n-1]
	g.famMu.Unlock()
	f.mu.Lock()
	f.refs++
	f.pooled = false
	f.mu.Unlock()
	g.reused.Add(1)
	return f
}

// putFamily keeps a released family for a later NewMatcher.
func (g *Grammar) putFamily(f *family) {
	g.famMu.Lock()
	defer g.famMu.Unlock()
	if len(g.families) < maxPooledFamilies {
		g.families = append(g.families, f)
	}
}

// ReusedMatchers returns how many NewMatcher calls started with a released
// matcher's caches (see Matcher.Release).
func (g *Grammar) ReusedMatchers() int64 { return g.reused.Load() }

func (m *Matcher) init() {
	m.depth = make([]int32, m.g.trie.maxDepth+2)
	m.hist = make([]histEntry, 0, 256)
}

// Vocabulary returns the vocabulary the grammar was compiled for.
func (g *Grammar) Vocabulary() Vocabulary { return g.vocab }

// Reset returns the matcher to the start of the grammar and forgets its history.
func (m *Matcher) Reset() {
	m.fam.mu.Lock()
	defer m.fam.mu.Unlock()
	m.cfg = m.fam.start
	m.hist = m.hist[:0]
	m.buf = m.buf[:0]
	m.toks = m.toks[:0]
	m.awaiting = m.g.opts.triggers != nil
}

// Clone returns an independent copy of the matcher's state (history included).
// The clone shares the original's caches.
func (m *Matcher) Clone() *Matcher {
	m.fam.mu.Lock()
	defer m.fam.mu.Unlock()
	m.fam.refs++
	c := &Matcher{g: m.g, fam: m.fam, cfg: m.cfg, awaiting: m.awaiting}
	c.depth = make([]int32, len(m.depth))
	c.hist = append(make([]histEntry, 0, max(cap(m.hist), 16)), m.hist...)
	c.buf = append([]byte(nil), m.buf...)
	c.toks = append([]bufTok(nil), m.toks...)
	return c
}

// limitState returns the *LimitError of the current state if it holds more stacks
// than the grammar's limit (see WithMaxStacks), else nil. The caller holds the lock.
func (m *Matcher) limitState() error {
	if m.awaiting {
		return nil
	}
	if c := &m.fam.a.cfgs[m.cfg]; c.over {
		return m.g.stackLimit(len(c.entries))
	}
	return nil
}

// takeLimit returns (and clears) the limit the arena met since it was last cleared,
// as an error (nil if none). The caller holds the lock.
func (m *Matcher) takeLimit() error {
	a := m.fam.a
	if a.hit == nil {
		return nil
	}
	err := a.hit
	a.hit = nil
	return err
}

// CanEnd reports whether the text so far is a complete match of the grammar (so an
// end-of-generation token is allowed). A lazy matcher still awaiting its trigger can
// always end. The answer is exact in every state, a limit state included (a state's
// stacks are all known once it is reached).
func (m *Matcher) CanEnd() bool {
	m.fam.mu.Lock()
	defer m.fam.mu.Unlock()
	return m.awaiting || m.fam.a.cfgs[m.cfg].canEnd
}

// IsDead reports whether no continuation is possible (not even ending). Compile
// refuses grammars with dead ends and refused tokens leave the matcher as it was, so
// this is false in every state a matcher reaches; it is kept as a cheap invariant
// check for callers and tests.
func (m *Matcher) IsDead() bool {
	m.fam.mu.Lock()
	defer m.fam.mu.Unlock()
	return !m.awaiting && m.cfg == cfgDead
}

// Awaiting reports whether a lazy matcher is still waiting for its trigger.
func (m *Matcher) Awaiting() bool {
	m.fam.mu.Lock()
	defer m.fam.mu.Unlock()
	return m.awaiting
}

// History is the number of accepted steps that Rollback can undo.
func (m *Matcher) History() int {
	m.fam.mu.Lock()
	defer m.fam.mu.Unlock()
	return len(m.hist)
}

func (m *Matcher) push() {
	m.hist = append(m.hist, histEntry{cfg: m.cfg, awaiting: m.awaiting, bufLen: int32(len(m.buf)), toks: int32(len(m.toks))})
}

// Rollback undoes the last n accepted steps (AcceptToken and AcceptBytes calls).
func (m *Matcher) Rollback(n int) error {
	m.fam.mu.Lock()
	defer m.fam.mu.Unlock()
	if n < 0 || n > len(m.hist) {
		return fmt.Errorf("engine: cannot roll back %d steps: %d in history", n, len(m.hist))
	}
	if n == 0 {
		return nil
	}
	h := m.hist[len(m.hist)-n]
	m.hist = m.hist[:len(m.hist)-n]
	m.cfg, m.awaiting = h.cfg, h.awaiting
	m.buf = m.buf[:h.bufLen]
	m.toks = m.toks[:h.toks]
	return nil
}

// FillMask sets bit i of mask[i/32] (least significant bit first) for every token i
// the grammar allows next, and clears every other bit. The mask's length sets the
// width: ids at or above the vocabulary size (padding) are always cleared. Special
// tokens are allowed only where the grammar names them; end-of-generation tokens
// exactly when the grammar can end. A lazy matcher awaiting its trigger allows all.
//
// The mask is exact: token i is set iff AcceptToken(i) succeeds. Where a limit
// (see WithMaxStacks) prevents an exact answer, FillMask returns a *LimitError and
// leaves the mask cleared: the caller must not use it.
func (m *Matcher) FillMask(mask tokenmask.Mask) error {
	m.fam.mu.Lock()
	defer m.fam.mu.Unlock()
	clear(mask)
	if m.awaiting {
		m.fillAll(mask, min(len(mask)*32, m.g.size), true)
		return nil
	}
	if err := m.limitState(); err != nil {
		return err
	}
	if m.cfg == cfgDead {
		return nil
	}
	m.fam.a.hit = nil
	m.fillMask(m.cfg, mask)
	if err := m.takeLimit(); err != nil {
		clear(mask)
		return err
	}
	return nil
}

// AllowedTokens appends the ids FillMask would allow to dst and returns it, or the
// error FillMask returns (then dst unchanged).
func (m *Matcher) AllowedTokens(dst []int) ([]int, error) {
	w := tokenmask.Words(m.g.size)
	if cap(m.words) < w {
		m.words = make(tokenmask.Mask, w)
	}
	m.words = m.words[:w]
	if err := m.FillMask(m.words); err != nil {
		return dst, err
	}
	for i, x := range m.words {
		for x != 0 {
			b := bits.TrailingZeros32(x)
			dst = append(dst, i*32+b)
			x &= x - 1
		}
	}
	return dst, nil
}

// IsAllowed reports whether token id may come next (the same answer FillMask
// gives for it, and AcceptToken would give), without changing the matcher. Where a
// limit prevents an exact answer it returns a *LimitError.
func (m *Matcher) IsAllowed(id int) (bool, error) {
	m.fam.mu.Lock()
	defer m.fam.mu.Unlock()
	if m.awaiting {
		return id >= 0 && id < m.g.size, nil
	}
	if err := m.limitState(); err != nil {
		return false, err
	}
	m.fam.a.hit = nil
	nx, _ := m.tokenStep(id, false)
	if m.fam.a.hit != nil {
		// The whole step met a limit: decide as the mask does (see verdict.go).
		m.fam.a.hit = nil
		ok := m.maskVerdict(m.cfg, id)
		if err := m.takeLimit(); err != nil {
			return false, err
		}
		return ok, nil
	}
	return nx != cfgDead, nil
}

// tokenStep computes the configuration after token id, or cfgDead and, if explain,
// the reason. A step that hits a limit gives cfgDead with a.hit set (and no reason):
// the caller must check a.hit before calling it a rejection.
func (m *Matcher) tokenStep(id int, explain bool) (int32, *RejectError) {
	g := m.g
	if id < 0 || id >= g.size {
		return cfgDead, &RejectError{Token: id, Offset: -1, Reason: fmt.Sprintf("id outside the vocabulary (size %d)", g.size)}
	}
	a := m.fam.a
	c := m.cfg
	text := g.vocab.TokenBytes(id)
	isEOG, special := g.isEOG[id], g.special[id]
	nx := cfgDead
	off := -1
	if !isEOG && !special && len(text) > 0 {
		var last int32
		last, off = a.walkBytes(c, text)
		if off == len(text) {
			nx = last
		} else {
			c = last
		}
	}
	if g.hasToken && a.cfgs[m.cfg].tokTops {
		if t := a.stepToken(m.cfg, int32(id), isEOG); t == cfgLimit {
			return cfgDead, nil
		} else if t != cfgDead {
			if nx == cfgDead {
				nx = t
			} else if nx = a.union(nx, t); nx == cfgLimit {
				return cfgDead, nil
			}
		}
	}
	if isEOG && a.cfgs[m.cfg].canEnd {
		if nx == cfgDead {
			nx = m.fam.end
		} else if nx = a.union(nx, m.fam.end); nx == cfgLimit {
			return cfgDead, nil
		}
	}
	if nx != cfgDead || !explain {
		return nx, nil
	}
	r := &RejectError{Token: id, Text: text, Offset: -1}
	switch {
	case isEOG:
		r.Reason = "end-of-generation token, but the grammar cannot end here; expected " + m.expected(m.cfg)
	case special:
		r.Reason = "special token the grammar does not name here; expected " + m.expected(m.cfg)
	case len(text) == 0:
		r.Reason = "token has no text; expected " + m.expected(m.cfg)
	default:
		r.Offset = off
		r.Reason = fmt.Sprintf("byte %d (0x%02x) does not fit the grammar; after %s expected %s",
			off, text[off], strconv.Quote(string(text[:off])), m.expected(c))
	}
	return cfgDead, r
}

// AcceptToken advances the matcher by token id. A refused token leaves the matcher
// unchanged and returns a *RejectError naming the token, its text and the reason.
// Where a limit prevents deciding (see WithMaxStacks), it returns a *LimitError and
// leaves the matcher unchanged.
func (m *Matcher) AcceptToken(id int) error {
	m.fam.mu.Lock()
	defer m.fam.mu.Unlock()
	if m.awaiting {
		return m.acceptLazy(id)
	}
	if err := m.limitState(); err != nil {
		return err
	}
	m.fam.a.hit = nil
	nx, rej := m.tokenStep(id, true)
	if m.fam.a.hit != nil {
		// The whole step met a limit: decide as the mask does (see verdict.go);
		// an allowed token leads to the limit state.
		m.fam.a.hit = nil
		ok := m.maskVerdict(m.cfg, id)
		if err := m.takeLimit(); err != nil {
			return err
		}
		if !ok {
			_, rej = m.tokenStep(id, true)
			if rej == nil || m.fam.a.hit != nil {
				m.fam.a.hit = nil
				rej = &RejectError{Token: id, Text: m.g.vocab.TokenBytes(id), Offset: -1,
					Reason: "the grammar does not allow it here; expected " + m.expected(m.cfg)}
			}
			return rej
		}
		nx, rej = m.fam.a.overCfg(), nil
	}
	if rej != nil {
		return rej
	}
	m.push()
	m.cfg = nx
	m.fam.a.trim(maxTables)
	return nil
}

// maxTables bounds a family's memoized transition tables (1 KiB each).
const maxTables = 1 << 15

// AcceptBytes advances the matcher by raw text, as if generated. A refused text
// leaves the matcher unchanged and returns a *RejectError with the failing offset.
// For a lazy matcher still awaiting its trigger, the text is watched for triggers.
// Where a limit prevents deciding, it returns a *LimitError and changes nothing.
func (m *Matcher) AcceptBytes(b []byte) error {
	m.fam.mu.Lock()
	defer m.fam.mu.Unlock()
	if m.awaiting {
		return m.watch(b, -1)
	}
	if err := m.limitState(); err != nil {
		return err
	}
	nx, err := m.acceptText(m.cfg, b)
	if err != nil {
		return err
	}
	m.push()
	m.cfg = nx
	m.fam.a.trim(maxTables)
	return nil
}

// acceptText walks configuration c over b: the configuration after it, a
// *RejectError, or a *LimitError (a limit met on the way, or a limit state at any
// point of the text).
func (m *Matcher) acceptText(c int32, b []byte) (int32, error) {
	a := m.fam.a
	a.hit = nil
	for i, x := range b {
		if a.cfgs[c].over && i > 0 {
			return cfgDead, m.g.stackLimit(len(a.cfgs[c].entries))
		}
		nx := a.step(c, x)
		if err := m.takeLimit(); err != nil {
			return cfgDead, err
		}
		if nx == cfgDead {
			reason := fmt.Sprintf("byte 0x%02x does not fit the grammar; expected %s", x, m.expected(c))
			return cfgDead, &RejectError{Token: -1, Text: b, Offset: i, Reason: reason}
		}
		c = nx
	}
	return c, nil
}

// expected describes what configuration c accepts next, briefly.
func (m *Matcher) expected(c int32) string {
	a := m.fam.a
	var parts []string
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] && len(parts) < 8 {
			seen[s] = true
			parts = append(parts, s)
		}
	}
	for _, e := range a.cfgs[c].entries {
		n := e.node()
		if n == nodeBottom {
			add("end of text")
			continue
		}
		if n <= nodeExit {
			continue
		}
		el := m.g.elems[a.nodes[n].elem]
		switch el.op {
		case opChar:
			s := describeClass(&m.g.classes[el.arg])
			if e.partial() != 0 {
				s += " (continuing a UTF-8 character)"
			}
			add(s)
		case opByte:
			add(describeBytes(&m.g.byteSets[el.arg]))
		case opToken:
			if isExceptArg(el.neg, el.arg) {
				add(m.g.excepts[exceptIndex(el.arg)].describe())
			} else if el.neg && el.arg == anyTokenArg {
				add("any token")
			} else if el.neg {
				add(fmt.Sprintf("any token but <[%d]>", el.arg))
			} else {
				add(fmt.Sprintf("token <[%d]>", el.arg))
			}
		}
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, " or ")
}

func describeClass(c *class) string {
	if !c.neg && len(c.ranges) == 1 && c.ranges[0].Lo == c.ranges[0].Hi {
		return strconv.QuoteRune(c.ranges[0].Lo)
	}
	var b strings.Builder
	b.WriteByte('[')
	if c.neg {
		b.WriteByte('^')
	}
	for _, r := range c.ranges {
		b.WriteString(escRune(r.Lo))
		if r.Hi != r.Lo {
			b.WriteByte('-')
			b.WriteString(escRune(r.Hi))
		}
	}
	b.WriteByte(']')
	return b.String()
}

func escRune(r rune) string {
	q := strconv.QuoteRune(r)
	return q[1 : len(q)-1]
}

// Expected describes briefly what the grammar accepts next (for error messages).
func (m *Matcher) Expected() string {
	m.fam.mu.Lock()
	defer m.fam.mu.Unlock()
	if m.awaiting {
		return "anything (awaiting a trigger)"
	}
	return m.expected(m.cfg)
}
