package engine

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// Stacks form a graph-structured stack (after Tomita): node i is (elem, tail) where
// elem is the position on top and tail what lies below, either one node or a union
// node standing for a set of them (the stacks with the same top over different
// tails, merged into one: see arena.merge). Nodes are interned, so equal stacks are
// the same id and stacks share their tails. A configuration holds at most one node
// per top (position, counts, UTF-8 partial), so its size is bounded by the grammar,
// not by how many parses an ambiguous grammar keeps alive (which can grow
// exponentially with the input). Two ids are sentinels that end a stack:
const (
	nodeBottom int32 = 0 // the empty stack: the grammar has matched completely
	nodeExit   int32 = 1 // the caller's frame (only in position-cache analysis)
)

// elemUnion is the elem of a union node: its tail indexes arena.sets, the nodes
// (regular ones or sentinels, never unions) any of which may lie below. A union is
// only ever a tail, never the top of a configuration's entry.
const elemUnion int32 = -2

const (
	cfgDead    int32 = 0  // the configuration with no stacks
	cfgUnknown int32 = -1 // a transition not computed yet
	// cfgLimit is a transition whose result would exceed the grammar's limits
	// (stacks or work in one step). It is memoized like any other result, so every
	// later walk that meets it sees the limit again: a limit is never mistaken for
	// a rejection. arena.step turns it into cfgDead and sets arena.hit.
	cfgLimit int32 = -2

	// exitBit marks, in arena.info, a configuration holding nodeExit.
	exitBit int32 = 1 << 30
)

// node is one level of a stack: the position to go on at (elem) over the rest of
// the stack (tail, a node, a union node or a sentinel). A level on a counter (an opRepeat element) also holds how many
// more rounds it needs (need) and allows (left).
type node struct{ elem, tail, need, left int32 }

// entry is one stack of a configuration with the UTF-8 character it is inside:
// node id in the high 32 bits, partial state in the low 32.
type entry uint64

func mkEntry(n int32, p partial) entry { return entry(uint64(uint32(n))<<32 | uint64(p)) }
func (e entry) node() int32            { return int32(uint32(e >> 32)) }
func (e entry) partial() partial       { return partial(uint32(e)) }

// config is an interned set of stacks: one state of the automaton.
type config struct {
	entries []entry // sorted, unique
	hasExit bool    // an entry is nodeExit (analysis only)
	noExit  int32   // the same configuration without nodeExit entries
	canEnd  bool    // an entry is nodeBottom between characters
	tokTops bool    // an entry has a token element on top
	over    bool    // more entries than the grammar's stack limit: a limit state
	plan    *maskPlan
	sigs    []sigResult // ASCII steps computed so far, by the stacks that take the byte
}

// arena interns nodes and configurations and memoizes byte transitions between
// configurations. It is not safe for concurrent use: each Matcher family owns one,
// and the Grammar keeps a pool for position analyses (one per analysis at a time).
type arena struct {
	g      *Grammar
	nodes  []node
	nodeID map[uint64]int32
	repID  map[node]int32   // nodes on counters
	sets   [][]int32        // union nodes' members (sorted), by node.tail
	setID  map[string]int32 // union node by its members
	cfgs   []config
	cfgID  map[string]int32
	tabs   []*[256]int32 // per configuration: memoized byte transitions, or nil
	lit    []uint64      // per configuration: a literal's one transition (see litOf), or 0
	info   []int32       // per configuration: noExit, with exitBit if hasExit
	loop   []loopBits    // per configuration, grown on demand (see loopOf): runs
	err    *LimitError   // the current closure exceeded the grammar's limits
	hit    *LimitError   // a limit was met (computed or memoized) since the caller cleared it

	tables   int          // transition tables allocated
	tabSlab  [][256]int32 // tables not handed out yet (see memo)
	tabChunk int          // the size of the last chunk of tables
	over     int32        // the limit state (see overCfg), 0 until made

	// scratch
	out     []entry
	key     []byte
	visited map[uint64]uint32 // closure visit stamps
	// excNodes: stepToken's stacks with an <except!(...)> on top (tokenelems.go)
	excNodes []int32
	stamp    uint32
	work     int
	seenEl   []uint32          // merge: stamp per element seen on top
	unfolded map[int32][]int32 // unfold's results, by node
	mstamp   uint32
	tails    []int32 // merge scratch
}

