package gbnf

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Default limits. They bound the work and memory of Parse on hostile input.
const (
	// DefaultRoot is the rule a grammar starts from unless WithRoot says otherwise.
	DefaultRoot = "root"
	// DefaultMaxRepeat is the largest minimum count a repetition may ask for
	// ({n}, {n,}, {n,m}); it is llama.cpp's repetition threshold. The maximum is
	// not bounded: large counts are kept as counters (see Repeat), not unrolled.
	DefaultMaxRepeat = 2000
	// DefaultMaxElements bounds the size of the expanded grammar (see WithMaxElements).
	DefaultMaxElements = 1 << 20
	// maxDepth bounds the nesting of parentheses, so that the recursive descent
	// stays shallow on any input.
	maxDepth = 1000
)

// An Option configures Parse.
type Option func(*config)

type config struct {
	root          string
	maxRepeat     int
	maxElements   int
	allowDeadEnds bool
	noLeftRec     bool
}

// AllowDeadEnds skips the dead-end check, for tools that analyse a grammar rather
// than run it (the JSON Schema converter uses it to name the schema part that
// accepts nothing). A grammar parsed with it must not be compiled for decoding
// unless DeadEnds reports nothing.
func AllowDeadEnds() Option { return func(c *config) { c.allowDeadEnds = true } }

// AssumeNoLeftRecursion skips the search for left recursion, and so its rewrite
// (see leftrec_rewrite.go), for a program whose grammars have none by
// construction (the JSON Schema converter): on a Kubernetes schema's grammar the
// search is a tenth of the parse. engine.Compile refuses left recursion all the
// same, so a wrong assumption is an error there, never a wrong mask.
func AssumeNoLeftRecursion() Option { return func(c *config) { c.noLeftRec = true } }

// WithRoot names the rule the grammar starts from (default "root").
func WithRoot(name string) Option {
	return func(c *config) {
		if name != "" {
			c.root = name
		}
	}
}

// WithMaxRepeat sets the largest minimum count n a repetition {n}, {n,} or {n,m}
// may ask for (default DefaultMaxRepeat).
func WithMaxRepeat(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.maxRepeat = n
		}
	}
}

// WithMaxElements bounds the expansion of a grammar (default DefaultMaxElements):
// both the number of elements Parse generates in all rules together, and the
// size that nested bounded repetitions unroll to along any chain of nesting
// (the product of their counts: (x{0,99}){0,99} unrolls to 9801 copies of x).
// The second bound is what rejects grammars such as six nested {0,99}, whose
// expansion would make any matcher track astronomically many states.
func WithMaxElements(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.maxElements = n
		}
	}
}

// Parse parses GBNF text (llama.cpp's dialect) into a Grammar. Literals are
// expanded to one Char element per code point, and groups and repetitions to
// generated helper rules. It reports the first problem it finds as an *Error.
func Parse(src string, opts ...Option) (*Grammar, error) {
	cfg := config{root: DefaultRoot, maxRepeat: DefaultMaxRepeat, maxElements: DefaultMaxElements}
	for _, o := range opts {
		o(&cfg)
	}
	p := &parser{src: src, cfg: &cfg}
	if err := p.checkUTF8(); err != nil {
		return nil, err
	}
	p.lines = lineStarts(src)
	rules, err := p.parseGrammar()
	if err != nil {
		return nil, err
	}
	return compile(p, rules)
}

// A RuleText is one rule of a grammar given rule by rule: Name ::= Body, where
// Body is what follows "::=" on the rule's line (it holds no line break).
type RuleText struct{ Name, Body string }

// Text is the grammar text of rules: each rule "Name ::= Body" on a line of its
// own, in order.
func Text(rules []RuleText) string {
	n := 0
	for _, r := range rules {
		n += len(r.Name) + len(" ::= ") + len(r.Body) + 1
	}
	var b strings.Builder
	b.Grow(n)
	for _, r := range rules {
		b.WriteString(r.Name)
		b.WriteString(" ::= ")
		b.WriteString(r.Body)
		b.WriteByte('\n')
	}
	return b.String()
}

