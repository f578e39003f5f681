package gbnf

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// The bnf_sampler dialect (seed 003): a second front end that produces the same IR
// as Parse.
//
//	<start>    ::= <A> <B> | 'x' "y"
//	<sequence> ::= <any!> | <any!> <sequence>
//	<content>  ::= <except!([escaped])> | <except!('"')> <content>
//
// Nonterminals are written in angle brackets, terminals in single or double quotes;
// whitespace (newlines included) separates items, and a new production starts where
// "<name> ::=" follows. Consecutive terminals are one terminal ('b''o''y' is 'boy').
// ";" starts a comment that runs to the end of the line (outside terminals).
//
// In terminals and excepted literals the escapes \t \n \r \\ \' \" \uHHHH and
// \u{H...} stand for the UTF-8 bytes of the character, and \xHH for the raw byte HH.
//
// # Raw bytes
//
// A terminal is a byte string (consecutive terminals are joined first). Its bytes
// that form UTF-8 characters become character elements, as in GBNF
// ('\xe4\xbd\xa0' is the character "你", and a grammar written only in
// characters has exactly the masks of the same grammar in GBNF); every byte that is
// not part of a valid UTF-8 character (a lone lead byte, a stray continuation
// byte, a surrogate's or an overlong form's bytes) becomes a raw-byte element
// (Element{Kind: Byte}), as in bnf_sampler:
//
//	<sequence> ::= <byte> | <byte> <sequence>
//	<byte>     ::= '\xf0' | '\xa0' | '\xb0'
//
// matches any non-empty string of the bytes F0, A0 and B0, and so allows exactly
// the tokens whose bytes are all among them (byte-fallback tokens such as <0xA0>
// included).
//
// The language of such a grammar is a set of byte strings: a character element
// matches the UTF-8 encoding of one code point of its class, a raw-byte element
// one byte of its set, and a sequence the concatenation. A raw byte is taken only
// between characters and never starts or continues a character element's UTF-8
// decoding, so '\xf0' <a> with <a> ::= 'a' is the two bytes F0 61, and '\xe4' <b>
// with <b> ::= '\xbd\xa0' is the three bytes E4 BD A0 (all three raw, since
// neither terminal is UTF-8 on its own: the same bytes as "你", which '\xe4'
// '\xbd\xa0', one joined terminal, writes as one character). Masks are exact for
// this language, as for any other: a token is allowed iff its bytes continue some
// string of the language, across token boundaries too. The output is UTF-8 text
// wherever the grammar writes characters; it holds bytes that are not UTF-8 only
// where the grammar itself puts raw bytes.
//
// <any!> matches any one token of the vocabulary (Element{Kind: Token, Token:
// AnyToken}). <except!('lit')> and <except!([nonterminal])> are token-level
// elements (Element{Kind: Except}); the engine gives them bnf_sampler's meaning.
//
// The start rule is WithRoot's, else <start> if the grammar defines it, else the
// first production. Left recursion is rewritten as Parse does (see leftrec_rewrite.go).

// AnyToken is the Token id of an element that matches any single token of the
// vocabulary (bnf_sampler's <any!>), end-of-generation tokens excepted.
const AnyToken = -2

// An element of Kind Except (bnf_sampler's <except!(...)>) matches one token that
// does not contain an excepted literal, or the part of a token before the first
// excepted literal occurs in it (when some prefix of that part is itself a token;
// the rest of the token goes on to the next element). The excepted literal is
// Element.Name's bytes (<except!('lit')>), or, when Element.Rule >= 0, the excepted
// literals are every token of the vocabulary that rule Element.Rule matches whole
// (<except!([nonterminal])>).

// ParseBNF parses a grammar in bnf_sampler's BNF dialect into a Grammar. Options are
// those of Parse; every failure is an *Error with a line:col.
func ParseBNF(src string, opts ...Option) (*Grammar, error) {
	cfg := config{maxRepeat: DefaultMaxRepeat, maxElements: DefaultMaxElements}
	for _, o := range opts {
		o(&cfg)
	}
	p := &parser{src: src, cfg: &cfg}
	if err := p.checkUTF8(); err != nil {
		return nil, err
	}
	p.lines = lineStarts(src)
	b := &bnfParser{p: p}
	rules, err := b.grammar()
	if err != nil {
		return nil, err
	}
	if cfg.root == "" {
		cfg.root = rules[0].name
		for _, r := range rules {
			if r.name == "start" {
				cfg.root = "start"
			}
		}
	}
	return compile(p, rules)
}