func newArena(g *Grammar) *arena {
	a := &arena{
		g:       g,
		nodes:   []node{{-1, -1, 0, 0}, {-1, -1, 0, 0}},
		nodeID:  map[uint64]int32{},
		repID:   map[node]int32{},
		setID:   map[string]int32{},
		cfgID:   map[string]int32{},
		visited: map[uint64]uint32{},
	}
	a.cfgs = append(a.cfgs, config{noExit: cfgDead}) // cfgDead
	a.tabs = append(a.tabs, nil)
	a.info = append(a.info, cfgDead)
	a.lit = append(a.lit, 0)
	a.cfgID[""] = cfgDead
	return a
}

// intern returns the node of position el over tail; a counter's position starts
// with its full count.
func (a *arena) intern(el, tail int32) int32 {
	if e := &a.g.elems[el]; e.op == opRepeat {
		return a.internRep(el, tail, e.lo, e.hi)
	}
	k := uint64(uint32(el))<<32 | uint64(uint32(tail))
	if id, ok := a.nodeID[k]; ok {
		return id
	}
	id := int32(len(a.nodes))
	a.nodes = append(a.nodes, node{el, tail, 0, 0})
	a.nodeID[k] = id
	return id
}

// internRep returns the node of counter el over tail that needs need more rounds
// and allows left more.
func (a *arena) internRep(el, tail, need, left int32) int32 {
	k := node{el, tail, need, left}
	if id, ok := a.repID[k]; ok {
		return id
	}
	id := int32(len(a.nodes))
	a.nodes = append(a.nodes, k)
	a.repID[k] = id
	return id
}

// start returns the configuration of the grammar before any input.
func (a *arena) start() int32 {
	a.out = a.out[:0]
	a.beginClosure()
	a.expandRule(a.g.root, nodeBottom)
	return a.finish()
}

// startAt returns the configuration holding just the stack elems (top first) over
// the caller's frame (nodeExit), or over nothing if bottom: the analysis state of a
// position cache.
// A counter's level takes its counts from cnts (need, left per level; nil: none).
func (a *arena) startAt(elems []int32, cnts [][2]int32, bottom bool) int32 {
	t := nodeExit
	if bottom {
		t = nodeBottom
	}
	for i := len(elems) - 1; i >= 0; i-- {
		if cnts != nil && a.g.elems[elems[i]].op == opRepeat {
			t = a.internRep(elems[i], t, cnts[i][0], cnts[i][1])
		} else {
			t = a.intern(elems[i], t)
		}
	}
	a.out = append(a.out[:0], mkEntry(t, 0))
	return a.finish()
}

func (a *arena) beginClosure() {
	a.err = nil
	a.stamp++
	if a.stamp == 0 {
		clear(a.visited)
		a.stamp = 1
	}
	a.work = 0
}

// expand pushes every stack reachable from (el, tail) without consuming input
// whose top is a terminal (char or token), or a sentinel.
func (a *arena) expand(el, tail int32) {
	if a.err != nil {
		return
	}
	e := a.g.elems[el]
	switch e.op {
	case opChar, opToken, opByte:
		a.out = append(a.out, mkEntry(a.intern(el, tail), 0))
	case opRef:
		k := uint64(uint32(el))<<32 | uint64(uint32(tail))
		if a.visited[k] == a.stamp {
			return
		}
		a.visited[k] = a.stamp
		if a.overLimit(el, "rule %q") {
			return
		}
		nt := tail
		if a.g.elems[el+1].op != opEnd {
			nt = a.intern(el+1, tail)
		}
		a.expandRule(e.arg, nt)
	case opRepeat:
		a.expandRep(el, tail, e.lo, e.hi)
	case opEnd:
		a.expandReturn(tail)
	}
}

