package engine

import (
	"encoding/binary"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tetherlm/tether/gocore/gbnf"
	"github.com/tetherlm/tether/gocore/safecall"
)

// Grammar is a compiled grammar bound to one Vocabulary. It is immutable once built
// (its lazily filled caches are safe for concurrent use) and may be shared by any
// number of Matchers on any goroutines.
type Grammar struct {
	fpPool sync.Pool // *fpScratch (shared.go)

	vocab Vocabulary
	size  int
	trie  *trie

	elems   []elem
	classes []class
	rules   [][]int32       // per rule: start index of each alternative
	ruleOf  []int32         // per elem: the rule it belongs to
	tramp   []int32         // per rule R: a two-element program [call R, end] (see slotOf)
	lead    []int32         // per rule R: the rule every path into R calls first (see leadRule)
	rem     []uint8         // per elem: most bytes matched from it to its alternative's end (255: more)
	minLen  []int32         // per rule: fewest bytes it can match (capped at minCap)
	minRest []int32         // per elem: fewest bytes matched from it to its alternative's end
	twins   map[int32]int32 // char elem -> its widened twin (twins.go); nil if none
	names   []string        // rule names
	root    int32

	eog      []int32 // end-of-generation ids < size
	isEOG    []bool
	special  []bool
	hasToken bool         // the program has token elements
	excepts  []*exceptSet // bnf_sampler's <except!(...)> elements (tokenelems.go)
	byteSets []rawByteSet // raw-byte elements' sets (byteelems.go)

	opts options
	lazy *compiledTriggers

	posMu   sync.Mutex
	slots   map[string]*posSlot // stack prefix -> its context-independent token split (posMu)
	counted map[string]*posSlot // a counted key without its counts -> the latest computed (counts.go; posMu)
	// chainOf and chainDepth: per rule, the chain of an unrolled repetition it
	// belongs to (the chain's first rule) and its depth in it, or -1 and 0
	// (see findChains).
	chainOf    []int32
	chainDepth []int32
	arenas     []*arena  // idle arenas position caches are computed in (posMu)
	follow     []byteSet // per rule: first bytes that may follow it
	nullable   []bool    // per rule: can match the empty string (during Compile only)
	// followKinds: per rule, the byte kinds (see byteKind) of its follow bytes.
	followKinds [][2]uint64

	// families: released matchers' caches, for NewMatcher to start warm (famMu;
	// see Matcher.Release); reused counts the NewMatcher calls that took one.
	famMu    sync.Mutex
	families []*family
	reused   atomic.Int64
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
// Stacks with the same top are merged into one, so a state holds at most one stack
// per grammar position (and counter count, and UTF-8 prefix), however ambiguous the
// grammar. A grammar that needs more is not followed past that point: every
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
	if o.triggers != nil {
		var err error
		if v, err = o.triggers.vocabulary(v); err != nil {
			return nil, err
		}
	}
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
	gr.eog = gr.trie.eog // read only: shared by the trie's grammars
	gr.special = gr.trie.special
	gr.slots = map[string]*posSlot{}
	gr.nullable = nil
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
	// Single ASCII characters (most of a literal's elements) skip the map.
	var asciiIdx [128]int32
	for i := range asciiIdx {
		asciiIdx[i] = -1
	}
	// mayDeadEnd is set by anything that can make a dead end (an empty class or
	// byte set, a rule that cannot finish): only then is gbnf.DeadEnds run.
	mayDeadEnd := false
	size := 2 * n // the trampolines
	for _, r := range g.Rules {
		for _, alt := range r.Alts {
			size += len(alt) + 1
		}
	}
	gr.elems = make([]elem, 0, size)
	gr.ruleOf = make([]int32, 0, size)
	// Flattening: on a large grammar, gbnf.Nullable (a fixpoint over the IR) runs
	// beside it. Only counted repetitions need it: there they are checked after,
	// in order, before any error the flattening itself stopped at.
	var nullable []bool
	waitNullable := func() {}
	parallel := size >= parallelFollowFrom
	if parallel {
		waitNullable = safecall.Go(func() { nullable = gbnf.Nullable(g) })
	} else {
		nullable = gbnf.Nullable(g)
	}
	nullableRepeat := func(r gbnf.Rule, of int32) error {
		return &CompileError{Rule: r.Name, Pos: r.Pos, Msg: fmt.Sprintf("counted repetition of rule %q, which can match the empty string (gbnf.Parse unrolls such repetitions)", g.Rules[of].Name)}
	}
	type repeatSite struct{ rule, of int32 }
	var repeats []repeatSite
	err := func() error {
		for ri, r := range g.Rules {
			gr.names[ri] = r.Name
			if len(r.Alts) == 0 {
				return &CompileError{Rule: r.Name, Pos: r.Pos, Msg: "rule has no alternatives"}
			}
			for _, alt := range r.Alts {
				gr.rules[ri] = append(gr.rules[ri], int32(len(gr.elems)))
				for ei := range alt {
					e := &alt[ei] // by pointer: an Element is 64 bytes
					switch e.Kind {
					case gbnf.Char:
						if len(e.Ranges) == 1 && !e.Negated && e.Ranges[0].Lo == e.Ranges[0].Hi && uint32(e.Ranges[0].Lo) < 128 {
							ch := e.Ranges[0].Lo
							if asciiIdx[ch] < 0 {
								asciiIdx[ch] = int32(len(gr.classes))
								gr.classes = append(gr.classes, newClass(e.Ranges, false))
							}
							gr.elems = append(gr.elems, elem{op: opChar, arg: asciiIdx[ch]})
							break
						}
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
							mayDeadEnd = mayDeadEnd || gbnf.ClassEmpty(e.Ranges, e.Negated)
						}
						gr.elems = append(gr.elems, elem{op: opChar, arg: ci})
					case gbnf.RuleRef:
						if e.Rule < 0 || int(e.Rule) >= n {
							return &CompileError{Rule: r.Name, Pos: r.Pos, Msg: fmt.Sprintf("reference to undefined rule index %d", e.Rule)}
						}
						gr.elems = append(gr.elems, elem{op: opRef, arg: e.Rule})
					case gbnf.Repeat:
						if e.Rule < 0 || int(e.Rule) >= n {
							return &CompileError{Rule: r.Name, Pos: r.Pos, Msg: fmt.Sprintf("repetition of undefined rule index %d", e.Rule)}
						}
						if e.Min < 0 || e.Max < 1 || e.Min > e.Max || e.Max > 1<<30 {
							return &CompileError{Rule: r.Name, Pos: r.Pos, Msg: fmt.Sprintf("bad repetition count {%d,%d}", e.Min, e.Max)}
						}
						if parallel {
							repeats = append(repeats, repeatSite{int32(ri), e.Rule})
						} else if nullable[e.Rule] {
							return nullableRepeat(r, e.Rule)
						}
						gr.elems = append(gr.elems, elem{op: opRepeat, arg: e.Rule, lo: e.Min, hi: e.Max})
					case gbnf.Token:
						if e.Token == gbnf.AnyToken && e.Name == "" {
							// bnf_sampler's <any!>: any token but none (see tokenelems.go).
							gr.hasToken = true
							gr.elems = append(gr.elems, elem{op: opToken, neg: true, arg: anyTokenArg})
							break
						}
						id := int(e.Token)
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
						arg, err := gr.addExcept(*e, r)
						if err != nil {
							return err
						}
						gr.hasToken = true
						gr.elems = append(gr.elems, elem{op: opToken, neg: true, arg: arg})
					case gbnf.Byte:
						mayDeadEnd = mayDeadEnd || len(e.Ranges) == 0
						arg, err := gr.addByteSet(*e, r)
						if err != nil {
							return err
						}
						gr.elems = append(gr.elems, elem{op: opByte, arg: arg})
					default:
						return &CompileError{Rule: r.Name, Pos: r.Pos, Msg: fmt.Sprintf("unknown element kind %d", e.Kind)}
					}
					gr.ruleOf = append(gr.ruleOf, int32(ri))
				}
				gr.elems = append(gr.elems, elem{op: opEnd})
				gr.ruleOf = append(gr.ruleOf, int32(ri))
			}
		}
		return nil
	}()
	waitNullable()
	for _, rp := range repeats {
		if nullable[rp.of] {
			return nullableRepeat(g.Rules[rp.rule], rp.of)
		}
	}
	if err != nil {
		return err
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
	gr.addTwins()
	gr.lead = make([]int32, n)
	for r := range n {
		gr.lead[r] = gr.leadRule(int32(r))
	}
	// The program is complete. The follow sets are computed beside the other
	// analyses when it is large (none of them reads what computeFollow writes).
	if len(gr.elems) < parallelFollowFrom {
		gr.computeFollow(nullable)
		return gr.analyse(g, nullable, mayDeadEnd)
	}
	wait := safecall.Go(func() { gr.computeFollow(nullable) })
	err = gr.analyse(g, nullable, mayDeadEnd)
	wait()
	return err
}

