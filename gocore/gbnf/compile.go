package gbnf

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
)

// compile checks the syntax tree (duplicate, undefined and root rules, the
// unrolled size of nested repetitions) and expands it into the IR, the way
// llama.cpp does:
//
//	S{m,n}  ->  S S ... S (m times) R(n-m)   with R(k) ::= S R(k-1) |   and R(1) ::= S |
//	S{m,}   ->  S S ... S (m times) R        with R ::= S R |
//	S*  = S{0,}    S+ = S{1,}    S? = S{0,1}
//
// so a repetition grows the grammar linearly in its count, up to counterFrom.
// Larger counts are kept as counters: S{m,n} is one Repeat element over a rule
// for S (S{m,} is S{m,m} R), whatever m and n. A counted S that can match the empty
// string is unrolled after all (counting empty matches would be work for
// nothing); WithMaxElements bounds that. A group with one alternative is written
// inline; one with several becomes a helper rule.
func compile(p *parser, defs []ruleDef) (*Grammar, error) {
	g, err := compileOnce(p, defs, false)
	var e *Error
	if err != nil && errors.As(err, &e) && (e.Code == ErrDeadEnd || e.Code == ErrLeftRecursion) {
		// The error names the line:col of a reference, which a compile keeps
		// only when asked (a record per reference, for errors alone): compile
		// again, keeping them. The same input meets the same error.
		return compileOnce(p, defs, true)
	}
	return g, err
}

func compileOnce(p *parser, defs []ruleDef, recordRefs bool) (*Grammar, error) {
	c := &compiler{
		p:          p,
		g:          &Grammar{Index: make(map[string]int, len(defs)+len(defs)/4+16)}, // room for helper rules
		counter:    make(map[int]int),
		charOff:    make(map[*Range]int),
		maxElems:   p.cfg.maxElements,
		recordRefs: recordRefs,
	}
	for _, d := range defs {
		if i, dup := c.g.Index[d.name]; dup {
			return nil, p.errorf(d.off, ErrDuplicateRule, "rule %q is defined twice (first at %s)",
				d.name, c.g.Rules[i].Pos)
		}
		c.g.Index[d.name] = len(c.g.Rules)
		c.g.Rules = append(c.g.Rules, Rule{Name: d.name, Pos: p.position(d.off)})
		c.owner = append(c.owner, len(c.owner))
	}
	if err := c.resolveRefs(defs); err != nil {
		return nil, err
	}
	root, ok := c.g.Index[p.cfg.root]
	if !ok {
		if p.cfg.root == DefaultRoot {
			return nil, &Error{Pos: Pos{1, 1}, Code: ErrMissingRoot,
				Msg: `grammar has no root rule "root": define root ::= ..., or name another root rule (WithRoot)`}
		}
		return nil, &Error{Pos: Pos{1, 1}, Code: ErrMissingRoot,
			Msg: "grammar has no root rule " + strconv.Quote(p.cfg.root) + " (asked for with WithRoot)"}
	}
	c.g.Root = root
	if p.bounds {
		if err := c.checkUnroll(defs); err != nil {
			return nil, err
		}
	}
	for i, d := range defs {
		alts, err := c.alts(i, topAlts(d.alts))
		if err != nil {
			return nil, err
		}
		c.g.Rules[i].Alts = alts
	}
	if err := c.unrollNullableCounters(); err != nil {
		return nil, err
	}
	// With no left recursion found, the rewrite changed nothing and the check
	// (the same left-edge graph) would find none either.
	if !c.p.cfg.noLeftRec {
		changed, err := rewriteLeftRecursion(c)
		if err != nil {
			return nil, err
		}
		if changed {
			if err := checkLeftRecursion(c); err != nil {
				return nil, err
			}
		}
	}
	if !c.p.cfg.allowDeadEnds {
		if err := checkDeadEnds(c); err != nil {
			return nil, err
		}
	}
	return c.g, nil
}

// refOffset is where the reference at site was written.
type refOffset struct {
	rule, alt, at int32 // the site (a refSite)
	off           int32
}

// refOffset returns where the reference at site was written (a scan: it places
// an error, once).
func (c *compiler) refOffset(site refSite) (int, bool) {
	for i := len(c.refOffs) - 1; i >= 0; i-- { // the last one written wins
		if r := c.refOffs[i]; int(r.rule) == site.rule && int(r.alt) == site.alt && int(r.at) == site.elem {
			return int(r.off), true
		}
	}
	return 0, false
}

