package engine

import (
	"bytes"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// Triggers make a grammar lazy (see WithLazy): a Matcher allows every token and only
// watches the generated text until one fires, then the grammar constrains the rest.
//
// The semantics are llama.cpp's (src/llama-grammar.cpp, llama_grammar_accept_impl and
// llama_grammar_trigger_pattern::find; common/sampling.cpp, common_sampler_init):
//
//   - The watched text is every generated token's text, special tokens included as
//     written in the tokenizer (e.g. "<|python_tag|>"), so words and patterns see them.
//     End-of-generation tokens end the output and are not watched.
//   - Tokens fire at once: the grammar starts with that token.
//   - PatternsFull are tried first, in order: each must match the whole text so far
//     (it is anchored with ^ and $). The constrained text starts at the pattern's first
//     capture group that matched a non-empty string, or at 0 when none did.
//   - Words and Patterns are then searched anywhere as one alternation,
//     (word1|word2|pattern1|...): the leftmost match wins (ties: the earlier trigger),
//     and the constrained text starts where it starts (their own capture groups only
//     count when the whole match is empty, as in llama.cpp).
//   - After (a tether addition, Akunu's thinking mode) starts the grammar on the text
//     following the marker; if it and a word or pattern fire on the same step, the
//     earlier constrained start wins.
//
// When a trigger fires, every buffered token that overlaps the constrained text is
// replayed into the grammar in order: a token wholly inside it is accepted as a token
// (so a special token the grammar names, <|name|> or <[id]>, is matched as that token),
// and the first token, when the constrained text starts inside it, contributes the
// bytes from that point on. If the grammar refuses the replayed text, the token that
// fired is rejected with a *RejectError and the matcher stays as it was.
type Triggers struct {
	// Tokens fire when one of these token ids is generated; the grammar then
	// consumes that token (its text, or the token itself where the grammar names it).
	// This is llama.cpp's TOKEN trigger.
	Tokens []int
	// Words fire when the generated text contains one of them; the grammar consumes
	// the text from the start of the word (llama.cpp's WORD trigger).
	Words []string
	// Patterns are regular expressions (Go RE2 syntax) searched anywhere in the
	// generated text (llama.cpp's PATTERN trigger); the constrained text starts at the
	// start of the match.
	Patterns []string
	// PatternsFull are regular expressions that must match the whole generated text
	// (llama.cpp's PATTERN_FULL trigger); the constrained text starts at the first
	// capture group that matched a non-empty string, or at the start of the text.
	// Tool-call formats use them like `[\s\S]*?(<tool_call>)[\s\S]*`.
	PatternsFull []string
	// PatternsAtStart is the former name of PatternsFull, with the same meaning (the
	// pattern must match the whole text from its start).
	PatternsAtStart []string
	// After is a marker (e.g. "</think>") after which the grammar starts: the text
	// following the marker is the first constrained text; the marker is not.
	After string
	// PreservedTokens are special tokens, written as in the tokenizer (e.g.
	// "<|python_tag|>", "[TOOL_CALLS]"), that count as their text for the grammar
	// (llama.cpp's preserved_tokens): a grammar literal "<|python_tag|>" then matches
	// that special token, masks allow it where the grammar accepts its text, and a
	// replay after a trigger feeds its text to the grammar. Other special tokens are
	// only accepted where the grammar names them as tokens. Each must be one token of
	// the vocabulary.
	PreservedTokens []string
}

type compiledTriggers struct {
	tokens   map[int]bool
	full     []*vmPattern // PATTERN_FULL, in order, anchored
	anywhere *vmPattern   // words and patterns as one alternation (group 1), or nil
	after    []byte
	afterID  int // the token whose text is After, or -1
}

// bufTok is a token (or, with id -1, a text given to AcceptBytes) whose text lies at
// buf[start:end] of the trigger buffer; vm holds each pattern's matching state after
// it (the PATTERN_FULLs', then the words-and-patterns alternation's), so Rollback and
// Clone need nothing else.
type bufTok struct {
	id         int
	start, end int
	vm         []vmState
}

func (t *Triggers) compile(g *Grammar) error {
	ct := &compiledTriggers{tokens: map[int]bool{}}
	for _, id := range t.Tokens {
		if id < 0 || id >= g.size {
			return &CompileError{Msg: fmt.Sprintf("trigger token %d is outside the vocabulary (size %d)", id, g.size)}
		}
		ct.tokens[id] = true
	}
	var alts []string
	for _, w := range t.Words {
		if w == "" {
			return &CompileError{Msg: "empty trigger word"}
		}
		if !utf8.ValidString(w) {
			return &CompileError{Msg: fmt.Sprintf("trigger word %q is not valid UTF-8", w)}
		}
		alts = append(alts, regexp.QuoteMeta(w))
	}
	for _, p := range t.Patterns {
		if _, err := regexp.Compile(p); err != nil {
			return &CompileError{Msg: fmt.Sprintf("trigger pattern %q: %v", p, err)}
		}
		alts = append(alts, p)
	}
	if len(alts) > 0 {
		re, err := compileVM("("+strings.Join(alts, "|")+")", false)
		if err != nil {
			return &CompileError{Msg: fmt.Sprintf("trigger words and patterns: %v", err)}
		}
		ct.anywhere = re
	}
	for _, p := range slices.Concat(t.PatternsFull, t.PatternsAtStart) {
		fp, err := compileVM(`^(?:`+p+`)$`, true)
		if err != nil {
			return &CompileError{Msg: fmt.Sprintf("trigger pattern (full) %q: %v", p, err)}
		}
		ct.full = append(ct.full, fp)
	}
	ct.after = []byte(t.After)
	ct.afterID = -1
	if t.After != "" {
		if id, ok := g.vocab.TokenID(t.After); ok {
			ct.afterID = id
		}
	}
	g.lazy = ct
	return nil
}

// vocabulary returns the vocabulary a lazy grammar is compiled against: v itself, or,
// with preserved tokens, a view of v in which they are text (shared by every grammar
// with the same preserved set, so the token trie is built once).
func (t *Triggers) vocabulary(v Vocabulary) (Vocabulary, error) {
	if len(t.PreservedTokens) == 0 {
		return v, nil
	}
	texts := map[int][]byte{}
	var ids []int
	for _, name := range t.PreservedTokens {
		id, ok := v.TokenID(name)
		if !ok {
			return nil, &CompileError{Msg: fmt.Sprintf("preserved token %q is not a token of the vocabulary", name)}
		}
		if _, dup := texts[id]; !dup {
			ids = append(ids, id)
		}
		texts[id] = []byte(name)
	}
	slices.Sort(ids)
	key := preservedKey{v: v, ids: fmt.Sprint(ids)}
	if p, ok := preservedViews.Load(key); ok {
		return p.(*preservedVocab), nil
	}
	p, _ := preservedViews.LoadOrStore(key, &preservedVocab{Vocabulary: v, text: texts})
	return p.(*preservedVocab), nil
}

type preservedKey struct {
	v   Vocabulary
	ids string
}

// preservedViews caches one preservedVocab per vocabulary and preserved set.
var preservedViews sync.Map

// preservedVocab is a vocabulary in which some special tokens are plain text.
type preservedVocab struct {
	Vocabulary
	text map[int][]byte
}

// TokenBytes is the token's text; a preserved token's is its name.
func (p *preservedVocab) TokenBytes(id int) []byte {
	if b, ok := p.text[id]; ok {
		return b
	}
	return p.Vocabulary.TokenBytes(id)
}

// IsSpecial reports special tokens other than the preserved ones.
func (p *preservedVocab) IsSpecial(id int) bool {
	if _, ok := p.text[id]; ok {
		return false
	}
	return p.Vocabulary.IsSpecial(id)
}

// tokenTexter is implemented by vocabularies that can show a special token's text
// (gocore/vocab's Vocab.Text).
type tokenTexter interface{ Text(id int) string }

// watchedText is the text a generated token adds to the trigger buffer: its bytes,
// or for a special token its text as written in the tokenizer (llama.cpp renders
// special tokens when it watches for triggers).
func (g *Grammar) watchedText(id int) []byte {
	if b := g.vocab.TokenBytes(id); len(b) > 0 || !g.special[id] {
		return b
	}
	v := g.vocab
	if p, ok := v.(*preservedVocab); ok {
		v = p.Vocabulary
	}
	if t, ok := v.(tokenTexter); ok {
		return []byte(t.Text(id))
	}
	return nil
}

// acceptLazy handles a token while awaiting a trigger.
func (m *Matcher) acceptLazy(id int) error {
	g := m.g
	if id < 0 || id >= g.size {
		return &RejectError{Token: id, Offset: -1, Reason: fmt.Sprintf("id outside the vocabulary (size %d)", g.size)}
	}
	if g.lazy.tokens[id] {
		// The trigger token starts the constrained output.
		saved := m.cfg
		m.cfg = m.fam.start
		m.fam.a.hit = nil
		nx, rej := m.tokenStep(id, true)
		m.cfg = saved
		if err := m.takeLimit(); err != nil {
			return err
		}
		if rej != nil {
			rej.Reason = "trigger token does not start the grammar: " + rej.Reason + m.preservedHint(id)
			return rej
		}
		m.push()
		m.awaiting = false
		m.cfg = nx
		return nil
	}
	if id == g.lazy.afterID && len(g.vocab.TokenBytes(id)) == 0 {
		// The marker is a special token without text: the grammar starts after it.
		m.push()
		m.awaiting = false
		m.cfg = m.fam.start
		return nil
	}
	if g.isEOG[id] {
		m.push()
		return nil
	}
	return m.watch(g.watchedText(id), id)
}

// preservedHint suggests how to let the grammar take a special token as text.
func (m *Matcher) preservedHint(id int) string {
	if id < 0 || !m.g.special[id] || m.g.isEOG[id] {
		return ""
	}
	name := m.g.watchedText(id)
	if len(name) == 0 {
		return ""
	}
	return fmt.Sprintf(" (special token %q: name it in the grammar as a token, or list it in the preserved tokens to match it as text)", name)
}

// watch appends generated text to the trigger buffer and activates the grammar if a
// trigger fires. id is the token the text came from, or -1 for AcceptBytes.
func (m *Matcher) watch(text []byte, id int) error {
	lz := m.g.lazy
	old, oldToks := len(m.buf), len(m.toks)
	m.buf = append(m.buf, text...)
	var prev []vmState
	if oldToks > 0 {
		prev = m.toks[oldToks-1].vm
	}
	vm := lz.advance(prev, text)
	m.toks = append(m.toks, bufTok{id: id, start: old, end: len(m.buf), vm: vm})
	start := lz.find(m.buf, old, vm)
	if start < 0 {
		m.push()
		m.hist[len(m.hist)-1].bufLen = int32(old)
		m.hist[len(m.hist)-1].toks = int32(oldToks)
		return nil
	}
	nx, err, limit := m.replay(start)
	if limit != nil {
		m.buf, m.toks = m.buf[:old], m.toks[:oldToks]
		return limit
	}
	if err != nil {
		constrained := append([]byte(nil), m.buf[start:]...)
		m.buf, m.toks = m.buf[:old], m.toks[:oldToks]
		err.Token, err.Text = id, text
		if id < 0 {
			err.Text = constrained
		}
		err.Reason = fmt.Sprintf("trigger fired, but the grammar rejects the constrained text %q: %s", constrained, err.Reason)
		return err
	}
	m.push()
	m.hist[len(m.hist)-1].bufLen = int32(old)
	m.hist[len(m.hist)-1].toks = int32(oldToks)
	m.awaiting = false
	m.cfg = nx
	return nil
}

// find returns where the constrained text starts in buf if a trigger fires, else -1.
// old is the buffer's length before the last token; vm is each pattern's state after
// buf (see advance).
func (lz *compiledTriggers) find(buf []byte, old int, vm []vmState) int {
	// The incremental checks cost the new bytes only. They never miss a match
	// (tests_go/engine checks them against regexp); the regexp confirms a match and
	// finds the groups, once, when there is one.
	for i, fp := range lz.full {
		if !fp.matches(vm[i]) {
			continue
		}
		if loc := fp.re.FindSubmatchIndex(buf); loc != nil {
			return firstGroup(loc)
		}
	}
	start := -1
	if lz.anywhere != nil && lz.anywhere.matches(vm[len(lz.full)]) {
		if loc := lz.anywhere.re.FindSubmatchIndex(buf); loc != nil {
			start = firstGroup(loc)
		}
	}
	if len(lz.after) > 0 {
		from := max(0, old-len(lz.after)+1)
		if i := bytes.Index(buf[from:], lz.after); i >= 0 {
			if s := from + i + len(lz.after); start < 0 || s < start {
				start = s
			}
		}
	}
	return start
}

// firstGroup is llama.cpp's find_start_pos: the start of the first capture group that
// matched a non-empty string, else the start of the whole match.
func firstGroup(loc []int) int {
	for i := 2; i+1 < len(loc); i += 2 {
		if loc[i] >= 0 && loc[i+1] > loc[i] {
			return loc[i]
		}
	}
	return loc[0]
}

// replay runs the buffered tokens that overlap buf[start:] through the grammar from
// its start and returns the configuration reached. The caller holds the lock.
func (m *Matcher) replay(start int) (int32, *RejectError, error) {
	saved := m.cfg
	defer func() { m.cfg = saved }()
	c := m.fam.start
	for _, t := range m.toks {
		if t.end <= start {
			continue
		}
		if t.id < 0 || t.start < start {
			// Text given as bytes, or the token the constrained text starts inside.
			from := max(t.start, start)
			last, err := m.acceptText(c, m.buf[from:t.end])
			if err != nil {
				if rej, ok := err.(*RejectError); ok {
					rej.Offset += from - start
					return cfgDead, rej, nil
				}
				return cfgDead, nil, err
			}
			c = last
			continue
		}
		if a := m.fam.a; a.cfgs[c].over {
			return cfgDead, nil, m.g.stackLimit(len(a.cfgs[c].entries))
		}
		m.cfg = c
		m.fam.a.hit = nil
		nx, rej := m.tokenStep(t.id, true)
		if err := m.takeLimit(); err != nil {
			// A limit met while deciding: an error, never a guess.
			return cfgDead, nil, err
		}
		if rej != nil {
			rej.Reason += m.preservedHint(t.id)
			rej.Offset = -1
			return cfgDead, rej, nil
		}
		c = nx
	}
	return c, nil, nil
}

// vmPattern is a trigger regexp (a PATTERN_FULL, anchored at both ends, or the
// words-and-patterns alternation, searched anywhere) with its compiled program, which a
// small Pike VM runs incrementally over the growing buffer: watching costs the new
// bytes only, not the whole buffer per token (a thinking model writes thousands of
// tokens before its tool call). The regexp gives the capture groups once a match is
// known to exist.
type vmPattern struct {
	re       *regexp.Regexp
	prog     *syntax.Prog
	anchored bool // a match must start at 0 (else one may start anywhere)
}

// vmState is a pattern's matching state after a buffer: the program's threads before
// the closure at the current position, the last rune consumed (-1 at the start), the
// bytes of an unfinished UTF-8 character at the end, and whether a match ended before
// the current position. Values are never modified once made (Clone and Rollback share
// them).
type vmState struct {
	pcs     []uint32
	prev    rune
	tail    []byte
	dead    bool // anchored: no continuation of the buffer can match any more
	matched bool // unanchored: a match ended inside the buffer (sticky)
}

func compileVM(src string, anchored bool) (*vmPattern, error) {
	re, err := regexp.Compile(src)
	if err != nil {
		return nil, err
	}
	sre, err := syntax.Parse(src, syntax.Perl) // what regexp.Compile parses with
	if err != nil {
		return nil, err
	}
	prog, err := syntax.Compile(sre.Simplify())
	if err != nil {
		return nil, err
	}
	return &vmPattern{re: re, prog: prog, anchored: anchored}, nil
}

// advance returns every pattern's state after text, given the states before it (nil:
// at the start of the buffer).
func (lz *compiledTriggers) advance(prev []vmState, text []byte) []vmState {
	n := len(lz.full)
	if lz.anywhere != nil {
		n++
	}
	if n == 0 {
		return nil
	}
	out := make([]vmState, n)
	for i := range out {
		vp := lz.anywhere
		if i < len(lz.full) {
			vp = lz.full[i]
		}
		st := vmState{prev: -1}
		if vp.anchored {
			st.pcs = []uint32{uint32(vp.prog.Start)}
		}
		if prev != nil {
			st = prev[i]
		}
		out[i] = vp.advance(st, text)
	}
	return out
}

// advance consumes text: whole characters (an invalid byte is one U+FFFD, as regexp
// reads it), keeping an unfinished character's bytes for later.
func (vp *vmPattern) advance(st vmState, text []byte) vmState {
	if st.dead || len(text) == 0 {
		return st
	}
	data := text
	if len(st.tail) > 0 {
		data = append(append([]byte(nil), st.tail...), text...)
	}
	for len(data) > 0 && utf8.FullRune(data) && !st.dead {
		r, n := utf8.DecodeRune(data)
		st = vp.step(st, r)
		data = data[n:]
	}
	st.tail = nil
	if len(data) > 0 && !st.dead {
		st.tail = append([]byte(nil), data...)
	}
	return st
}

// threads is the thread list at the current position: an unanchored search starts a
// new thread at every position.
func (vp *vmPattern) threads(st vmState) []uint32 {
	if vp.anchored {
		return st.pcs
	}
	return append(append([]uint32(nil), st.pcs...), uint32(vp.prog.Start))
}

// step consumes one rune.
func (vp *vmPattern) step(st vmState, r rune) vmState {
	var next []uint32
	matched := false
	seen := make([]bool, len(vp.prog.Inst))
	vp.closure(vp.threads(st), st.prev, r, func(pc uint32) {
		inst := &vp.prog.Inst[pc]
		if inst.Op == syntax.InstMatch {
			matched = true
		} else if matchRune(inst, r) && !seen[inst.Out] {
			seen[inst.Out] = true
			next = append(next, inst.Out)
		}
	})
	if vp.anchored {
		// A match before the end does not count: the pattern ends with $.
		return vmState{pcs: next, prev: r, dead: len(next) == 0}
	}
	// Sticky, and the threads go on: should the regexp not confirm a match (it
	// always does), find keeps asking it, which is slower but never wrong.
	return vmState{pcs: next, prev: r, matched: st.matched || matched}
}

// matches reports whether the buffer holds a match (anchored: is one): an unfinished
// character's bytes count as one U+FFFD each, as regexp reads them today.
func (vp *vmPattern) matches(st vmState) bool {
	for range st.tail {
		if st.dead {
			break
		}
		st = vp.step(st, utf8.RuneError)
	}
	if st.matched {
		return true
	}
	if st.dead {
		return false
	}
	found := false
	vp.closure(vp.threads(st), st.prev, -1, func(pc uint32) {
		found = found || vp.prog.Inst[pc].Op == syntax.InstMatch
	})
	return found
}

// closure follows the empty transitions from pcs at the position between before and
// after (-1: the buffer's start or end) and calls visit for each consuming or matching
// instruction reached.
func (vp *vmPattern) closure(pcs []uint32, before, after rune, visit func(pc uint32)) {
	cond := syntax.EmptyOpContext(before, after)
	seen := make([]bool, len(vp.prog.Inst))
	stack := append([]uint32(nil), pcs...)
	for len(stack) > 0 {
		pc := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[pc] {
			continue
		}
		seen[pc] = true
		inst := &vp.prog.Inst[pc]
		switch inst.Op {
		case syntax.InstAlt, syntax.InstAltMatch:
			stack = append(stack, inst.Out, inst.Arg)
		case syntax.InstCapture, syntax.InstNop:
			stack = append(stack, inst.Out)
		case syntax.InstEmptyWidth:
			if syntax.EmptyOp(inst.Arg)&^cond == 0 {
				stack = append(stack, inst.Out)
			}
		case syntax.InstFail:
		default:
			visit(pc)
		}
	}
}

func matchRune(inst *syntax.Inst, r rune) bool {
	switch inst.Op {
	case syntax.InstRune:
		return inst.MatchRune(r)
	case syntax.InstRune1:
		return r == inst.Rune[0]
	case syntax.InstRuneAny:
		return true
	case syntax.InstRuneAnyNotNL:
		return r != '\n'
	}
	return false
}