// parallelFollowFrom is the program size (elements) from which Compile computes
// the follow sets on a goroutine of their own: a Kubernetes schema's grammar
// (~150k elements) spends ~5 ms there and as long in the other analyses. Below
// it, starting a goroutine costs more than it saves.
const parallelFollowFrom = 1 << 14

// analyse runs the analyses of the complete program other than computeFollow,
// and refuses left recursion and (where the program may have them) dead ends.
func (gr *Grammar) analyse(g *gbnf.Grammar, nullable []bool, mayDeadEnd bool) error {
	gr.computeRem()
	if !gr.computeMinLen() {
		mayDeadEnd = true // a rule that cannot finish
	}
	gr.nullable = nullable
	gr.findChains()
	if err := gr.checkLeftRecursion(g); err != nil {
		return err
	}
	// gbnf.Parse refuses dead ends already; this guards hand-built IR. With no
	// empty class or byte set and every rule able to finish (computeMinLen's
	// finite lengths: gbnf.Productive over the engine's program) there is none.
	if !mayDeadEnd {
		return nil
	}
	if d := gbnf.DeadEnds(g, int(gr.root)); d != nil {
		r := g.Rules[d.Rule]
		return &CompileError{Rule: r.Name, Pos: r.Pos, Msg: "dead end: " + d.Why}
	}
	return nil
}