// overLimit counts one more step of the closure and reports whether it went past
// the grammar's work or stack bound; then a.err says which, where names the rule
// of element el (a reference or a counter).
func (a *arena) overLimit(el int32, where string) bool {
	a.work++
	if a.work <= a.g.opts.maxWork && len(a.out) <= a.g.opts.hardStacks {
		return false
	}
	lim, val := "stacks", a.g.opts.hardStacks
	if a.work > a.g.opts.maxWork {
		lim, val = "work", a.g.opts.maxWork
	}
	a.err = &LimitError{Limit: lim, Value: val, Where: fmt.Sprintf(where, a.g.names[a.g.elems[el].arg]),
		Msg: msgTooMany}
	return true
}

// expandRep expands counter el over tail, with need more rounds needed and left
// more allowed: another round of its rule (returning to the counter with one
// round less), and, once no round is needed, what follows the counter. The rule
// never matches the empty string (see Compile), so a closure visits each count at
// most once per text position and counts never run on without input.
func (a *arena) expandRep(el, tail, need, left int32) {
	if a.err != nil {
		return
	}
	self := a.internRep(el, tail, need, left)
	k := uint64(uint32(^el))<<32 | uint64(uint32(self))
	if a.visited[k] == a.stamp {
		return
	}
	a.visited[k] = a.stamp
	if a.overLimit(el, "a repetition of rule %q") {
		return
	}
	if left > 0 {
		a.expandRule(a.g.elems[el].arg, a.internRep(el, tail, max(need-1, 0), left-1))
	}
	if need == 0 {
		if a.g.elems[el+1].op == opEnd {
			a.expandReturn(tail)
		} else {
			a.expand(el+1, tail)
		}
	}
}

func (a *arena) expandRule(r, tail int32) {
	for _, alt := range a.g.rules[r] {
		if a.g.elems[alt].op == opEnd {
			a.expandReturn(tail)
		} else {
			a.expand(alt, tail)
		}
	}
}

func (a *arena) expandReturn(tail int32) {
	if tail <= nodeExit {
		a.out = append(a.out, mkEntry(tail, 0))
		return
	}
	n := a.nodes[tail]
	if n.elem == elemUnion {
		// Return to each of the tails: visited once per closure (the members'
		// own expansions are visited per element and tail as usual).
		k := uint64(0x7FFFFFFF)<<32 | uint64(uint32(tail))
		if a.visited[k] == a.stamp {
			return
		}
		a.visited[k] = a.stamp
		for _, m := range a.sets[n.tail] {
			a.expandReturn(m)
		}
		return
	}
	if a.g.elems[n.elem].op == opRepeat {
		a.expandRep(n.elem, n.tail, n.need, n.left)
		return
	}
	a.expand(n.elem, n.tail)
}

// advance pushes the stacks that follow matching the terminal on top of node n.
func (a *arena) advance(n int32) {
	nd := a.nodes[n]
	a.expand(nd.elem+1, nd.tail)
}

// finish sorts and dedupes a.out and interns it as a configuration. A closure
// that exceeded the limits gives cfgLimit (and sets a.hit): the step is neither
// allowed nor refused, it cannot be decided.
func (a *arena) finish() int32 {
	if a.err != nil {
		a.hit, a.err = a.err, nil
		return cfgLimit
	}
	if len(a.out) == 0 {
		return cfgDead
	}
	slices.Sort(a.out)
	a.out = slices.Compact(a.out)
	a.merge()
	if len(a.out) > a.g.opts.hardStacks {
		a.hit = a.g.stackLimit(len(a.out))
		return cfgLimit
	}
	return a.internCfg(a.out)
}