// ParseRules parses a grammar given rule by rule, without making its text: the
// grammar is what Parse(Text(rules), opts...) returns, and so is an error about
// the rules' contents (with its line and column in that text). A body that
// leaves a literal, class, token, group or count open is read on into the next
// lines, as Parse reads it, for Parse's error; where that reading closes what
// was open (a literal may hold a line break), the body is an error here. A
// program that builds a grammar rule by rule (the JSON Schema converter) saves
// writing the text and scanning it again for names and lines.
//
// Each rule must stand on its own line: a name of ASCII letters, digits and
// '-', and a body that holds no line break, is not blank and does not end with
// "|" (in a text, those would run on into the next line). Other rules are an
// error here, whatever Parse would make of their text.
//
//	g, err := gbnf.ParseRules([]gbnf.RuleText{{"root", `"a" b`}, {"b", "[0-9]+"}})
func ParseRules(rules []RuleText, opts ...Option) (*Grammar, error) {
	cfg := config{root: DefaultRoot, maxRepeat: DefaultMaxRepeat, maxElements: DefaultMaxElements}
	for _, o := range opts {
		o(&cfg)
	}
	p := &parser{cfg: &cfg, rules: rules, starts: make([]int, len(rules)), lines: make([]int, 0, len(rules)+1)}
	if len(rules) == 0 {
		p.lines = append(p.lines, 0)
		return nil, p.errorf(0, ErrEmpty, `empty grammar: expected at least one rule such as "root ::= ..."`)
	}
	// where each line, and each body, would start in the text
	off := 0
	for i, r := range rules {
		p.lines = append(p.lines, off)
		p.starts[i] = off + len(r.Name) + len(" ::= ")
		off = p.starts[i] + len(r.Body) + 1
	}
	p.lines = append(p.lines, off) // the text ends with a line break
	// Parse's checks of the text before its first rule: UTF-8, then names
	for i, r := range rules {
		for k, s := range [2]string{r.Name, r.Body} {
			if utf8.ValidString(s) {
				continue
			}
			at := p.lines[i]
			if k == 1 {
				at = p.starts[i]
			}
			for j := 0; j < len(s); {
				c, size := utf8.DecodeRuneInString(s[j:])
				if c == utf8.RuneError && size == 1 {
					return nil, p.errorf(at+j, ErrUTF8, "invalid UTF-8 byte 0x%02X: grammar text must be UTF-8", s[j])
				}
				j += size
			}
		}
	}
	defs := make([]ruleDef, 0, len(rules))
	for i, r := range rules {
		if j := lineBreak(r.Body); j >= 0 {
			return nil, p.errorf(p.starts[i]+j, ErrSyntax, "the body of rule %q holds a line break: a rule given apart must be one line", r.Name)
		}
		if r.Name == "" || strings.IndexFunc(r.Name, func(c rune) bool { return c >= utf8.RuneSelf || !isNameByte(byte(c)) }) >= 0 {
			return nil, p.errorf(p.lines[i], ErrSyntax, "rule name %q: a name is ASCII letters, digits and '-'", r.Name)
		}
		p.src, p.base, p.rule = r.Body, p.starts[i], r.Name
		alts, err := p.parseBody()
		if err != nil {
			// A body that breaks off (a literal, class, escape, group or
			// count left open) is read again as Parse reads it: on past its
			// line break into the text of the rules after it, for the error
			// Parse gives. Where that reading closes what was open (a
			// literal that ends on a later line), the rules are not
			// ParseRules' to take: the first error stands. (A body that
			// does not break off is never read past its end.)
			first := err
			p.src, p.rereading = r.Body+"\n"+Text(rules[i+1:]), true
			if _, err = p.parseBody(); err == nil {
				err = first
			}
			return nil, err
		}
		defs = append(defs, ruleDef{name: r.Name, off: p.lines[i], alts: alts})
	}
	p.src, p.pos, p.base = "", 0, 0
	return compile(p, defs)
}

// lineBreak is the index of the first '\n' or '\r' in s, or -1 (two vectorized
// byte searches: strings.IndexAny reads a byte at a time, and ParseRules asks
// of every body).
func lineBreak(s string) int {
	j := strings.IndexByte(s, '\n')
	if k := strings.IndexByte(s, '\r'); k >= 0 && (j < 0 || k < j) {
		j = k
	}
	return j
}

