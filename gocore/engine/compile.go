package engine

import (
	"encoding/binary"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/tetherlm/tether/gocore/gbnf"
)

// op is what one program element does.
type op uint8

const (
	opChar   op = iota // match one code point of classes[arg]
	opRef              // call rule arg
	opToken            // match token id arg (neg: any token but arg)
	opEnd              // end of an alternative
	opRepeat           // call rule arg between lo and hi times (a counter, see arena.expandRep)
)

// elem is one instruction of the flat program. Every alternative of every rule is a
// run of elems closed by an opEnd, so "the element after this one" is always idx+1.
type elem struct {
	op     op
	neg    bool
	arg    int32
	lo, hi int32 // opRepeat: the fewest and most times
}

// class is a compiled character class.
type class struct {
	ranges []gbnf.Range // sorted, merged (adjacent ranges joined)
	neg    bool
	ascii  [4]uint32 // membership of code points < 128, negation applied
	wide   bool      // holds every valid code point >= 0x80
	narrow bool      // holds no code point >= 0x80
	kinds  [2]uint64 // the byte kinds (see byteKind) it takes a byte of
	first  [8]uint32 // the bytes that can start one of its characters
}

func (c *class) has(cp rune) bool {
	if cp < 128 && cp >= 0 {
		return c.ascii[cp>>5]&(1<<(uint(cp)&31)) != 0
	}
	rs := c.ranges
	i := sort.Search(len(rs), func(i int) bool { return rs[i].Hi >= cp })
	in := i < len(rs) && rs[i].Lo <= cp
	return in != c.neg
}

// overlaps reports whether some code point in [lo, hi] is in the class.
func (c *class) overlaps(lo, hi rune) bool {
	if lo > hi {
		return false
	}
	rs := c.ranges
	i := sort.Search(len(rs), func(i int) bool { return rs[i].Hi >= lo })
	if !c.neg {
		return i < len(rs) && rs[i].Lo <= hi
	}
	// Negated: some point of [lo, hi] lies outside every range. Ranges are merged, so
	// [lo, hi] is fully covered only if a single range covers it.
	return !(i < len(rs) && rs[i].Lo <= lo && rs[i].Hi >= hi)
}

// covers reports whether every code point in [lo, hi] is in the class.
func (c *class) covers(lo, hi rune) bool {
	if lo > hi {
		return true
	}
	if hi < 128 {
		for cp := lo; cp <= hi; cp++ {
			if !c.has(cp) {
				return false
			}
		}
		return true
	}
	if lo < 128 {
		return c.covers(lo, 127) && c.covers(128, hi)
	}
	rs := c.ranges
	i := sort.Search(len(rs), func(i int) bool { return rs[i].Hi >= lo })
	if !c.neg {
		// Ranges are merged, so one range must hold all of [lo, hi].
		return i < len(rs) && rs[i].Lo <= lo && rs[i].Hi >= hi
	}
	return !(i < len(rs) && rs[i].Lo <= hi)
}

// Grammar is a compiled grammar bound to one Vocabulary. It is immutable once built
// (its lazily filled caches are safe for concurrent use) and may be shared by any
// number of Matchers on any goroutines.
type Grammar struct {
	vocab Vocabulary
	size  int
	trie  *trie

	elems   []elem
	classes []class
	rules   [][]int32 // per rule: start index of each alternative
	ruleOf  []int32   // per elem: the rule it belongs to
	tramp   []int32   // per rule R: a two-element program [call R, end] (see slotOf)
	lead    []int32   // per rule R: the rule every path into R calls first (see leadRule)
	rem     []uint8   // per elem: most bytes matched from it to its alternative's end (255: more)
	minLen  []int32   // per rule: fewest bytes it can match (capped at minCap)
	minRest []int32   // per elem: fewest bytes matched from it to its alternative's end
	names   []string  // rule names
	root    int32

	eog      []int32 // end-of-generation ids < size
	isEOG    []bool
	special  []bool
	hasToken bool         // the program has token elements
	excepts  []*exceptSet // bnf_sampler's <except!(...)> elements (tokenelems.go)

	opts options
	lazy *compiledTriggers

	posMu  sync.Mutex
	slots  map[string]*posSlot // stack prefix -> its context-independent token split (posMu)
	arenas []*arena            // idle arenas position caches are computed in (posMu)
	follow [][8]uint32         // per rule: first bytes that may follow it
	// followKinds: per rule, the byte kinds (see byteKind) of its follow bytes.
	followKinds [][2]uint64
}