// merge joins the entries of a.out (sorted, unique) that have the same top (the
// same element, counts and UTF-8 partial) over different tails into one entry over
// the union of their tails, and leaves a.out sorted. The set of stacks stays the
// same; what an entry does next depends only on its top, so the configuration
// steps exactly as before, but it now holds at most one entry per top.
func (a *arena) merge() {
	if len(a.out) < 2 {
		return
	}
	if len(a.seenEl) < len(a.g.elems) {
		a.seenEl = make([]uint32, len(a.g.elems))
		a.mstamp = 0
	}
	a.mstamp++
	if a.mstamp == 0 {
		clear(a.seenEl)
		a.mstamp = 1
	}
	dup := false
	for _, e := range a.out {
		n := e.node()
		if n <= nodeExit {
			continue
		}
		el := a.nodes[n].elem
		if a.seenEl[el] == a.mstamp {
			dup = true
			break
		}
		a.seenEl[el] = a.mstamp
	}
	if !dup {
		return // the common case: every top differs
	}
	key := func(e entry) (int32, uint32, int32, int32) {
		n := e.node()
		if n <= nodeExit {
			return -1 - n, 0, 0, 0
		}
		nd := &a.nodes[n]
		return nd.elem, uint32(e.partial()), nd.need, nd.left
	}
	slices.SortFunc(a.out, func(x, y entry) int {
		x0, x1, x2, x3 := key(x)
		y0, y1, y2, y3 := key(y)
		switch {
		case x0 != y0:
			return cmpInt(x0, y0)
		case x1 != y1:
			return cmpInt(x1, y1)
		case x2 != y2:
			return cmpInt(x2, y2)
		case x3 != y3:
			return cmpInt(x3, y3)
		}
		return cmpInt(x, y)
	})
	w := 0
	for i := 0; i < len(a.out); {
		j := i + 1
		if a.out[i].node() > nodeExit {
			k0, k1, k2, k3 := key(a.out[i])
			for j < len(a.out) {
				y0, y1, y2, y3 := key(a.out[j])
				if y0 != k0 || y1 != k1 || y2 != k2 || y3 != k3 {
					break
				}
				j++
			}
		}
		if j-i == 1 {
			a.out[w] = a.out[i]
			w++
			i = j
			continue
		}
		ts := a.tails[:0]
		for k := i; k < j; k++ {
			t := a.nodes[a.out[k].node()].tail
			if t > nodeExit && a.nodes[t].elem == elemUnion {
				ts = append(ts, a.sets[a.nodes[t].tail]...)
			} else {
				ts = append(ts, t)
			}
		}
		slices.Sort(ts)
		ts = slices.Compact(ts)
		a.tails = ts
		nd := a.nodes[a.out[i].node()]
		t := a.internSet(ts)
		var n int32
		if a.g.elems[nd.elem].op == opRepeat {
			n = a.internRep(nd.elem, t, nd.need, nd.left)
		} else {
			n = a.intern(nd.elem, t)
		}
		a.out[w] = mkEntry(n, a.out[i].partial())
		w++
		i = j
	}
	a.out = a.out[:w]
	slices.Sort(a.out)
}

func cmpInt[T int32 | uint32 | entry](x, y T) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// internSet returns the node standing for the tails ts (sorted, unique, no unions):
// the one tail itself, or the union node of them.
func (a *arena) internSet(ts []int32) int32 {
	if len(ts) == 1 {
		return ts[0]
	}
	a.key = a.key[:0]
	for _, t := range ts {
		a.key = binary.LittleEndian.AppendUint32(a.key, uint32(t))
	}
	if id, ok := a.setID[string(a.key)]; ok {
		return id
	}
	id := int32(len(a.nodes))
	a.nodes = append(a.nodes, node{elemUnion, int32(len(a.sets)), 0, 0})
	a.sets = append(a.sets, slices.Clone(ts))
	a.setID[string(a.key)] = id
	return id
}

// msgTooMany is the advice of a stacks or work limit.
const msgTooMany = "the grammar is too ambiguous here (too many grammar positions can come next at once); simplify it, or raise the stack limit"

// maxUnfold bounds the stacks unfold splits one node into: each can need a position
// cache analysis of its own, so a wide split costs more than the deeper keys save.
const maxUnfold = 8