type compiler struct {
	p       *parser
	g       *Grammar
	owner   []int       // rule index -> the written rule it was generated for
	counter map[int]int // written rule index -> helper rules generated for it
	// refOffs: where each reference was written, in the order compiled (read
	// only to place an error: see refOffset), when recordRefs is set
	refOffs    []refOffset
	recordRefs bool
	slab       Sequence // chunk the sequences are carved from (see elemBuf)
	// charOff: where character elements that match nothing were written, by
	// their first range (shared by every copy a repetition makes)
	charOff  map[*Range]int
	elems    int
	maxElems int
	// the site being compiled, to record where references were written
	rule, alt int
	// hasCounters: a Repeat element was made (see unrollNullableCounters)
	hasCounters bool
}

// refSite is one element of the IR: rule, alternative and element index.
type refSite struct{ rule, alt, elem int }

// resolveRefs gives every reference the index of its rule, in the order they
// were written, and refuses the first that names no rule.
func (c *compiler) resolveRefs(defs []ruleDef) error {
	for _, n := range c.p.refs {
		i, ok := c.g.Index[n.name]
		if !ok {
			// the rule it is written in: the last one to start before it
			k, _ := slices.BinarySearchFunc(defs, n.off, func(d ruleDef, off int) int { return d.off - off })
			rule := defs[max(k-1, 0)].name
			if n.op == opExcept {
				return c.p.errorf(n.off, ErrUndefinedRule, "undefined rule %q (referenced by <except!([%s])> in rule %q)", n.name, n.name, rule)
			}
			return c.p.errorf(n.off, ErrUndefinedRule, "undefined rule %q (referenced in rule %q)", n.name, rule)
		}
		n.ref = int32(i)
	}
	return nil
}

// checkUnroll bounds the product of repetition counts along every chain of
// repetitions nested inside one rule's text: (x{0,99}){0,99} unrolls to 9801
// copies of x. It runs on the syntax tree, so a grammar such as six nested
// {0,99} is refused before anything is expanded. A reference to a named rule
// counts as one element: rules are the grammar's units, and a matcher must
// bound its own state for grammars that nest repetitions through them.
func (c *compiler) checkUnroll(defs []ruleDef) error {
	limit := c.maxElems
	var size func(n *node) (int, error)
	altsSize := func(alts [][]*node) (int, error) {
		best := 1
		for _, seq := range alts {
			for _, n := range seq {
				s, err := size(n)
				if err != nil {
					return 0, err
				}
				best = max(best, s)
			}
		}
		return best, nil
	}
	size = func(n *node) (int, error) {
		switch n.op {
		case opGroup:
			return altsSize(n.alts)
		case opRepeat:
			s, err := size(n.sub)
			if err != nil {
				return 0, err
			}
			k := int(n.max)
			if k < 0 {
				k = int(n.min)
			}
			k = max(k, 1)
			if s == 1 && counted(n) {
				// A counter, with no repetition inside: constant size. Its
				// count still multiplies repetitions around it.
				return min(k, limit), nil
			}
			if s > limit/k {
				what := "repetition unrolls"
				if s > 1 {
					what = "nested repetitions unroll"
				}
				return 0, c.p.errorf(n.off, ErrTooLarge,
					"%s to more than %d elements (WithMaxElements): bound them more tightly, or use * and +", what, limit)
			}
			return s * k, nil
		}
		return 1, nil
	}
	for _, d := range defs {
		if _, err := altsSize(d.alts); err != nil {
			return err
		}
	}
	return nil
}

// grow counts n more elements against the WithMaxElements budget.
func (c *compiler) grow(n int, off int) error {
	if n > c.maxElems-c.elems {
		return c.p.errorf(off, ErrTooLarge, "grammar expands to more than %d elements (WithMaxElements)", c.maxElems)
	}
	c.elems += n
	return nil
}