// options are the settings Compile accepts.
type options struct {
	root       string
	maxStacks  int // stacks a state may hold (more: a limit state, see LimitError)
	hardStacks int // stacks one step may build on the way (memory bound)
	maxWork    int // closure steps one step may take
	triggers   *Triggers
	noShare    bool // do not share position caches across grammars
}

// Option configures Compile.
type Option func(*options)

// WithRoot names the start rule (default: the grammar's own Root).
func WithRoot(name string) Option { return func(o *options) { o.root = name } }

// WithMaxStacks caps how many stacks one state may hold (default DefaultMaxStacks).
// A grammar so ambiguous that it needs more is not followed past that point: every
// question about such a state (FillMask, IsAllowed, AcceptToken, AcceptBytes)
// returns a *LimitError instead of an answer, so no mask is ever inexact. A start
// state over the cap makes Compile return the *LimitError.
func WithMaxStacks(n int) Option { return func(o *options) { o.maxStacks = n } }

// WithLazy makes every Matcher of the grammar start inactive: it allows every token
// and only watches the text until one of the triggers fires (see Triggers).
func WithLazy(t Triggers) Option {
	return func(o *options) { c := t; o.triggers = &c }
}

// DefaultMaxStacks is the default of WithMaxStacks.
const DefaultMaxStacks = 1 << 14

// CompileError says why a grammar could not be compiled, naming the rule involved.
type CompileError struct {
	Rule string // the rule at fault, if any
	Pos  gbnf.Pos
	Msg  string
}