// unfold returns nodes standing for the same stacks as node n (a regular node on
// top of an entry) with no union in their top maxKeyDepth levels, so that each gets
// a position cache keyed as deep as a stack without merged tails would (see slotOf);
// just n if n has none there, or if that takes more than maxUnfold nodes (then n's
// key stops at the union, which is sound but leaves more tokens to the real walk).
func (a *arena) unfold(n int32) []int32 {
	if r, ok := a.unfolded[n]; ok {
		return r
	}
	r, ok := a.unfoldAt(n, 1)
	if !ok {
		r = []int32{n}
	}
	if a.unfolded == nil {
		a.unfolded = map[int32][]int32{}
	}
	a.unfolded[n] = r
	return r
}

// unfoldAt is unfold for node n at level d of the key; ok is false past maxUnfold.
func (a *arena) unfoldAt(n int32, d int) (out []int32, ok bool) {
	nd := a.nodes[n]
	if d >= maxKeyDepth || nd.tail <= nodeExit {
		return []int32{n}, true
	}
	tails := []int32{nd.tail}
	if t := a.nodes[nd.tail]; t.elem == elemUnion {
		tails = a.sets[t.tail]
	}
	same := len(tails) == 1
	for _, t := range tails {
		var us []int32
		if t <= nodeExit {
			us = []int32{t}
		} else if us, ok = a.unfoldAt(t, d+1); !ok {
			return nil, false
		}
		if same && len(us) == 1 && us[0] == t {
			return []int32{n}, true // nothing to split below
		}
		for _, u := range us {
			if len(out) == maxUnfold {
				return nil, false
			}
			if a.g.elems[nd.elem].op == opRepeat {
				out = append(out, a.internRep(nd.elem, u, nd.need, nd.left))
			} else {
				out = append(out, a.intern(nd.elem, u))
			}
		}
	}
	return out, true
}

// stackLimit is the error of a state that needs need stacks (0: unknown).
func (g *Grammar) stackLimit(need int) *LimitError {
	return &LimitError{Limit: "stacks", Value: g.opts.maxStacks, Need: need,
		Msg: msgTooMany}
}

// noteLimit records that a memoized cfgLimit transition was met.
func (a *arena) noteLimit() {
	if a.hit == nil {
		a.hit = a.g.stackLimit(0)
	}
}

func (a *arena) internCfg(es []entry) int32 {
	if len(es) == 0 {
		return cfgDead
	}
	a.key = a.key[:0]
	for _, e := range es {
		a.key = binary.LittleEndian.AppendUint64(a.key, uint64(e))
	}
	if id, ok := a.cfgID[string(a.key)]; ok {
		return id
	}
	id := int32(len(a.cfgs))
	c := config{entries: slices.Clone(es), noExit: id, over: len(es) > a.g.opts.maxStacks}
	exits := 0
	for _, e := range es {
		n := e.node()
		switch {
		case n == nodeExit:
			c.hasExit = true
			exits++
		case n == nodeBottom:
			if e.partial() == 0 {
				c.canEnd = true
			}
		case a.g.elems[a.nodes[n].elem].op == opToken:
			c.tokTops = true
		}
	}
	a.cfgs = append(a.cfgs, c)
	a.tabs = append(a.tabs, nil)
	a.info = append(a.info, id)
	a.lit = append(a.lit, a.litOf(es))
	a.cfgID[string(a.key)] = id
	if exits > 0 {
		rest := make([]entry, 0, len(es)-exits)
		for _, e := range es {
			if e.node() != nodeExit {
				rest = append(rest, e)
			}
		}
		ne := a.internCfg(rest)
		a.cfgs[id].noExit = ne
		a.info[id] = ne | exitBit
	}
	return id
}

// step returns the configuration after byte b (cfgDead if no stack takes it, or if
// the step hit a limit: then a.hit is set), memoized per (configuration, byte).
func (a *arena) step(c int32, b byte) int32 {
	nx := a.stepKnown(c, b)
	if nx == cfgUnknown {
		nx = a.stepSlow(c, b)
	}
	if nx == cfgLimit {
		a.noteLimit()
		return cfgDead
	}
	return nx
}