// helper adds a generated rule for written rule owner, positioned at pos, and
// returns its index. Its name is the owner's with a number, skipping names the
// grammar already uses.
func (c *compiler) helper(owner int, pos Pos) int {
	base := c.g.Rules[owner].Name
	var name string
	for {
		c.counter[owner]++
		name = base + "-" + strconv.Itoa(c.counter[owner])
		// Only a written name can be taken: helper names are unique per owner,
		// and "a-1-1" (a helper of "a-1") is not "a-11" (one of "a").
		if _, taken := c.g.Index[name]; !taken {
			break
		}
	}
	i := len(c.g.Rules)
	c.g.Index[name] = i
	c.g.Rules = append(c.g.Rules, Rule{Name: name, Pos: pos})
	c.owner = append(c.owner, owner)
	return i
}

// topAlts returns a rule's alternatives with a body that is one group written
// as the rule's own: r ::= (a | b) is r ::= a | b, and r ::= (a | b)? is
// r ::= a | b | "" (generated grammars write such bodies often, and as written
// each would be a rule whose one alternative refers to a helper rule). A group
// of one alternative under ? is taken apart only when it matches some text,
// so that an empty repetition is still refused as written.
func topAlts(alts [][]*node) [][]*node {
	if len(alts) != 1 || len(alts[0]) != 1 {
		return alts
	}
	n := alts[0][0]
	switch {
	case n.op == opGroup && len(n.alts) >= 2:
		return n.alts
	case n.op == opRepeat && n.min == 0 && n.max == 1 && n.sub.op == opGroup:
		g := n.sub
		if len(g.alts) >= 2 || (len(g.alts) == 1 && consumes(g.alts[0])) {
			return append(g.alts[:len(g.alts):len(g.alts)], nil)
		}
	}
	return alts
}

// consumes reports whether a sequence has an item that always compiles to at
// least one element (a class, a reference, a token or a non-empty literal).
func consumes(seq []*node) bool {
	for _, n := range seq {
		switch n.op {
		case opClass, opRef, opToken, opExcept, opExceptLit:
			return true
		case opLiteral:
			if len(n.ranges) > 0 {
				return true
			}
		}
	}
	return false
}