type bnfParser struct {
	p *parser
}

func (b *bnfParser) skip() {
	p := b.p
	for p.pos < len(p.src) {
		switch c := p.src[p.pos]; c {
		case ' ', '\t', '\n', '\r':
			p.pos++
		case ';':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' {
				p.pos++
			}
		default:
			return
		}
	}
}

// name reads "<...>" at p.pos and returns what is inside.
func (b *bnfParser) name() (string, error) {
	p := b.p
	open := p.pos
	if p.peek() != '<' {
		return "", p.errorf(p.pos, ErrSyntax, `expected a nonterminal such as <name>, found %s`, p.describe(p.pos))
	}
	p.pos++
	start := p.pos
	for p.pos < len(p.src) && p.src[p.pos] != '>' && p.src[p.pos] != '<' && p.src[p.pos] != '\n' {
		p.pos++
	}
	if p.peek() != '>' {
		return "", p.errorf(open, ErrSyntax, `unterminated nonterminal: expected ">" to close "<"`)
	}
	name := p.src[start:p.pos]
	p.pos++
	if strings.TrimSpace(name) == "" {
		return "", p.errorf(open, ErrSyntax, `empty nonterminal name "<>"`)
	}
	return name, nil
}

// atProduction reports whether "<name> ::=" starts at p.pos.
func (b *bnfParser) atProduction() bool {
	p := b.p
	save := p.pos
	defer func() { p.pos = save }()
	if p.peek() != '<' {
		return false
	}
	if _, err := b.name(); err != nil {
		return false
	}
	b.skip()
	return p.at("::=")
}

func (b *bnfParser) grammar() ([]ruleDef, error) {
	p := b.p
	if strings.HasPrefix(p.src, "\uFEFF") {
		p.pos = len("\uFEFF")
	}
	b.skip()
	var rules []ruleDef
	for p.pos < len(p.src) {
		start := p.pos
		name, err := b.name()
		if err != nil {
			return nil, err
		}
		if strings.HasSuffix(name, "!") || strings.HasPrefix(name, "except!(") {
			return nil, p.errorf(start, ErrSyntax, "<%s> is a built-in nonterminal and cannot be defined", name)
		}
		p.rule = name
		b.skip()
		if !p.at("::=") {
			return nil, p.errorf(p.pos, ErrSyntax, `expected "::=" after <%s>, found %s`, name, p.describe(p.pos))
		}
		p.pos += 3
		b.skip()
		alts, err := b.alternatives()
		if err != nil {
			return nil, err
		}
		rules = append(rules, ruleDef{name: name, off: start, alts: alts})
	}
	if len(rules) == 0 {
		return nil, p.errorf(0, ErrEmpty, `empty grammar: expected at least one production such as "<start> ::= 'x'"`)
	}
	return rules, nil
}

func (b *bnfParser) alternatives() ([][]*node, error) {
	p := b.p
	var alts [][]*node
	for {
		seq, err := b.sequence()
		if err != nil {
			return nil, err
		}
		alts = append(alts, decodeTerminals(seq))
		if p.peek() != '|' {
			break
		}
		p.pos++
		b.skip()
	}
	if p.pos < len(p.src) && !b.atProduction() {
		return nil, p.errorf(p.pos, ErrSyntax, `unexpected %s in <%s>: expected a terminal, a nonterminal, "|" or a new production "<name> ::= ..."`,
			p.describe(p.pos), p.rule)
	}
	return alts, nil
}

func (b *bnfParser) sequence() ([]*node, error) {
	p := b.p
	seq := []*node{}
	for p.pos < len(p.src) {
		start := p.pos
		switch c := p.src[p.pos]; {
		case c == '\'' || c == '"':
			n, err := b.terminal()
			if err != nil {
				return nil, err
			}
			// Consecutive terminals become one terminal once the sequence
			// is read (see decodeTerminals).
			seq = append(seq, n)
		case p.at("<except!("):
			n, err := b.except()
			if err != nil {
				return nil, err
			}
			seq = append(seq, n)
		case c == '<':
			if b.atProduction() {
				return seq, nil
			}
			name, err := b.name()
			if err != nil {
				return nil, err
			}
			switch {
			case name == "any!":
				seq = append(seq, p.node(node{op: opToken, off: start, token: AnyToken}))
			case strings.HasSuffix(name, "!"):
				return nil, p.errorf(start, ErrSyntax, "unknown built-in nonterminal <%s>: expected <any!>, <except!('literal')> or <except!([nonterminal])>", name)
			default:
				seq = append(seq, p.node(node{op: opRef, off: start, name: name}))
			}
		default:
			return seq, nil
		}
		b.skip()
	}
	return seq, nil
}