// stepKnown returns the memoized step of c on b, from its table or, for a
// literal's configuration, from arena.lit (see litOf); cfgUnknown when it is not
// computed yet.
func (a *arena) stepKnown(c int32, b byte) int32 {
	if t := a.tabs[c]; t != nil {
		return t[b]
	}
	if x, ok := a.litStep(c, b); ok {
		return x
	}
	return cfgUnknown
}

// stepSlow computes and memoizes the step of c on b, which stepKnown does not
// know yet; it may return cfgLimit.
func (a *arena) stepSlow(c int32, b byte) int32 {
	if c == cfgDead {
		return cfgDead
	}
	// An ASCII byte's step depends only on which stacks take it: bytes that the
	// same stacks take (all the letters of an identifier, say) share one
	// computation.
	var sig uint64
	sigOK := false
	if b < 0x80 {
		sig, sigOK = a.asciiSig(c, b)
		if sigOK {
			if sig == 0 {
				a.memo(c, b, cfgDead)
				return cfgDead
			}
			for _, r := range a.cfgs[c].sigs {
				if r.sig == sig {
					a.memo(c, b, r.nx)
					return r.nx
				}
			}
		}
	}
	nx := a.stepCompute(c, b)
	if nx == cfgLimit {
		a.noteLimit()
	}
	if sigOK && nx != cfgLimit {
		a.cfgs[c].sigs = append(a.cfgs[c].sigs, sigResult{sig, nx})
	}
	a.memo(c, b, nx)
	return nx
}

// sigResult is a step of a configuration for the ASCII bytes taken by the stacks
// in sig (a bit per entry).
type sigResult struct {
	sig uint64
	nx  int32
}

// asciiSig returns which entries of c take ASCII byte b, a bit per entry; ok is
// false for a configuration of more than 64 entries.
func (a *arena) asciiSig(c int32, b byte) (sig uint64, ok bool) {
	es := a.cfgs[c].entries
	if len(es) > 64 {
		return 0, false
	}
	for i, e := range es {
		n := e.node()
		if n <= nodeExit || e.partial() != 0 {
			continue
		}
		if a.g.takesASCII(a.g.elems[a.nodes[n].elem], b) {
			sig |= 1 << uint(i)
		}
	}
	return sig, true
}

// memo records the step of c on b.
func (a *arena) memo(c int32, b byte, nx int32) {
	if l := a.lit[c]; l != 0 {
		// A literal's configuration needs no table: every other byte is dead.
		if byte(l>>32) == b {
			a.lit[c] = l&^0xFFFFFFFF | uint64(uint32(nx))
		}
		return
	}
	t := a.tabs[c]
	if t == nil {
		if len(a.tabSlab) == 0 {
			// Chunks double from 2 up to tabSlabSize: a small grammar's
			// analyses make only a few tables.
			a.tabChunk = min(max(2*a.tabChunk, 2), tabSlabSize)
			a.tabSlab = make([][256]int32, a.tabChunk)
		}
		t = &a.tabSlab[0]
		a.tabSlab = a.tabSlab[1:]
		*t = unknownRow
		a.tabs[c] = t
		a.tables++
	}
	t[b] = nx
}

// litFlag marks a literal's entry in arena.lit; litUnknown, in its low 32
// bits, is a step not computed yet (cfgUnknown's bits).
const (
	litFlag    = uint64(1) << 63
	litUnknown = 0xFFFFFFFF
)

// litOf returns the arena.lit entry of a configuration of entries es: for a
// single stack between characters whose top takes one ASCII byte and nothing
// else (a literal's next character: most configurations a key or a keyword
// walks through), that byte and its step, not known yet; else 0. Such a
// configuration keeps its one transition there instead of in a 1 KB table.
func (a *arena) litOf(es []entry) uint64 {
	if len(es) != 1 || es[0].partial() != 0 || es[0].node() <= nodeExit {
		return 0
	}
	el := a.g.elems[a.nodes[es[0].node()].elem]
	if el.op != opChar {
		return 0
	}
	x, ok := a.g.classes[el.arg].oneByte()
	if !ok {
		return 0
	}
	return litFlag | uint64(x)<<32 | litUnknown
}