func (c *compiler) alts(rule int, alts [][]*node) ([]Sequence, error) {
	out := make([]Sequence, 0, len(alts))
	for a, seq := range alts {
		c.rule, c.alt = rule, a
		s, err := c.seq(c.owner[rule], seq, 0)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// seq compiles items that start at index at of the alternative being built
// (c.rule, c.alt): a whole alternative, or a group written inline.
func (c *compiler) seq(owner int, seq []*node, at int) (Sequence, error) {
	size := 0 // the elements of literals and one per other item: usually exact
	for _, n := range seq {
		if n.op == opLiteral {
			size += len(n.ranges)
		} else {
			size++
		}
	}
	out := c.elemBuf(size)
	for _, n := range seq {
		// Literals and references, the common items, go straight into out.
		switch n.op {
		case opLiteral:
			var err error
			if out, err = c.appendLiteral(out, n); err != nil {
				return nil, err
			}
			continue
		case opRef:
			var err error
			if out, err = c.appendRef(out, n, at+len(out)); err != nil {
				return nil, err
			}
			continue
		}
		rule, alt := c.rule, c.alt
		els, err := c.item(owner, n, at+len(out))
		if err != nil {
			return nil, err
		}
		c.rule, c.alt = rule, alt
		out = append(out, els...)
	}
	return out, nil
}

// item compiles one item into the elements that stand for it in a sequence,
// where it starts at index at of the alternative being built.
func (c *compiler) item(owner int, n *node, at int) ([]Element, error) {
	switch n.op {
	case opLiteral:
		return c.appendLiteral(nil, n)
	case opClass:
		if err := c.grow(1, n.off); err != nil {
			return nil, err
		}
		if len(n.ranges) > 0 && ClassEmpty(n.ranges, n.negated) {
			c.charOff[&n.ranges[0]] = n.off
		}
		return []Element{{Kind: Char, Ranges: n.ranges, Negated: n.negated}}, nil
	case opToken:
		if err := c.grow(1, n.off); err != nil {
			return nil, err
		}
		return []Element{{Kind: Token, Token: n.token, Name: n.name, Negated: n.negated}}, nil
	case opRef:
		return c.appendRef(nil, n, at)
	case opGroup:
		if len(n.alts) == 1 {
			return c.seq(owner, n.alts[0], at)
		}
		h := c.helper(owner, c.p.position(n.off))
		alts, err := c.alts(h, n.alts)
		if err != nil {
			return nil, err
		}
		c.g.Rules[h].Alts = alts
		if err := c.grow(1, n.off); err != nil {
			return nil, err
		}
		return []Element{{Kind: RuleRef, Rule: int32(h)}}, nil
	case opRepeat:
		return c.repeat(owner, n, at)
	case opExcept, opExceptLit:
		return c.except(n)
	}
	panic("gbnf: unknown node")
}

// appendLiteral appends the elements of literal n (one Char per code point, one Byte per raw byte).
// The Char elements' ranges are the literal's own (see parser.charBuf).
func (c *compiler) appendLiteral(out Sequence, n *node) (Sequence, error) {
	if err := c.grow(len(n.ranges), n.off); err != nil {
		return nil, err
	}
	for i, r := range n.ranges {
		if r.Lo < 0 {
			// A raw byte (ParseBNF: see rawByteRune).
			v := rawByteOf(r.Lo)
			out = append(out, Element{Kind: Byte, Ranges: []Range{{v, v}}})
			continue
		}
		out = append(out, Element{Kind: Char, Ranges: n.ranges[i : i+1 : i+1]})
		if r.Lo >= surrogateLo && r.Lo <= surrogateHi {
			c.charOff[&n.ranges[i]] = n.off
		}
	}
	return out, nil
}

// elemBuf returns an empty sequence with room for n elements, carved from
// chunks shared by the grammar's sequences (a chunk lives as long as the
// grammar, as its sequences do; appending past the room reallocates, leaving
// the chunk alone). Chunks double from small, so a
// small grammar allocates little, and a large one one chunk per 4,096.
func (c *compiler) elemBuf(n int) Sequence {
	if n == 0 {
		return Sequence{} // empty, never nil: an empty alternative is Sequence{} everywhere
	}
	if cap(c.slab)-len(c.slab) < n {
		c.slab = make(Sequence, 0, min(max(2*cap(c.slab), 16), 4096))
		if n > cap(c.slab) {
			return make(Sequence, 0, n)
		}
	}
	k := len(c.slab)
	c.slab = c.slab[:k+n]
	return c.slab[k : k : k+n]
}

// appendRef appends reference n, at index at of the alternative being built.
func (c *compiler) appendRef(out Sequence, n *node, at int) (Sequence, error) {
	if err := c.grow(1, n.off); err != nil {
		return nil, err
	}
	// int32 halves the record (one per reference); grammars this large are far
	// past WithMaxElements, and only an error's position would be off.
	if c.recordRefs {
		c.refOffs = append(c.refOffs, refOffset{int32(c.rule), int32(c.alt), int32(at), int32(min(n.off, math.MaxInt32))})
	}
	return append(out, Element{Kind: RuleRef, Rule: n.ref}), nil
}

// counterFrom: repetitions with counts above it are kept as counters (Repeat).
const counterFrom = 64

// counted reports whether repetition n is kept as a counter.
func counted(n *node) bool {
	return n.max > counterFrom || (n.max < 0 && n.min > counterFrom)
}

func (c *compiler) repeat(owner int, n *node, at int) ([]Element, error) {
	body, err := c.item(owner, n.sub, at)
	if err != nil {
		return nil, err
	}
	if len(body) == 0 {
		return nil, c.p.errorf(n.off, ErrSyntax, "nothing to repeat: the item before %q is empty", c.p.textAt(n.off, 1))
	}
	if counted(n) {
		return c.counted(owner, n, body)
	}
	nmin := int(n.min)
	opt := 1 // optional copies: helper rules in the chain
	if n.max >= 0 {
		opt = int(n.max) - nmin
	}
	if len(body) > 1 && nmin+opt > 2 {
		// Many copies of a long item: copy one reference to a rule instead.
		h := c.helper(owner, c.p.position(n.sub.off))
		c.g.Rules[h].Alts = []Sequence{body}
		if err := c.grow(1, n.off); err != nil {
			return nil, err
		}
		body = []Element{{Kind: RuleRef, Rule: int32(h)}}
	}
	need := nmin * len(body)
	if opt > 0 {
		need += opt * (len(body) + 1)
	}
	if need > c.maxElems-c.elems {
		return nil, c.p.errorf(n.off, ErrTooLarge, "grammar expands to more than %d elements (WithMaxElements)", c.maxElems)
	}
	c.elems += need - len(body) // the body itself was counted when it was compiled
	out := make([]Element, 0, nmin*len(body)+1)
	for range nmin {
		out = append(out, body...)
	}
	if opt == 0 {
		return out, nil
	}
	// The helper rules' elements and alternatives, allocated at once: a chain
	// may have thousands of rules.
	pos := c.p.position(n.off)
	elems := make([]Element, 0, opt*(len(body)+1))
	alts := make([]Sequence, 2*opt)
	first := len(c.g.Rules)
	c.g.Rules = slices.Grow(c.g.Rules, opt)
	for k := 0; k < opt; k++ {
		// unbounded:  R ::= S R |
		// bounded:    R(1) ::= S |    R(k) ::= S R(k-1) |
		h := c.helper(owner, pos)
		start := len(elems)
		elems = append(elems, body...)
		switch {
		case n.max < 0:
			elems = append(elems, Element{Kind: RuleRef, Rule: int32(h)})
		case k > 0:
			elems = append(elems, Element{Kind: RuleRef, Rule: int32(h - 1)})
		}
		alts[2*k] = elems[start:len(elems):len(elems)]
		alts[2*k+1] = Sequence{}
		c.g.Rules[h].Alts = alts[2*k : 2*k+2 : 2*k+2]
	}
	return append(out, Element{Kind: RuleRef, Rule: int32(first + opt - 1)}), nil
}

// counted compiles repetition n of body as a Repeat element over a rule matching
// body (S{m,n}), followed for S{m,} by a helper R ::= S R | "".
func (c *compiler) counted(owner int, n *node, body []Element) ([]Element, error) {
	pos := c.p.position(n.off)
	rule := -1
	if len(body) == 1 && body[0].Kind == RuleRef {
		rule = int(body[0].Rule)
	} else {
		rule = c.helper(owner, pos)
		c.g.Rules[rule].Alts = []Sequence{body}
	}
	if err := c.grow(4, n.off); err != nil {
		return nil, err
	}
	hi := int(n.max)
	if hi < 0 {
		hi = int(n.min)
	}
	out := []Element{{Kind: Repeat, Rule: int32(rule), Min: n.min, Max: int32(hi)}}
	c.hasCounters = true
	if n.max < 0 {
		star := c.helper(owner, pos)
		c.g.Rules[star].Alts = []Sequence{{{Kind: RuleRef, Rule: int32(rule)}, {Kind: RuleRef, Rule: int32(star)}}, {}}
		out = append(out, Element{Kind: RuleRef, Rule: int32(star)})
	}
	return out, nil
}

// unrollNullableCounters replaces every Repeat whose rule can match the empty
// string by the unrolled chain (S{m,n} with a nullable S is S{0,n}: n optional
// copies), so that the engine's counters always consume text per iteration.
func (c *compiler) unrollNullableCounters() error {
	if !c.hasCounters {
		return nil
	}
	nullable := Nullable(c.g)
	n := len(c.g.Rules)
	for r := 0; r < n; r++ {
		for a, alt := range c.g.Rules[r].Alts {
			for i := 0; i < len(alt); i++ {
				e := alt[i]
				if e.Kind != Repeat || !nullable[e.Rule] {
					continue
				}
				need := 2 * int(e.Max)
				if need > c.maxElems-c.elems {
					return &Error{Pos: c.g.Rules[r].Pos, Code: ErrTooLarge,
						Msg: fmt.Sprintf("grammar expands to more than %d elements (WithMaxElements): a repetition {%d,%d} of an item that can be empty is unrolled", c.maxElems, e.Min, e.Max)}
				}
				c.elems += need
				pos := c.g.Rules[r].Pos
				first := len(c.g.Rules)
				for k := 0; k < int(e.Max); k++ {
					h := c.helper(c.owner[r], pos)
					seq := Sequence{{Kind: RuleRef, Rule: e.Rule}}
					if k > 0 {
						seq = append(seq, Element{Kind: RuleRef, Rule: int32(h - 1)})
					}
					c.g.Rules[h].Alts = []Sequence{seq, {}}
				}
				alt[i] = Element{Kind: RuleRef, Rule: int32(first + int(e.Max) - 1)}
				c.g.Rules[r].Alts[a] = alt
			}
		}
	}
	return nil
}