// parseBody parses p.src as the body of rule p.rule (ParseRules).
func (p *parser) parseBody() ([][]*node, error) {
	p.pos, p.depth = 0, 0
	p.skipSpace(true)
	if p.pos == len(p.src) {
		// in a text, the rule would go on with the next line
		return nil, p.errorf(p.pos, ErrSyntax, "the body of rule %q is empty: write \"\" for the empty string", p.rule)
	}
	alts, err := p.parseAlternates(false)
	if err != nil {
		return nil, err
	}
	return alts, p.ruleEnd(p.rule)
}

// The syntax tree between parsing and expansion. It is never larger than the
// source text, so every check that can run on it runs before anything is
// expanded.

type nodeOp uint8

const (
	opLiteral   nodeOp = iota // "..." : ranges, one {r, r} per code point (raw bytes: rawByteRune)
	opClass                   // [...] or "." : ranges, negated
	opRef                     // rule name : name
	opToken                   // <[N]>, <name>, !...: token, name, negated
	opGroup                   // ( ... ) : alts
	opRepeat                  // sub followed by * + ? {m,n} : sub, min, max (-1: no max)
	opExcept                  // bnf dialect <except!([name])>: name of a rule
	opExceptLit               // bnf dialect <except!('...')>: name holds the excepted bytes
)

// node is one item of the syntax tree. A large grammar has one per literal,
// class, reference and operator (~90k for a 1 MB schema grammar), so the fields
// are as narrow as their limits allow (counts and token ids are bounded by maxInt).
type node struct {
	op      nodeOp
	negated bool
	ref     int32 // opRef, opExcept: the rule's index (set by compile)
	token   int32 // opToken
	min     int32 // opRepeat
	max     int32 // opRepeat
	off     int   // byte offset of the node's syntax (of the operator, for opRepeat)
	ranges  []Range
	name    string // opRef, opToken, opExcept; opExceptLit: the bytes; ParseBNF's opLiteral: its bytes until decodeTerminals
	alts    [][]*node
	sub     *node
}

type ruleDef struct {
	name string
	off  int
	alts [][]*node
}

type parser struct {
	src string
	pos int
	// base is the offset of src in the grammar's text: 0 for Parse; for
	// ParseRules, where src is one rule's body at a time, the offset that body
	// would have in Text(rules). Node and rule offsets are kept in the text's
	// terms (p.node adds base), so positions are the same either way.
	base int
	// rules, starts: ParseRules' rules, and the offset of each body in
	// Text(rules) (for textAt once parsing is over)
	rules  []RuleText
	starts []int
	// rereading: ParseRules reads a broken body again, with the text after it
	rereading bool
	cfg       *config
	lines     []int // byte offsets where lines start
	depth     int
	rule      string // the rule being parsed, for messages
	// refs: every reference, in the order written (compile resolves them in
	// one pass, not a walk of the tree)
	refs []*node
	// bounds: a {m,n} repetition was written (without one, every item
	// unrolls to a single copy and checkUnroll has nothing to check)
	bounds bool
	// sequences and lists of alternatives collect on stacks and are carved
	// from chunks (see parseAlternates)
	seqStack, seqSlab []*node
	altStack, altSlab [][]*node
	slab              []node  // nodes are carved from chunks (up to 256 nodes each)
	chars             []Range // literals' code points likewise (see charBuf)
}

// charBuf returns an empty slice with room for n code points of a literal,
// carved from a shared chunk (appending past n reallocates, leaving the chunk
// alone). The compiled grammar's Char elements point into it: a literal's
// ranges are made once, here.
func (p *parser) charBuf(n int) []Range {
	if n > 1024 {
		return make([]Range, 0, n)
	}
	if cap(p.chars)-len(p.chars) < n {
		p.chars = make([]Range, 0, min(max(2*cap(p.chars), 64), 4096))
		if n > cap(p.chars) {
			return make([]Range, 0, n)
		}
	}
	k := len(p.chars)
	p.chars = p.chars[:k+n]
	return p.chars[k : k : k+n]
}