// litStep answers the step of c on b without a table when c is a literal's
// configuration (ok; see litOf): cfgDead for any byte but the literal's, else
// its memoized step (cfgUnknown until computed).
func (a *arena) litStep(c int32, b byte) (nx int32, ok bool) {
	l := a.lit[c]
	if l == 0 {
		return 0, false
	}
	if byte(l>>32) != b {
		return cfgDead, true
	}
	return int32(uint32(l)), true
}

// unknownRow is a transition table with nothing computed yet.
var unknownRow = func() (r [256]int32) {
	for i := range r {
		r[i] = cfgUnknown
	}
	return r
}()

// tabSlabSize is the most transition tables memo carves from one allocation.
const tabSlabSize = 16

// stepCompute computes the step of c on b.
func (a *arena) stepCompute(c int32, b byte) int32 {
	a.out = a.out[:0]
	a.beginClosure()
	g := a.g
	for _, e := range a.cfgs[c].entries {
		n := e.node()
		if n <= nodeExit {
			continue
		}
		el := g.elems[a.nodes[n].elem]
		if el.op != opChar {
			if el.op == opByte && e.partial() == 0 && g.byteSets[el.arg].has(b) {
				a.advance(n) // a raw byte (byteelems.go)
			}
			continue
		}
		cls := &g.classes[el.arg]
		p := e.partial()
		if p == 0 {
			if b < 0x80 {
				if cls.has(rune(b)) {
					a.advance(n)
				}
				continue
			}
			np, ok := utf8Start(b)
			if !ok {
				continue
			}
			if lo, hi := np.span(); overlapsValid(cls, lo, hi) {
				a.out = append(a.out, mkEntry(n, np.freeFor(cls)))
			}
			continue
		}
		np, cp, done, ok := p.next(b)
		if !ok {
			continue
		}
		if done {
			if p.free() || (validFor(cp, p.length()) && cls.has(cp)) {
				a.advance(n)
			}
			continue
		}
		if np.free() {
			a.out = append(a.out, mkEntry(n, np))
		} else if lo, hi := np.span(); overlapsValid(cls, lo, hi) {
			a.out = append(a.out, mkEntry(n, np.freeFor(cls)))
		}
	}
	return a.finish()
}

// stepToken returns the configuration after token id is matched by token elements
// (`<[id]>`, or `!<[other]>`), ignoring the token's text.
func (a *arena) stepToken(c int32, id int32, eog bool) int32 {
	if !a.cfgs[c].tokTops {
		return cfgDead
	}
	a.out = a.out[:0]
	a.beginClosure()
	for _, e := range a.cfgs[c].entries {
		n := e.node()
		if n <= nodeExit || e.partial() != 0 {
			continue
		}
		el := a.g.elems[a.nodes[n].elem]
		if el.op != opToken {
			continue
		}
		if isExceptArg(el.neg, el.arg) {
			a.excNodes = append(a.excNodes, n)
			continue
		}
		if (!el.neg && el.arg == id) || (el.neg && el.arg != id && !eog) {
			a.advance(n)
		}
	}
	if len(a.excNodes) > 0 {
		return a.stepExcept(id)
	}
	return a.finish()
}

// union interns the union of configurations.
func (a *arena) union(cs ...int32) int32 {
	a.out = a.out[:0]
	for _, c := range cs {
		a.out = append(a.out, a.cfgs[c].entries...)
	}
	return a.finish()
}

// trim drops memoized transition tables when too many have accumulated; they are
// rebuilt on demand. Interned nodes and configurations stay (ids remain valid).
func (a *arena) trim(maxTables int) {
	if a.tables <= maxTables {
		return
	}
	clear(a.tabs)
	a.tables = 0
}