// terminal parses a quoted terminal at p.pos into a literal node holding its
// bytes (see decodeTerminals).
func (b *bnfParser) terminal() (*node, error) {
	p := b.p
	open := p.pos
	bs, err := b.quoted()
	if err != nil {
		return nil, err
	}
	return p.node(node{op: opLiteral, off: open, name: string(bs)}), nil
}

// quoted parses '...' or "..." at p.pos with its escapes and returns its bytes.
func (b *bnfParser) quoted() ([]byte, error) {
	p := b.p
	open := p.pos
	q := p.src[p.pos]
	p.pos++
	var out []byte
	for {
		if p.pos >= len(p.src) {
			return nil, p.errorf(open, ErrSyntax, "unterminated terminal: no closing %c", q)
		}
		c := p.src[p.pos]
		if c == q {
			p.pos++
			return out, nil
		}
		if c != '\\' {
			out = append(out, c)
			p.pos++
			continue
		}
		esc := p.pos
		if p.pos+1 >= len(p.src) {
			return nil, p.errorf(esc, ErrEscape, "unfinished escape sequence at end of input")
		}
		e := p.src[p.pos+1]
		p.pos += 2
		switch e {
		case 't':
			out = append(out, '\t')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case '\\', '\'', '"':
			out = append(out, e)
		case 'x':
			v, err := b.hex(esc, 2)
			if err != nil {
				return nil, err
			}
			out = append(out, byte(v))
		case 'u':
			var v rune
			var err error
			if p.peek() == '{' {
				v, err = b.braced(esc)
			} else {
				v, err = p.parseHex(esc, 4)
			}
			if err != nil {
				return nil, err
			}
			if v >= surrogateLo && v <= surrogateHi {
				return nil, p.errorf(esc, ErrEscape, "escape %s is a UTF-16 surrogate, not a character", p.src[esc:p.pos])
			}
			out = utf8.AppendRune(out, v)
		default:
			r, _ := utf8.DecodeRuneInString(p.src[esc+1:])
			return nil, p.errorf(esc, ErrEscape, `unknown escape "\%c": expected one of \t \n \r \\ \' \" \xHH \uHHHH \u{H...}`, r)
		}
	}
}

// hex reads exactly digits hex digits (for \xHH, any byte value).
func (b *bnfParser) hex(start, digits int) (int, error) {
	p := b.p
	v := 0
	for range digits {
		d := hexDigit(p.peek())
		if p.pos >= len(p.src) || d < 0 {
			return 0, p.errorf(start, ErrEscape, `escape %s needs %d hex digits, found %s`, p.src[start:start+2], digits, p.describe(p.pos))
		}
		v = v<<4 | d
		p.pos++
	}
	return v, nil
}

// braced reads {H...} after \u.
func (b *bnfParser) braced(start int) (rune, error) {
	p := b.p
	p.pos++
	v, n := 0, 0
	for p.pos < len(p.src) && p.src[p.pos] != '}' {
		d := hexDigit(p.src[p.pos])
		if d < 0 || n >= 6 {
			return 0, p.errorf(start, ErrEscape, `escape \u{...} takes 1 to 6 hex digits, found %s`, p.describe(p.pos))
		}
		v = v<<4 | d
		n++
		p.pos++
	}
	if p.peek() != '}' || n == 0 {
		return 0, p.errorf(start, ErrEscape, `escape \u{...} takes 1 to 6 hex digits and a closing "}"`)
	}
	p.pos++
	if v > utf8.MaxRune {
		return 0, p.errorf(start, ErrEscape, `escape %s is beyond the last code point U+10FFFF`, p.src[start:p.pos])
	}
	return rune(v), nil
}