// node returns a new node holding n, from the parser's current chunk.
func (p *parser) node(n node) *node {
	n.off += p.base
	if len(p.slab) == cap(p.slab) {
		p.slab = make([]node, 0, min(max(2*cap(p.slab), 16), 256)) // small grammars stay small
	}
	p.slab = append(p.slab, n)
	x := &p.slab[len(p.slab)-1]
	if n.op == opRef || n.op == opExcept {
		p.refs = append(p.refs, x)
	}
	return x
}

// lineStarts returns the offsets at which each line of src starts.
func lineStarts(src string) []int {
	starts := []int{0}
	for i := 0; i < len(src); i++ {
		if src[i] == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// position converts a byte offset into a 1-based line and column.
func (p *parser) position(off int) Pos {
	if p.lines == nil {
		p.lines = lineStarts(p.src)
	}
	lo, hi := 0, len(p.lines)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if p.lines[mid] <= off {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return Pos{Line: lo + 1, Col: off - p.lines[lo] + 1}
}

// errorf makes an *Error at offset off of src (while parsing; compile, which
// runs with base 0, passes offsets in the text).
func (p *parser) errorf(off int, code ErrorCode, format string, args ...any) *Error {
	return &Error{Pos: p.position(p.base + off), Code: code, Msg: fmt.Sprintf(format, args...)}
}

// textAt is the text's n bytes at offset off (once parsing is over; for
// ParseRules, within one rule's body).
func (p *parser) textAt(off, n int) string {
	if p.rules == nil {
		return p.src[off : off+n]
	}
	i, found := slices.BinarySearch(p.starts, off)
	if !found {
		i--
	}
	b := p.rules[i].Body
	lo := off - p.starts[i]
	return b[lo:min(lo+n, len(b))]
}

func (p *parser) checkUTF8() error {
	if utf8.ValidString(p.src) {
		return nil
	}
	for i := 0; i < len(p.src); {
		r, size := utf8.DecodeRuneInString(p.src[i:])
		if r == utf8.RuneError && size == 1 {
			return p.errorf(i, ErrUTF8, "invalid UTF-8 byte 0x%02X: grammar text must be UTF-8", p.src[i])
		}
		i += size
	}
	return nil
}

// describe quotes what is at off for a message: a character, "::=", or "end of input".
func (p *parser) describe(off int) string {
	if off >= len(p.src) {
		switch {
		case p.rules == nil || p.rereading:
			return "end of input"
		}
		return strconv.Quote("\n") // in the text, a body ends its line
	}
	if strings.HasPrefix(p.src[off:], "::=") {
		return `"::="`
	}
	r, _ := utf8.DecodeRuneInString(p.src[off:])
	if r == '"' {
		return `'"'`
	}
	return strconv.Quote(string(r))
}

func (p *parser) peek() byte {
	if p.pos < len(p.src) {
		return p.src[p.pos]
	}
	return 0
}

func (p *parser) at(s string) bool { return strings.HasPrefix(p.src[p.pos:], s) }

// skipSpace skips blanks and # comments, and newlines too when newlineOK: inside
// parentheses, and after "::=" and "|". Elsewhere a newline ends the rule.
func (p *parser) skipSpace(newlineOK bool) {
	for p.pos < len(p.src) {
		switch c := p.src[p.pos]; {
		case c == ' ' || c == '\t':
			p.pos++
		case c == '#':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' && p.src[p.pos] != '\r' {
				p.pos++
			}
		case newlineOK && (c == '\n' || c == '\r'):
			p.pos++
		default:
			return
		}
	}
}

// isNameByte reports whether c may appear in a rule name: ASCII letters, digits and '-'.
func isNameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-'
}

func (p *parser) parseName() string {
	start := p.pos
	for p.pos < len(p.src) && isNameByte(p.src[p.pos]) {
		p.pos++
	}
	return p.src[start:p.pos]
}

func (p *parser) parseGrammar() ([]ruleDef, error) {
	if strings.HasPrefix(p.src, "\uFEFF") {
		p.pos = len("\uFEFF")
	}
	p.skipSpace(true)
	var rules []ruleDef
	for p.pos < len(p.src) {
		r, err := p.parseRule(len(rules) > 0)
		if err != nil {
			return nil, err
		}
		rules = append(rules, r)
	}
	if len(rules) == 0 {
		return nil, p.errorf(0, ErrEmpty, `empty grammar: expected at least one rule such as "root ::= ..."`)
	}
	return rules, nil
}

func (p *parser) parseRule(hasPrev bool) (ruleDef, error) {
	start := p.pos
	name := p.parseName()
	if name == "" {
		if hasPrev {
			return ruleDef{}, p.errorf(start, ErrSyntax,
				`expected a rule name, found %s (a rule continues onto the next line only inside parentheses or after a trailing "|")`,
				p.describe(start))
		}
		return ruleDef{}, p.errorf(start, ErrSyntax, `expected a rule name, found %s`, p.describe(start))
	}
	p.rule = name
	p.skipSpace(false)
	if !p.at("::=") {
		return ruleDef{}, p.errorf(p.pos, ErrSyntax, `expected "::=" after rule name %q, found %s`, name, p.describe(p.pos))
	}
	p.pos += 3
	p.skipSpace(true)
	alts, err := p.parseAlternates(false)
	if err != nil {
		return ruleDef{}, err
	}
	if err := p.ruleEnd(name); err != nil {
		return ruleDef{}, err
	}
	p.skipSpace(true)
	return ruleDef{name: name, off: start, alts: alts}, nil
}

// ruleEnd checks that rule name's alternatives end at the end of the line (or
// of the input), and steps over the line break.
func (p *parser) ruleEnd(name string) error {
	switch c := p.peek(); {
	case p.pos >= len(p.src):
	case c == '\n':
		p.pos++
	case c == '\r':
		p.pos++
		if p.peek() == '\n' {
			p.pos++
		}
	case p.at("::="):
		return p.errorf(p.pos, ErrSyntax,
			`unexpected "::=" inside rule %q: a new rule must start on its own line (a line ending in "|" continues the rule above)`, name)
	case c == ')':
		return p.errorf(p.pos, ErrSyntax, `unexpected ")" in rule %q: no "(" to close`, name)
	default:
		return p.errorf(p.pos, ErrSyntax,
			`unexpected %s in rule %q: expected an item, "|" or the end of the line`, p.describe(p.pos), name)
	}
	return nil
}

// parseAlternates parses sequences separated by "|".
func (p *parser) parseAlternates(nested bool) ([][]*node, error) {
	// The alternatives collect on a stack shared by nested groups and are
	// copied out at the end into a slice carved from a chunk: one exact-size
	// slice per list, not a doubling series (likewise parseSequence).
	base := len(p.altStack)
	defer func() { p.altStack = p.altStack[:base] }()
	for {
		seq, err := p.parseSequence(nested)
		if err != nil {
			return nil, err
		}
		p.altStack = append(p.altStack, seq)
		if p.peek() != '|' {
			alts := p.altStack[base:]
			if cap(p.altSlab)-len(p.altSlab) < len(alts) {
				p.altSlab = make([][]*node, 0, max(len(alts), min(2*cap(p.altSlab)+16, 256)))
			}
			k := len(p.altSlab)
			p.altSlab = append(p.altSlab, alts...)
			return p.altSlab[k:len(p.altSlab):len(p.altSlab)], nil
		}
		p.pos++
		p.skipSpace(true)
		if p.rules != nil && p.pos == len(p.src) {
			// in a text, the rule would go on with the next line
			return nil, p.errorf(p.pos, ErrSyntax, `rule %q ends with "|": a rule given apart must be one line`, p.rule)
		}
	}
}

func (p *parser) parseSequence(nested bool) ([]*node, error) {
	base := len(p.seqStack)
	defer func() { p.seqStack = p.seqStack[:base] }()
	for p.pos < len(p.src) {
		start := p.pos
		var n *node
		switch c := p.src[p.pos]; {
		case c == '"':
			lit, err := p.parseLiteral()
			if err != nil {
				return nil, err
			}
			n = lit
		case c == '[':
			cls, err := p.parseClass()
			if err != nil {
				return nil, err
			}
			n = cls
		case c == '.':
			p.pos++
			n = p.node(node{op: opClass, off: start, negated: true})
		case isNameByte(c):
			n = p.node(node{op: opRef, off: start, name: p.parseName()})
		case c == '(':
			if p.depth >= maxDepth {
				return nil, p.errorf(start, ErrTooLarge, "parentheses nested more than %d deep", maxDepth)
			}
			p.depth++
			p.pos++
			p.skipSpace(true)
			alts, err := p.parseAlternates(true)
			p.depth--
			if err != nil {
				return nil, err
			}
			if p.peek() != ')' {
				return nil, p.errorf(p.pos, ErrSyntax, `expected ")" to close the "(" at %s, found %s`,
					p.position(p.base+start), p.describe(p.pos))
			}
			p.pos++
			n = p.node(node{op: opGroup, off: start, alts: alts})
		case c == '<' || c == '!':
			tok, err := p.parseToken()
			if err != nil {
				return nil, err
			}
			n = tok
		case c == '*' || c == '+' || c == '?' || c == '{':
			if len(p.seqStack) == base {
				return nil, p.errorf(start, ErrSyntax, `%q must follow an item to repeat`, string(c))
			}
			min, max := int32(0), int32(-1)
			switch c {
			case '*':
				p.pos++
			case '+':
				p.pos++
				min = 1
			case '?':
				p.pos++
				max = 1
			case '{':
				lo, hi, err := p.parseBounds(nested)
				if err != nil {
					return nil, err
				}
				min, max = int32(lo), int32(hi) // bounded by maxInt
				p.bounds = true
			}
			last := p.seqStack[len(p.seqStack)-1]
			if last.op == opLiteral && len(last.ranges) == 0 {
				return nil, p.errorf(start, ErrSyntax, `%q must follow an item to repeat, not an empty literal`, string(c))
			}
			p.seqStack[len(p.seqStack)-1] = p.node(node{op: opRepeat, off: start, sub: last, min: min, max: max})
			p.skipSpace(nested)
			continue
		default:
			return p.carveSeq(base), nil
		}
		p.seqStack = append(p.seqStack, n)
		p.skipSpace(nested)
	}
	return p.carveSeq(base), nil
}

// carveSeq copies the sequence on the stack above base into a slice carved
// from a chunk.
func (p *parser) carveSeq(base int) []*node {
	items := p.seqStack[base:]
	if len(items) == 0 {
		return []*node{}
	}
	if cap(p.seqSlab)-len(p.seqSlab) < len(items) {
		p.seqSlab = make([]*node, 0, max(len(items), min(2*cap(p.seqSlab)+16, 1024))) // small grammars stay small
	}
	k := len(p.seqSlab)
	p.seqSlab = append(p.seqSlab, items...)
	return p.seqSlab[k:len(p.seqSlab):len(p.seqSlab)]
}

// parseBounds parses {n}, {n,}, {n,m} and {,m} at p.pos.
func (p *parser) parseBounds(nested bool) (min, max int, err error) {
	open := p.pos
	p.pos++
	p.skipSpace(nested)
	min, hasMin, err := p.parseInt("repetition count")
	if err != nil {
		return 0, 0, err
	}
	p.skipSpace(nested)
	switch p.peek() {
	case '}':
		if !hasMin {
			return 0, 0, p.errorf(p.pos, ErrSyntax, `expected a repetition count in "{}"`)
		}
		max = min
	case ',':
		p.pos++
		p.skipSpace(nested)
		var hasMax bool
		if max, hasMax, err = p.parseInt("repetition count"); err != nil {
			return 0, 0, err
		}
		if !hasMax {
			if !hasMin {
				return 0, 0, p.errorf(p.pos, ErrSyntax, `expected a minimum or maximum repetition count in "{,}"`)
			}
			max = -1
		}
		p.skipSpace(nested)
		if p.peek() != '}' {
			return 0, 0, p.errorf(p.pos, ErrSyntax, `expected "}" to close the "{" at %s, found %s`,
				p.position(p.base+open), p.describe(p.pos))
		}
	default:
		if !hasMin {
			return 0, 0, p.errorf(p.pos, ErrSyntax, `expected a repetition count after "{", found %s`, p.describe(p.pos))
		}
		return 0, 0, p.errorf(p.pos, ErrSyntax, `expected "," or "}" after the repetition count, found %s`, p.describe(p.pos))
	}
	p.pos++
	if max >= 0 && max < min {
		return 0, 0, p.errorf(open, ErrSyntax, "repetition {%d,%d}: the maximum is less than the minimum", min, max)
	}
	if min > p.cfg.maxRepeat {
		return 0, 0, p.errorf(open, ErrTooLarge, "repetition count %d exceeds the limit of %d (WithMaxRepeat)", min, p.cfg.maxRepeat)
	}
	return min, max, nil
}

// parseInt parses a decimal number at p.pos, if there is one.
func (p *parser) parseInt(what string) (n int, ok bool, err error) {
	start := p.pos
	for p.pos < len(p.src) && '0' <= p.src[p.pos] && p.src[p.pos] <= '9' {
		if n <= maxInt {
			n = n*10 + int(p.src[p.pos]-'0')
		}
		p.pos++
	}
	if n > maxInt {
		return 0, false, p.errorf(start, ErrTooLarge, "%s %s is too large", what, p.src[start:p.pos])
	}
	return n, p.pos > start, nil
}

// maxInt bounds the numbers in a grammar (repetition counts, token ids).
const maxInt = 1<<31 - 1

func (p *parser) parseLiteral() (*node, error) {
	open := p.pos
	p.pos++
	// Sized by the bytes up to the next quote (an escaped quote only makes it
	// short): one allocation for most literals.
	var chars []Range
	if n := strings.IndexByte(p.src[p.pos:], '"'); n > 0 {
		chars = p.charBuf(n)
	}
	for {
		if p.pos >= len(p.src) {
			return nil, p.errorf(open, ErrSyntax, `unterminated string literal: no closing '"'`)
		}
		if p.src[p.pos] == '"' {
			p.pos++
			return p.node(node{op: opLiteral, off: open, ranges: chars}), nil
		}
		r, err := p.parseChar()
		if err != nil {
			return nil, err
		}
		chars = append(chars, Range{r, r})
	}
}

func (p *parser) parseClass() (*node, error) {
	open := p.pos
	p.pos++
	n := p.node(node{op: opClass, off: open})
	if p.peek() == '^' {
		n.negated = true
		p.pos++
	}
	for {
		if p.pos >= len(p.src) {
			return nil, p.errorf(open, ErrSyntax, `unterminated character class: no closing "]"`)
		}
		if p.src[p.pos] == ']' {
			break
		}
		lo, err := p.parseChar()
		if err != nil {
			return nil, err
		}
		hi := lo
		if p.peek() == '-' && p.pos+1 < len(p.src) && p.src[p.pos+1] != ']' {
			dash := p.pos
			p.pos++
			if hi, err = p.parseChar(); err != nil {
				return nil, err
			}
			if hi < lo {
				return nil, p.errorf(dash, ErrSyntax, "invalid range %s-%s in character class: the end is before the start",
					strconv.QuoteRune(lo), strconv.QuoteRune(hi))
			}
		}
		n.ranges = append(n.ranges, Range{lo, hi})
	}
	p.pos++
	if len(n.ranges) == 0 {
		return nil, p.errorf(open, ErrSyntax, "empty character class %s matches nothing", p.src[open:p.pos])
	}
	n.ranges = normalize(n.ranges)
	return n, nil
}

// parseChar parses one code point of a literal or class: a UTF-8 character or
// an escape sequence.
func (p *parser) parseChar() (rune, error) {
	start := p.pos
	if p.src[p.pos] != '\\' {
		r, size := utf8.DecodeRuneInString(p.src[p.pos:])
		p.pos += size
		return r, nil
	}
	if p.pos+1 >= len(p.src) {
		return 0, p.errorf(start, ErrEscape, `unfinished escape sequence at end of input`)
	}
	c := p.src[p.pos+1]
	p.pos += 2
	switch c {
	case 'n':
		return '\n', nil
	case 'r':
		return '\r', nil
	case 't':
		return '\t', nil
	case '\\', '"', '[', ']', '-', '^':
		return rune(c), nil
	case 'x':
		return p.parseHex(start, 2)
	case 'u':
		return p.parseHex(start, 4)
	case 'U':
		return p.parseHex(start, 8)
	}
	r, _ := utf8.DecodeRuneInString(p.src[start+1:])
	return 0, p.errorf(start, ErrEscape,
		`unknown escape "\%c": expected one of \n \r \t \\ \" \[ \] \- \^ \xHH \uHHHH \UHHHHHHHH`, r)
}

// parseHex parses exactly digits hex digits of the escape that starts at start.
func (p *parser) parseHex(start, digits int) (rune, error) {
	var v uint32 // 8 hex digits fit; a rune could go negative
	for i := 0; i < digits; i++ {
		if p.pos >= len(p.src) {
			return 0, p.errorf(start, ErrEscape, `escape %s needs %d hex digits`, p.src[start:start+2], digits)
		}
		c := p.src[p.pos]
		var d byte
		switch {
		case '0' <= c && c <= '9':
			d = c - '0'
		case 'a' <= c && c <= 'f':
			d = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, p.errorf(start, ErrEscape, `escape %s needs %d hex digits, found %s`, p.src[start:start+2], digits, p.describe(p.pos))
		}
		v = v<<4 | uint32(d)
		p.pos++
	}
	if v > utf8.MaxRune {
		return 0, p.errorf(start, ErrEscape, `escape %s is beyond the last code point U+10FFFF`, p.src[start:p.pos])
	}
	return rune(v), nil
}

// parseToken parses <[N]>, !<[N]>, <name> and !<name>.
func (p *parser) parseToken() (*node, error) {
	start := p.pos
	n := p.node(node{op: opToken, off: start, token: -1})
	if p.peek() == '!' {
		n.negated = true
		p.pos++
	}
	if p.peek() != '<' {
		return nil, p.errorf(p.pos, ErrSyntax, `expected "<" after "!" (a negated token is written !<[N]> or !<name>), found %s`, p.describe(p.pos))
	}
	open := p.pos
	p.pos++
	if p.peek() == '[' {
		p.pos++
		id, ok, err := p.parseInt("token id")
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, p.errorf(p.pos, ErrSyntax, `expected a token id in "<[...]>", found %s`, p.describe(p.pos))
		}
		if !p.at("]>") {
			return nil, p.errorf(p.pos, ErrSyntax, `expected "]>" after token id %d, found %s`, id, p.describe(p.pos))
		}
		p.pos += 2
		n.token = int32(id)
		return n, nil
	}
	for p.pos < len(p.src) && p.src[p.pos] != '>' && p.src[p.pos] != '\n' && p.src[p.pos] != '\r' {
		p.pos++
	}
	if p.peek() != '>' {
		return nil, p.errorf(open, ErrSyntax, `unterminated token: expected ">" to close "<" (tokens are written <[N]> or <name>)`)
	}
	p.pos++
	if p.pos-open == 2 {
		return nil, p.errorf(open, ErrSyntax, `empty token name "<>"`)
	}
	n.name = p.src[open:p.pos]
	return n, nil
}

// NormalizeRanges returns the ranges sorted, with those that overlap or touch
// merged; empty ranges (Lo > Hi) are dropped. rs is not modified.
func NormalizeRanges(rs []Range) []Range {
	var cp []Range
	for _, r := range rs {
		if r.Lo <= r.Hi {
			cp = append(cp, r)
		}
	}
	if len(cp) == 0 {
		return nil
	}
	return normalize(cp)
}

// normalize sorts ranges (at least one) in place and merges those that overlap
// or touch.
func normalize(rs []Range) []Range {
	slices.SortFunc(rs, func(a, b Range) int { return cmp.Compare(a.Lo, b.Lo) })
	out := rs[:1]
	for _, r := range rs[1:] {
		last := &out[len(out)-1]
		if r.Lo <= last.Hi+1 {
			if r.Hi > last.Hi {
				last.Hi = r.Hi
			}
			continue
		}
		out = append(out, r)
	}
	return out[:len(out):len(out)]
}
