package engine

import (
	"bytes"
	"fmt"
	"regexp"
)

// Triggers make a grammar lazy (see WithLazy): a Matcher allows every token and only
// watches the generated text until one fires, then the grammar constrains the rest.
// When several fire on the same step, the one whose constrained text starts earliest
// wins.
type Triggers struct {
	// Tokens fire when one of these token ids is generated; the grammar then
	// consumes that token (its text, or the token itself where the grammar names it).
	Tokens []int
	// Words fire when the generated text contains one of them; the grammar consumes
	// the text from the start of the word (the word is part of the constrained output).
	Words []string
	// Patterns are regular expressions (Go regexp syntax) searched anywhere in the
	// generated text. The constrained text starts at the first capture group, if the
	// pattern has one and it matched, else at the start of the match.
	Patterns []string
	// PatternsAtStart are like Patterns but only match at the start of the output.
	PatternsAtStart []string
	// After is a marker (e.g. "</think>") after which the grammar starts: the text
	// following the marker is the first constrained text; the marker is not.
	After string
}

type compiledTriggers struct {
	tokens   map[int]bool
	words    [][]byte
	patterns []*regexp.Regexp
	after    []byte
	afterID  int // the token whose text is After, or -1
}

func (t *Triggers) compile(g *Grammar) error {
	ct := &compiledTriggers{tokens: map[int]bool{}}
	for _, id := range t.Tokens {
		if id < 0 || id >= g.size {
			return &CompileError{Msg: fmt.Sprintf("trigger token %d is outside the vocabulary (size %d)", id, g.size)}
		}
		ct.tokens[id] = true
	}
	for _, w := range t.Words {
		if w == "" {
			return &CompileError{Msg: "empty trigger word"}
		}
		ct.words = append(ct.words, []byte(w))
	}
	for _, p := range t.Patterns {
		re, err := regexp.Compile(p)
		if err != nil {
			return &CompileError{Msg: fmt.Sprintf("trigger pattern %q: %v", p, err)}
		}
		ct.patterns = append(ct.patterns, re)
	}
	for _, p := range t.PatternsAtStart {
		re, err := regexp.Compile(`^(?:` + p + `)`)
		if err != nil {
			return &CompileError{Msg: fmt.Sprintf("trigger pattern %q: %v", p, err)}
		}
		ct.patterns = append(ct.patterns, re)
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
			rej.Reason = "trigger token does not start the grammar: " + rej.Reason
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
	return m.watch(g.vocab.TokenBytes(id), id)
}

// watch appends generated text to the trigger buffer and activates the grammar if a
// trigger fires. id is the token the text came from, or -1.
func (m *Matcher) watch(text []byte, id int) error {
	lz := m.g.lazy
	old := len(m.buf)
	m.buf = append(m.buf, text...)
	start := -1
	consider := func(s int) {
		if s >= 0 && (start < 0 || s < start) {
			start = s
		}
	}
	for _, w := range lz.words {
		from := max(0, old-len(w)+1)
		if i := bytes.Index(m.buf[from:], w); i >= 0 {
			consider(from + i)
		}
	}
	for _, re := range lz.patterns {
		loc := re.FindSubmatchIndex(m.buf)
		if loc == nil {
			continue
		}
		s := loc[0]
		if len(loc) >= 4 && loc[2] >= 0 {
			s = loc[2]
		}
		consider(s)
	}
	if len(lz.after) > 0 {
		from := max(0, old-len(lz.after)+1)
		if i := bytes.Index(m.buf[from:], lz.after); i >= 0 {
			consider(from + i + len(lz.after))
		}
	}
	if start < 0 {
		m.push()
		m.hist[len(m.hist)-1].bufLen = int32(old)
		return nil
	}
	nx, err := m.acceptText(m.fam.start, m.buf[start:])
	if _, limit := err.(*LimitError); limit {
		m.buf = m.buf[:old]
		return err
	}
	if err != nil {
		constrained := append([]byte(nil), m.buf[start:]...)
		m.buf = m.buf[:old]
		r := err.(*RejectError)
		r.Token, r.Text = id, text
		if id < 0 {
			r.Text = constrained
		}
		r.Reason = fmt.Sprintf("trigger fired, but the grammar rejects the constrained text %q: %s", constrained, r.Reason)
		return r
	}
	m.push()
	m.hist[len(m.hist)-1].bufLen = int32(old)
	m.awaiting = false
	m.cfg = nx
	return nil
}