// Error formats the error as "engine: line:col: rule "name": message".
func (e *CompileError) Error() string {
	var b strings.Builder
	b.WriteString("engine: ")
	if e.Pos.Line > 0 {
		fmt.Fprintf(&b, "%d:%d: ", e.Pos.Line, e.Pos.Col)
	}
	if e.Rule != "" {
		fmt.Fprintf(&b, "rule %q: ", e.Rule)
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Compile turns a parsed grammar into a Grammar for vocabulary v. Named token
// references (<|eot_id|>) are resolved with v.TokenID. The token trie of v is built
// once and cached, so compiling many grammars for one vocabulary is cheap.
func Compile(g *gbnf.Grammar, v Vocabulary, opts ...Option) (*Grammar, error) {
	if g == nil {
		return nil, &CompileError{Msg: "nil grammar"}
	}
	if v == nil {
		return nil, &CompileError{Msg: "nil vocabulary"}
	}
	o := options{maxStacks: DefaultMaxStacks}
	for _, f := range opts {
		f(&o)
	}
	if o.maxStacks <= 0 {
		o.maxStacks = DefaultMaxStacks
	}
	o.hardStacks = 4 * o.maxStacks
	o.maxWork = 8 * o.hardStacks
	gr := &Grammar{vocab: v, size: v.Size(), opts: o}
	if err := gr.build(g); err != nil {
		return nil, err
	}
	if o.triggers != nil {
		if err := o.triggers.compile(gr); err != nil {
			return nil, err
		}
	}
	gr.trie = trieFor(v)
	gr.isEOG = gr.trie.isEOG
	gr.special = gr.trie.special
	for id, e := range gr.isEOG {
		if e {
			gr.eog = append(gr.eog, int32(id))
		}
	}
	gr.slots = map[string]*posSlot{}
	gr.computeFollow()
	if err := gr.computeExcepts(); err != nil {
		return nil, err
	}
	// Build the start state once now, so explosive grammars fail here, not later.
	a := newArena(gr)
	if c := a.start(); c == cfgLimit {
		return nil, a.hit
	} else if a.cfgs[c].over {
		return nil, gr.stackLimit(len(a.cfgs[c].entries))
	}
	return gr, nil
}

// build flattens the IR into the program and checks it.
func (gr *Grammar) build(g *gbnf.Grammar) error {
	n := len(g.Rules)
	if n == 0 {
		return &CompileError{Msg: "grammar has no rules"}
	}
	gr.root = int32(g.Root)
	if gr.opts.root != "" {
		idx, ok := g.Index[gr.opts.root]
		if !ok {
			found := false
			for i, r := range g.Rules {
				if r.Name == gr.opts.root {
					idx, found = i, true
					break
				}
			}
			if !found {
				return &CompileError{Msg: fmt.Sprintf("root rule %q is not defined", gr.opts.root)}
			}
		}
		gr.root = int32(idx)
	}
	if gr.root < 0 || int(gr.root) >= n {
		return &CompileError{Msg: fmt.Sprintf("root rule index %d out of range (%d rules)", gr.root, n)}
	}
	gr.rules = make([][]int32, n)
	gr.names = make([]string, n)
	classIdx := map[string]int32{}
	var kb []byte
	var nullable []bool // computed if a counter needs it
	for ri, r := range g.Rules {
		gr.names[ri] = r.Name
		if len(r.Alts) == 0 {
			return &CompileError{Rule: r.Name, Pos: r.Pos, Msg: "rule has no alternatives"}
		}
		for _, alt := range r.Alts {
			gr.rules[ri] = append(gr.rules[ri], int32(len(gr.elems)))
			for _, e := range alt {
				switch e.Kind {
				case gbnf.Char:
					// Classes are deduplicated by their written ranges (a key
					// cheap to build), before the class itself is built.
					kb = kb[:0]
					if e.Negated {
						kb = append(kb, 1)
					}
					for _, r := range e.Ranges {
						kb = binary.LittleEndian.AppendUint32(kb, uint32(r.Lo))
						kb = binary.LittleEndian.AppendUint32(kb, uint32(r.Hi))
					}
					ci, ok := classIdx[string(kb)]
					if !ok {
						ci = int32(len(gr.classes))
						classIdx[string(kb)] = ci
						gr.classes = append(gr.classes, newClass(e.Ranges, e.Negated))
					}
					gr.elems = append(gr.elems, elem{op: opChar, arg: ci})
				case gbnf.RuleRef:
					if e.Rule < 0 || e.Rule >= n {
						return &CompileError{Rule: r.Name, Pos: r.Pos, Msg: fmt.Sprintf("reference to undefined rule index %d", e.Rule)}
					}
					gr.elems = append(gr.elems, elem{op: opRef, arg: int32(e.Rule)})
				case gbnf.Repeat:
					if e.Rule < 0 || e.Rule >= n {
						return &CompileError{Rule: r.Name, Pos: r.Pos, Msg: fmt.Sprintf("repetition of undefined rule index %d", e.Rule)}
					}
					if e.Min < 0 || e.Max < 1 || e.Min > e.Max || e.Max > 1<<30 {
						return &CompileError{Rule: r.Name, Pos: r.Pos, Msg: fmt.Sprintf("bad repetition count {%d,%d}", e.Min, e.Max)}
					}
					if nullable == nil {
						nullable = gbnf.Nullable(g)
					}
					if nullable[e.Rule] {
						return &CompileError{Rule: r.Name, Pos: r.Pos, Msg: fmt.Sprintf("counted repetition of rule %q, which can match the empty string (gbnf.Parse unrolls such repetitions)", g.Rules[e.Rule].Name)}
					}
					gr.elems = append(gr.elems, elem{op: opRepeat, arg: int32(e.Rule), lo: int32(e.Min), hi: int32(e.Max)})
				case gbnf.Token:
					if e.Token == gbnf.AnyToken && e.Name == "" {
						// bnf_sampler's <any!>: any token but none (see tokenelems.go).
						gr.hasToken = true
						gr.elems = append(gr.elems, elem{op: opToken, neg: true, arg: anyTokenArg})
						break
					}
					id := e.Token
					if e.Name != "" {
						var ok bool
						id, ok = gr.vocab.TokenID(e.Name)
						if !ok {
							return &CompileError{Rule: r.Name, Pos: r.Pos, Msg: fmt.Sprintf("token %s is not in the vocabulary", e.Name)}
						}
					}
					if id < 0 || id >= gr.size {
						return &CompileError{Rule: r.Name, Pos: r.Pos, Msg: fmt.Sprintf("token id %d is outside the vocabulary (size %d)", id, gr.size)}
					}
					gr.hasToken = true
					gr.elems = append(gr.elems, elem{op: opToken, neg: e.Negated, arg: int32(id)})
				case gbnf.Except:
					arg, err := gr.addExcept(e, r)
					if err != nil {
						return err
					}
					gr.hasToken = true
					gr.elems = append(gr.elems, elem{op: opToken, neg: true, arg: arg})
				default:
					return &CompileError{Rule: r.Name, Pos: r.Pos, Msg: fmt.Sprintf("unknown element kind %d", e.Kind)}
				}
				gr.ruleOf = append(gr.ruleOf, int32(ri))
			}
			gr.elems = append(gr.elems, elem{op: opEnd})
			gr.ruleOf = append(gr.ruleOf, int32(ri))
		}
	}
	if gr.classes == nil {
		gr.classes = []class{}
	}
	// Trampolines: per rule R, "call R, then return" as its own little program,
	// reached by no alternative. Position caches key stacks on them (see slotOf);
	// their rule is R itself, so the bytes that may follow one are R's follow set.
	gr.tramp = make([]int32, n)
	for r := range n {
		gr.tramp[r] = int32(len(gr.elems))
		gr.elems = append(gr.elems, elem{op: opRef, arg: int32(r)}, elem{op: opEnd})
		gr.ruleOf = append(gr.ruleOf, int32(r), int32(r))
	}
	gr.lead = make([]int32, n)
	for r := range n {
		gr.lead[r] = gr.leadRule(int32(r))
	}
	gr.computeRem()
	gr.computeMinLen()
	if err := gr.checkLeftRecursion(g); err != nil {
		return err
	}
	// gbnf.Parse refuses dead ends already; this guards hand-built IR.
	if d := gbnf.DeadEnds(g, int(gr.root)); d != nil {
		r := g.Rules[d.Rule]
		return &CompileError{Rule: r.Name, Pos: r.Pos, Msg: "dead end: " + d.Why}
	}
	return nil
}

// leadRule follows, from rule r, the chain of rules whose every alternative starts by
// calling one same rule (expression ::= term ..., term ::= factor ...) and returns
// the last rule of the chain (r itself if r's alternatives start differently).
func (gr *Grammar) leadRule(r int32) int32 {
	for steps := 0; steps < len(gr.rules); steps++ {
		next := int32(-1)
		for _, alt := range gr.rules[r] {
			e := gr.elems[alt]
			if e.op != opRef || (next >= 0 && e.arg != next) {
				return r
			}
			next = e.arg
		}
		if next < 0 || next == r {
			return r
		}
		r = next
	}
	return r
}

// computeRem fills gr.rem: for each element, an upper bound on the bytes its
// alternative can match from there to its end (remMany if unbounded or large).
func (gr *Grammar) computeRem() {
	const inProgress = -1
	ruleMax := make([]int, len(gr.rules))
	for i := range ruleMax {
		ruleMax[i] = -2 // not computed
	}
	var altBound func(i int32) int
	ruleBound := func(r int32) int {
		switch ruleMax[r] {
		case inProgress:
			return remMany // recursive: unbounded
		case -2:
			ruleMax[r] = inProgress
			m := 0
			for _, alt := range gr.rules[r] {
				m = max(m, altBound(alt))
			}
			ruleMax[r] = m
		}
		return ruleMax[r]
	}
	cost := func(e elem) int {
		switch e.op {
		case opChar:
			if gr.classes[e.arg].narrow {
				return 1
			}
			return 4
		case opRef:
			return ruleBound(e.arg)
		case opRepeat:
			if b := ruleBound(e.arg); b < remMany && int(e.hi) < remMany {
				return min(b*int(e.hi), remMany)
			}
			return remMany
		case opEnd:
			return 0
		}
		return remMany
	}
	altBound = func(i int32) int {
		total := 0
		for ; gr.elems[i].op != opEnd && total < remMany; i++ {
			total += cost(gr.elems[i])
		}
		return min(total, remMany)
	}
	gr.rem = make([]uint8, len(gr.elems))
	for i := len(gr.elems) - 1; i >= 0; i-- {
		if gr.elems[i].op != opEnd {
			gr.rem[i] = uint8(min(cost(gr.elems[i])+int(gr.rem[i+1]), remMany))
		}
	}
}

// minCap caps Grammar.minLen and minRest (any bound past the longest token will do).
const minCap = 1 << 20

// computeMinLen fills gr.minLen and gr.minRest (a char counts one byte, a token
// none).
func (gr *Grammar) computeMinLen() {
	n := len(gr.rules)
	gr.minLen = make([]int32, n)
	for i := range gr.minLen {
		gr.minLen[i] = minCap
	}
	altMin := func(i int32) int32 {
		var total int32
		for ; gr.elems[i].op != opEnd && total < minCap; i++ {
			switch e := gr.elems[i]; e.op {
			case opChar:
				total++
			case opRef:
				total += gr.minLen[e.arg]
			case opRepeat:
				total += int32(min(int64(e.lo)*int64(gr.minLen[e.arg]), minCap))
			}
		}
		return min(total, minCap)
	}
	for changed := true; changed; {
		changed = false
		for r := range n {
			m := gr.minLen[r]
			for _, alt := range gr.rules[r] {
				m = min(m, altMin(alt))
			}
			if m < gr.minLen[r] {
				gr.minLen[r] = m
				changed = true
			}
		}
	}
	gr.minRest = make([]int32, len(gr.elems))
	for i := len(gr.elems) - 1; i >= 0; i-- {
		var c int32
		switch e := gr.elems[i]; e.op {
		case opEnd:
			continue
		case opChar:
			c = 1
		case opRef:
			c = gr.minLen[e.arg]
		case opRepeat:
			// 0: a frame on this element may be anywhere in its count, and
			// minRest must stay a lower bound for it.
		}
		gr.minRest[i] = min(c+gr.minRest[i+1], minCap)
	}
}

// remMany is Grammar.rem's "unbounded or large".
const remMany = 255

func newClass(rs []gbnf.Range, neg bool) class {
	merged := gbnf.NormalizeRanges(rs)
	c := class{ranges: merged, neg: neg}
	for ch := rune(0); ch < 128; ch++ {
		in := false
		for _, r := range merged {
			if r.Lo <= ch && ch <= r.Hi {
				in = true
				break
			}
		}
		if in != neg {
			c.ascii[ch>>5] |= 1 << (uint(ch) & 31)
		}
	}
	// After ascii, which has reads.
	c.wide = c.covers(0x80, 0xD7FF) && c.covers(0xE000, 0x10FFFF)
	c.narrow = !overlapsValid(&c, 0x80, 0x10FFFF)
	for b := 0; b < 0x80; b++ {
		if c.has(rune(b)) {
			k := byteKind(byte(b))
			c.kinds[k>>6] |= 1 << (k & 63)
		}
	}
	if !c.narrow {
		c.kinds[1] |= 1 << 63
	}
	return c
}

// checkLeftRecursion refuses grammars whose expansion would never consume input.
// It refuses any cycle of leftmost calls (through nullable prefixes) in which some
// call is not a tail call: such a cycle would grow the stack forever. Tail-call-only
// cycles through nullable rules, as in `root ::= ( [x]* )*`, are harmless: the
// matcher expands each (position, stack) pair once. gocore/gbnf applies llama.cpp's
// own check when parsing; this one guards hand-built IR.
func (gr *Grammar) checkLeftRecursion(g *gbnf.Grammar) error {
	n := len(gr.rules)
	var path []int
	// True nullability (shared with gbnf's own check), then left calls that are
	// not tail calls.
	nullable := gbnf.Nullable(g)
	type edge struct {
		to   int32
		tail bool
	}
	edges := make([][]edge, n)
	for r := 0; r < n; r++ {
		for _, a := range gr.rules[r] {
			for i := a; gr.elems[i].op != opEnd; i++ {
				e := gr.elems[i]
				if e.op != opRef && e.op != opRepeat {
					break
				}
				// A counter's frame stays below its rule: never a tail call.
				edges[r] = append(edges[r], edge{e.arg, e.op == opRef && gr.elems[i+1].op == opEnd})
				if !nullable[e.arg] && !(e.op == opRepeat && e.lo == 0) {
					break
				}
			}
		}
	}
	// For each non-tail edge r -> s: is r left-reachable from s?
	seen := make([]int32, n)
	stamp := int32(0)
	var reach func(from, target int32) bool
	reach = func(from, target int32) bool {
		if from == target {
			return true
		}
		if seen[from] == stamp {
			return false
		}
		seen[from] = stamp
		for _, e := range edges[from] {
			if reach(e.to, target) {
				path = append(path, int(from))
				return true
			}
		}
		return false
	}
	for r := 0; r < n; r++ {
		for _, e := range edges[r] {
			if e.tail {
				continue
			}
			stamp++
			path = path[:0]
			if reach(e.to, int32(r)) {
				path = append(path, r)
				return gr.leftRecursionError(g, append([]int{r}, path...))
			}
		}
	}
	return nil
}

func (gr *Grammar) leftRecursionError(g *gbnf.Grammar, path []int) error {
	names := make([]string, 0, len(path))
	for i := len(path) - 1; i >= 0; i-- {
		names = append(names, gr.names[path[i]])
	}
	r := path[0]
	return &CompileError{Rule: gr.names[r], Pos: g.Rules[r].Pos,
		Msg: "left recursion: " + strings.Join(names, " -> ")}
}

// computeFollow finds, for every rule, the set of bytes that can start the text
// after the rule ends (in any context). Position caches use it to reject tokens
// that leave a rule with a byte nothing could accept.
func (gr *Grammar) computeFollow() {
	n := len(gr.rules)
	// first[r]: first bytes of nonempty strings of r; nullable[r].
	first := make([][8]uint32, n)
	nullable := make([]bool, n)
	classFirst := make([][8]uint32, len(gr.classes))
	for i := range gr.classes {
		addClassFirstBytes(&gr.classes[i], &classFirst[i])
		gr.classes[i].first = classFirst[i]
	}
	elemFirst := func(e elem, dst *[8]uint32) bool { // returns nullable
		switch e.op {
		case opChar:
			for k := range dst {
				dst[k] |= classFirst[e.arg][k]
			}
			return false
		case opRef, opRepeat:
			for k := range dst {
				dst[k] |= first[e.arg][k]
			}
			return nullable[e.arg] || (e.op == opRepeat && e.lo == 0)
		}
		return false // tokens consume no bytes, but are not empty either
	}
	for changed := true; changed; {
		changed = false
		for r := 0; r < n; r++ {
			var f [8]uint32
			null := false
			for _, a := range gr.rules[r] {
				all := true
				for i := a; gr.elems[i].op != opEnd; i++ {
					if !elemFirst(gr.elems[i], &f) {
						all = false
						break
					}
				}
				if all {
					null = true
				}
			}
			if f != first[r] || null != nullable[r] {
				first[r], nullable[r] = f, null
				changed = true
			}
		}
	}
	follow := make([][8]uint32, n)
	// Per alternative, sufF[j]/sufN[j] are the first bytes and nullability of the
	// rest of the alternative from its j-th element (a suffix pass, so each round is
	// linear in the program's size).
	var sufF [][8]uint32
	var sufN []bool
	for changed := true; changed; {
		changed = false
		for r := 0; r < n; r++ {
			for _, a := range gr.rules[r] {
				end := a
				for gr.elems[end].op != opEnd {
					end++
				}
				l := int(end - a)
				if cap(sufF) < l+1 {
					sufF = make([][8]uint32, l+1)
					sufN = make([]bool, l+1)
				}
				sufF, sufN = sufF[:l+1], sufN[:l+1]
				sufF[l], sufN[l] = [8]uint32{}, true
				hasRef := false
				for j := l - 1; j >= 0; j-- {
					e := gr.elems[a+int32(j)]
					hasRef = hasRef || e.op == opRef || e.op == opRepeat
					var f [8]uint32
					null := elemFirst(e, &f)
					if null {
						for k := range f {
							f[k] |= sufF[j+1][k]
						}
					}
					sufF[j], sufN[j] = f, null && sufN[j+1]
				}
				if !hasRef {
					continue
				}
				for j := 0; j < l; j++ {
					e := gr.elems[a+int32(j)]
					if e.op != opRef && e.op != opRepeat {
						continue
					}
					f := follow[e.arg]
					for k := range f {
						f[k] |= sufF[j+1][k]
					}
					if e.op == opRepeat && e.hi > 1 {
						// Another round of the counter may follow.
						for k := range f {
							f[k] |= first[e.arg][k]
						}
					}
					if sufN[j+1] {
						for k := range f {
							f[k] |= follow[r][k]
						}
					}
					if f != follow[e.arg] {
						follow[e.arg] = f
						changed = true
					}
				}
			}
		}
	}
	gr.follow = follow
	gr.followKinds = make([][2]uint64, n)
	for r := range follow {
		for b := range 256 {
			if follow[r][b>>5]&(1<<(uint(b)&31)) != 0 {
				k := byteKind(byte(b))
				gr.followKinds[r][k>>6] |= 1 << (k & 63)
			}
		}
	}
}

// addClassFirstBytes adds every byte that can start the UTF-8 encoding of a code
// point of c.
func addClassFirstBytes(c *class, dst *[8]uint32) {
	for b := 0; b < 128; b++ {
		if c.has(rune(b)) {
			dst[b>>5] |= 1 << (uint(b) & 31)
		}
	}
	for b := 0xC2; b <= 0xF4; b++ {
		p, ok := utf8Start(byte(b))
		if !ok {
			continue
		}
		lo, hi := p.span()
		if overlapsValid(c, lo, hi) {
			dst[b>>5] |= 1 << (uint(b) & 31)
		}
	}
}