func hexDigit(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// decodeTerminals joins each run of consecutive terminals of seq into its first one
// (as bytes: a character may span two of them) and gives it its elements: the
// characters its bytes form (as code points), and a raw byte (rawByteRune) for each
// byte that is not part of a valid UTF-8 character. It returns the shortened seq.
func decodeTerminals(seq []*node) []*node {
	out := seq[:0]
	var run []byte
	for k := 0; k < len(seq); {
		n := seq[k]
		out = append(out, n)
		k++
		if n.op != opLiteral {
			continue
		}
		run = append(run[:0], n.name...)
		for ; k < len(seq) && seq[k].op == opLiteral; k++ {
			run = append(run, seq[k].name...)
		}
		bs := string(run)
		chars := make([]Range, 0, len(bs))
		for i := 0; i < len(bs); {
			r, size := utf8.DecodeRuneInString(bs[i:])
			if r == utf8.RuneError && size <= 1 {
				v := rawByteRune(bs[i])
				chars = append(chars, Range{v, v})
				i++
				continue
			}
			chars = append(chars, Range{r, r})
			i += size
		}
		n.ranges, n.name = chars, ""
	}
	return out
}

// rawByteRune stands for raw byte v in a literal node's ranges (compile makes it an
// Element of Kind Byte): a negative value, which no code point is.
func rawByteRune(v byte) rune { return -1 - rune(v) }

// rawByteOf is the byte value rawByteRune(v) stands for.
func rawByteOf(r rune) rune { return -1 - r }

// formatByte writes a Byte element in bnf_sampler's notation: '\xHH', or a group of
// such alternatives for a set of several bytes.
func formatByte(b *strings.Builder, e Element) {
	var vals []rune
	for _, r := range e.Ranges {
		for v := max(r.Lo, 0); v <= min(r.Hi, 0xFF); v++ {
			vals = append(vals, v)
		}
	}
	if len(vals) != 1 {
		b.WriteByte('(')
	}
	for i, v := range vals {
		if i > 0 {
			b.WriteString(" | ")
		}
		fmt.Fprintf(b, "'\\x%02x'", v)
	}
	if len(vals) != 1 {
		b.WriteByte(')')
	}
}

// except parses <except!('lit')>, <except!("lit")> or <except!([nonterminal])> at
// p.pos, from the source (a literal may hold "<" or ">").
func (b *bnfParser) except() (*node, error) {
	p := b.p
	start := p.pos
	p.pos += len("<except!(")
	malformed := func() error {
		return p.errorf(start, ErrSyntax, `malformed <except!(...)>: expected <except!('literal')>, <except!("literal")> or <except!([nonterminal])>`)
	}
	switch p.peek() {
	case '[':
		p.pos++
		from := p.pos
		for p.pos < len(p.src) && p.src[p.pos] != ']' && p.src[p.pos] != '\n' {
			p.pos++
		}
		ref := p.src[from:p.pos]
		if p.peek() != ']' || strings.TrimSpace(ref) == "" {
			return nil, malformed()
		}
		p.pos++
		if !p.at(")>") {
			return nil, p.errorf(p.pos, ErrSyntax, `expected ")>" to close <except!(...)>, found %s`, p.describe(p.pos))
		}
		p.pos += 2
		return p.node(node{op: opExcept, off: start, name: ref}), nil
	case '\'', '"':
		bs, err := b.quoted()
		if err != nil {
			return nil, err
		}
		if !p.at(")>") {
			return nil, p.errorf(p.pos, ErrSyntax, `expected ")>" to close <except!(...)>, found %s`, p.describe(p.pos))
		}
		p.pos += 2
		if len(bs) == 0 {
			return nil, p.errorf(start, ErrSyntax, "<except!('')>: the excepted literal is empty")
		}
		return p.node(node{op: opExceptLit, off: start, name: string(bs)}), nil
	}
	return nil, malformed()
}

// except compiles an <except!(...)> node.
func (c *compiler) except(n *node) ([]Element, error) {
	if err := c.grow(1, n.off); err != nil {
		return nil, err
	}
	e := Element{Kind: Except, Rule: -1, Token: -1}
	if n.op == opExcept {
		e.Rule = n.ref
	} else {
		e.Name = n.name
	}
	return []Element{e}, nil
}

// formatExcept writes an Except element in bnf_sampler's notation.
func formatExcept(b *strings.Builder, g *Grammar, e Element) {
	if e.Rule >= 0 && int(e.Rule) < len(g.Rules) {
		b.WriteString("<except!([" + g.Rules[e.Rule].Name + "])>")
		return
	}
	b.WriteString("<except!('")
	for _, c := range []byte(e.Name) {
		switch {
		case c == '\'' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c >= 0x7f:
			fmt.Fprintf(b, "\\x%02x", c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteString("')>")
}
