package schema

import (
	"encoding/binary"
	"fmt"
	"math"
	"regexp/syntax"
	"slices"
	"sort"
	"strconv"
	"unicode"
)

// Deterministic automata over code points, for what a grammar of the regex's
// syntax tree cannot say: a pattern intersected with length limits, property
// names that match one pattern and not the others, names that are not listed.
// They are built by subset construction from Go's compiled regexp program
// (search semantics: an unanchored pattern matches anywhere), combined by
// product construction, trimmed to the states that can still accept, and
// written as right-linear rules: one rule per state, one alternative per
// target state, so the engine follows a single stack.

// dfa is a deterministic automaton over code points (surrogates excluded).
// State 0 is the start; a missing transition rejects.
type dfa struct {
	states []dstate
}

type dstate struct {
	accept bool
	edges  []dedge // sorted by lo, disjoint
}

type dedge struct {
	lo, hi rune
	to     int32
}

// maxDFAStates bounds every automaton built here (pattern, product, length):
// each state becomes a rule, and the grammar must stay cheap to compile.
const maxDFAStates = 4096

// denseTuples is the most tuple numbers productAll indexes with a table (4
// bytes each) instead of a map.
const denseTuples = 1 << 16

// errDFATooLarge says an automaton would exceed maxDFAStates.
var errDFATooLarge = fmt.Errorf("the automaton would need more than %d states", maxDFAStates)

// patternDFA is the automaton of the strings an ECMA pattern matches somewhere
// (JSON Schema's unanchored "pattern" semantics).
func patternDFA(p string) (*dfa, error) {
	gp, err := ecmaToGo(p)
	if err != nil {
		return nil, &RegexError{Pattern: p, Msg: err.Error()}
	}
	re, err := parseRegex(gp, p)
	if err != nil {
		return nil, err
	}
	if err := unfold(re); err != nil {
		return nil, &RegexError{Pattern: p, Msg: err.Error()}
	}
	anyStar := func() *syntax.Regexp {
		return &syntax.Regexp{Op: syntax.OpStar, Sub: []*syntax.Regexp{{Op: syntax.OpAnyChar}}}
	}
	wrapped := &syntax.Regexp{Op: syntax.OpConcat, Sub: []*syntax.Regexp{anyStar(), re, anyStar()}}
	prog, err := syntax.Compile(wrapped.Simplify())
	if err != nil {
		return nil, &RegexError{Pattern: p, Msg: err.Error()}
	}
	d, err := progDFA(prog)
	if err != nil {
		return nil, &RegexError{Pattern: p, Msg: err.Error()}
	}
	return d, nil
}

// unfold rewrites case-folded literals as classes and refuses word boundaries.
func unfold(re *syntax.Regexp) error {
	switch re.Op {
	case syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return fmt.Errorf("word boundaries (\\b, \\B) cannot be expressed in a grammar")
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			var subs []*syntax.Regexp
			for _, r := range re.Rune {
				var rs []rune
				for _, x := range foldRanges(r) {
					rs = append(rs, x.Lo, x.Hi)
				}
				subs = append(subs, &syntax.Regexp{Op: syntax.OpCharClass, Rune: rs})
			}
			*re = syntax.Regexp{Op: syntax.OpConcat, Sub: subs}
		}
	}
	for _, s := range re.Sub {
		if err := unfold(s); err != nil {
			return err
		}
	}
	return nil
}

// instRanges are the code points a rune instruction matches.
func instRanges(in *syntax.Inst) []rng {
	switch in.Op {
	case syntax.InstRune1:
		return []rng{{Lo: in.Rune[0], Hi: in.Rune[0]}}
	case syntax.InstRuneAny:
		return []rng{{Lo: 0, Hi: unicode.MaxRune}}
	case syntax.InstRuneAnyNotNL:
		return []rng{{Lo: 0, Hi: '\n' - 1}, {Lo: '\n' + 1, Hi: unicode.MaxRune}}
	}
	if len(in.Rune) == 1 {
		rs := []rng{{Lo: in.Rune[0], Hi: in.Rune[0]}}
		if syntax.Flags(in.Arg)&syntax.FoldCase != 0 {
			rs = foldRanges(in.Rune[0])
		}
		return rs
	}
	var rs []rng
	for i := 0; i+1 < len(in.Rune); i += 2 {
		rs = append(rs, rng{Lo: in.Rune[i], Hi: in.Rune[i+1]})
	}
	return rs
}

// progDFA runs the subset construction on a compiled program. Begin-of-text
// assertions hold only at the start, end-of-text assertions only where the
// text ends (they decide acceptance).
func progDFA(prog *syntax.Prog) (*dfa, error) {
	ranges := make([][]rng, len(prog.Inst))
	for pc := range prog.Inst {
		switch prog.Inst[pc].Op {
		case syntax.InstRune, syntax.InstRune1, syntax.InstRuneAny, syntax.InstRuneAnyNotNL:
			ranges[pc] = subRanges(instRanges(&prog.Inst[pc]), surrogates)
		}
	}
	const beginOps = syntax.EmptyBeginText | syntax.EmptyBeginLine
	const endOps = syntax.EmptyEndText | syntax.EmptyEndLine
	// closure adds the instructions reachable from pc without input; pending
	// end assertions are kept (as their own pc) for the acceptance test.
	var closure func(pc uint32, atBegin, atEnd bool, seen map[uint32]bool, out *[]uint32) error
	closure = func(pc uint32, atBegin, atEnd bool, seen map[uint32]bool, out *[]uint32) error {
		if seen[pc] {
			return nil
		}
		seen[pc] = true
		in := &prog.Inst[pc]
		switch in.Op {
		case syntax.InstAlt, syntax.InstAltMatch:
			if err := closure(in.Out, atBegin, atEnd, seen, out); err != nil {
				return err
			}
			return closure(in.Arg, atBegin, atEnd, seen, out)
		case syntax.InstCapture, syntax.InstNop:
			return closure(in.Out, atBegin, atEnd, seen, out)
		case syntax.InstEmptyWidth:
			op := syntax.EmptyOp(in.Arg)
			if op&^(beginOps|endOps) != 0 {
				return fmt.Errorf("word boundaries (\\b, \\B) cannot be expressed in a grammar")
			}
			if op&beginOps != 0 && !atBegin {
				return nil
			}
			if op&endOps != 0 && !atEnd {
				*out = append(*out, pc) // decided when the text ends
				return nil
			}
			return closure(in.Out, atBegin, atEnd, seen, out)
		case syntax.InstFail:
			return nil
		}
		*out = append(*out, pc)
		return nil
	}
	accepts := func(set []uint32, atBegin bool) (bool, error) {
		seen := map[uint32]bool{}
		var out []uint32
		for _, pc := range set {
			in := &prog.Inst[pc]
			switch in.Op {
			case syntax.InstMatch:
				return true, nil
			case syntax.InstEmptyWidth:
				if err := closure(in.Out, atBegin, true, seen, &out); err != nil {
					return false, err
				}
			}
		}
		for _, pc := range out {
			if prog.Inst[pc].Op == syntax.InstMatch {
				return true, nil
			}
		}
		return false, nil
	}
	key := func(set []uint32, atBegin bool) string {
		b := make([]byte, 0, 4*len(set)+1)
		if atBegin {
			b = append(b, 1)
		}
		for _, pc := range set {
			b = binary.LittleEndian.AppendUint32(b, pc)
		}
		return string(b)
	}
	norm := func(set []uint32) []uint32 {
		slices.Sort(set)
		return slices.Compact(set)
	}
	var start []uint32
	if err := closure(uint32(prog.Start), true, false, map[uint32]bool{}, &start); err != nil {
		return nil, err
	}
	start = norm(start)
	d := &dfa{}
	index := map[string]int32{}
	type pending struct {
		set     []uint32
		atBegin bool
	}
	var queue []pending
	add := func(set []uint32, atBegin bool) (int32, error) {
		k := key(set, atBegin)
		if i, ok := index[k]; ok {
			return i, nil
		}
		if len(d.states) >= maxDFAStates {
			return 0, errDFATooLarge
		}
		acc, err := accepts(set, atBegin)
		if err != nil {
			return 0, err
		}
		i := int32(len(d.states))
		index[k] = i
		d.states = append(d.states, dstate{accept: acc})
		queue = append(queue, pending{set, atBegin})
		return i, nil
	}
	if _, err := add(start, true); err != nil {
		return nil, err
	}
	for si := 0; si < len(queue); si++ {
		cur := queue[si]
		var cuts []rune
		for _, pc := range cur.set {
			for _, r := range ranges[pc] {
				cuts = append(cuts, r.Lo, r.Hi+1)
			}
		}
		slices.Sort(cuts)
		cuts = slices.Compact(cuts)
		var edges []dedge
		for ci := 0; ci+1 < len(cuts); ci++ {
			lo, hi := cuts[ci], cuts[ci+1]-1
			var next []uint32
			seen := map[uint32]bool{}
			for _, pc := range cur.set {
				if rangesHave(ranges[pc], lo) {
					if err := closure(prog.Inst[pc].Out, false, false, seen, &next); err != nil {
						return nil, err
					}
				}
			}
			if len(next) == 0 {
				continue
			}
			to, err := add(norm(next), false)
			if err != nil {
				return nil, err
			}
			if n := len(edges); n > 0 && edges[n-1].to == to && edges[n-1].hi+1 == lo {
				edges[n-1].hi = hi
				continue
			}
			edges = append(edges, dedge{lo, hi, to})
		}
		d.states[si].edges = edges
	}
	return d, nil
}

func rangesHave(rs []rng, r rune) bool {
	i := sort.Search(len(rs), func(i int) bool { return rs[i].Hi >= r })
	return i < len(rs) && rs[i].Lo <= r
}

// step is the target of state s on code point r (-1: none).
func (d *dfa) step(s int32, r rune) int32 {
	if s < 0 {
		return -1
	}
	es := d.states[s].edges
	i := sort.Search(len(es), func(i int) bool { return es[i].hi >= r })
	if i < len(es) && es[i].lo <= r {
		return es[i].to
	}
	return -1
}

// namesDFA is the automaton of exactly the given strings (a trie).
func namesDFA(names []string) *dfa {
	d := &dfa{states: []dstate{{}}}
	kids := []map[rune]int32{{}}
	for _, n := range names {
		s := int32(0)
		for _, r := range n {
			t, ok := kids[s][r]
			if !ok {
				t = int32(len(d.states))
				d.states = append(d.states, dstate{})
				kids = append(kids, map[rune]int32{})
				kids[s][r] = t
			}
			s = t
		}
		d.states[s].accept = true
	}
	for s, m := range kids {
		for r, t := range m {
			d.states[s].edges = append(d.states[s].edges, dedge{r, r, t})
		}
		slices.SortFunc(d.states[s].edges, func(a, b dedge) int { return int(a.lo - b.lo) })
	}
	return d
}

// product runs the automata side by side (a component without a transition
// is -1 from then on, and never accepts) and keeps the tuples for which
// accept holds. With maxLen >= 0 every transition counts one code point and no
// text is longer than maxLen; minLen makes shorter texts not accept. live
// (optional) prunes tuples that can never lead to acceptance early. The result
// is trimmed: every state can reach an accepting one; it has no states at all
// if nothing is accepted.
func product(ds []*dfa, accept func(states []int32) bool, live func(states []int32) bool, minLen, maxLen int) (*dfa, error) {
	d, err := productAll(ds, accept, live, minLen, maxLen)
	if err != nil {
		return nil, err
	}
	return d.trim(), nil
}

// productAll is product without the final trim: every reachable tuple is a state,
// numbered in the order accept was called on it (once per state, the start first).
func productAll(ds []*dfa, accept func(states []int32) bool, live func(states []int32) bool, minLen, maxLen int) (*dfa, error) {
	n := len(ds)
	type tup struct {
		states []int32
		count  int
	}
	counted := minLen > 0 || maxLen >= 0
	if live == nil {
		// an intersection: a tuple with a rejected component is dead
		live = func(states []int32) bool { return !slices.Contains(states, -1) }
	}
	// A tuple's key is a number where the tuples can be numbered in 64 bits
	// (component i's state s is the digit s+1 in base len(ds[i].states)+1, the
	// count the last digit): the automata multiplied here are small. Where
	// there are few such numbers the index is a table, else a map; past 64
	// bits it is a map by the states' bytes.
	span := uint64(1) // the count's values: 0..maxLen, or 0..minLen when unbounded
	if maxLen >= 0 {
		span = uint64(maxLen) + 1
	} else if counted {
		span = uint64(minLen) + 1
	}
	radix := make([]uint64, n)
	space, numbered := span, true
	for i, d := range ds {
		radix[i] = uint64(len(d.states)) + 1
		if space > math.MaxUint64/radix[i] {
			numbered = false
			break
		}
		space *= radix[i]
	}
	var dense []int32         // space <= denseTuples
	var nums map[uint64]int32 // numbered, space > denseTuples
	var index map[string]int32
	switch {
	case numbered && space <= denseTuples:
		dense = make([]int32, space)
		for i := range dense {
			dense[i] = -1
		}
	case numbered:
		nums = map[uint64]int32{}
	default:
		index = map[string]int32{}
	}
	num := func(states []int32, count int) uint64 {
		k := uint64(0)
		for i, s := range states {
			k = k*radix[i] + uint64(s+1)
		}
		return k*span + uint64(count)
	}
	// a tuple's key when not numbered, in a buffer reused for every lookup
	// (a lookup with string(key) copies nothing; only a new tuple's key is
	// copied)
	var key []byte
	keyOf := func(states []int32, count int) []byte {
		key = key[:0]
		for _, s := range states {
			key = binary.LittleEndian.AppendUint32(key, uint32(s))
		}
		if counted {
			key = binary.LittleEndian.AppendUint32(key, uint32(count))
		}
		return key
	}
	out := &dfa{}
	var tuples []tup
	var flat []int32 // the tuples' states, n per tuple
	// add returns the state of a tuple (states is copied when it is new)
	add := func(states []int32, count int) (int32, error) {
		var k uint64
		var sk []byte
		switch {
		case dense != nil:
			k = num(states, count)
			if i := dense[k]; i >= 0 {
				return i, nil
			}
		case nums != nil:
			k = num(states, count)
			if i, ok := nums[k]; ok {
				return i, nil
			}
		default:
			sk = keyOf(states, count)
			if i, ok := index[string(sk)]; ok {
				return i, nil
			}
		}
		if len(out.states) >= maxDFAStates {
			return 0, errDFATooLarge
		}
		i := int32(len(out.states))
		switch {
		case dense != nil:
			dense[k] = i
		case nums != nil:
			nums[k] = i
		default:
			index[string(sk)] = i
		}
		out.states = append(out.states, dstate{accept: accept(states) && count >= minLen})
		at := len(flat)
		flat = append(flat, states...)
		tuples = append(tuples, tup{states: flat[at : at+n : at+n], count: count})
		return i, nil
	}
	if _, err := add(make([]int32, n), 0); err != nil {
		return nil, err
	}
	next := make([]int32, n)
	var cuts []rune
	for si := 0; si < len(tuples); si++ {
		cur := tuples[si]
		if maxLen >= 0 && cur.count >= maxLen {
			continue
		}
		// every code point belongs to some interval: a tuple whose components
		// all rejected may still accept (a complement)
		cuts = append(cuts[:0], 0, 0xD800, 0xE000, unicode.MaxRune+1)
		for c, s := range cur.states {
			if s < 0 {
				continue
			}
			for _, e := range ds[c].states[s].edges {
				cuts = append(cuts, e.lo, e.hi+1)
			}
		}
		slices.Sort(cuts)
		cuts = slices.Compact(cuts)
		var edges []dedge
		for ci := 0; ci+1 < len(cuts); ci++ {
			lo, hi := cuts[ci], cuts[ci+1]-1
			if lo == 0xD800 {
				continue // surrogates are not characters
			}
			count := cur.count + 1
			if maxLen < 0 {
				count = min(count, minLen)
			}
			for c, s := range cur.states {
				next[c] = ds[c].step(s, lo)
			}
			if live != nil && !live(next) {
				continue
			}
			to, err := add(next, count)
			if err != nil {
				return nil, err
			}
			if k := len(edges); k > 0 && edges[k-1].to == to && edges[k-1].hi+1 == lo {
				edges[k-1].hi = hi
				continue
			}
			edges = append(edges, dedge{lo, hi, to})
		}
		out.states[si].edges = edges
	}
	return out, nil
}

// trim keeps the states that are reachable (all are, by construction) and can
// reach an accepting state, renumbered with the start first.
func (d *dfa) trim() *dfa {
	n := len(d.states)
	// predecessors in compressed rows: rev[at[t]:at[t+1]] lead to t
	at := make([]int32, n+2)
	for _, st := range d.states {
		for _, e := range st.edges {
			at[e.to+2]++
		}
	}
	for t := 2; t < len(at); t++ {
		at[t] += at[t-1]
	}
	rev := make([]int32, at[n+1])
	for s, st := range d.states {
		for _, e := range st.edges {
			rev[at[e.to+1]] = int32(s)
			at[e.to+1]++
		}
	}
	good := make([]bool, n)
	var work []int32
	for s, st := range d.states {
		if st.accept {
			good[s] = true
			work = append(work, int32(s))
		}
	}
	for len(work) > 0 {
		s := work[len(work)-1]
		work = work[:len(work)-1]
		for _, p := range rev[at[s]:at[s+1]] {
			if !good[p] {
				good[p] = true
				work = append(work, p)
			}
		}
	}
	if n == 0 || !good[0] {
		return &dfa{}
	}
	// renumber in breadth-first order from the start
	id := make([]int32, n)
	for i := range id {
		id[i] = -1
	}
	order := []int32{0}
	id[0] = 0
	for i := 0; i < len(order); i++ {
		for _, e := range d.states[order[i]].edges {
			if good[e.to] && id[e.to] < 0 {
				id[e.to] = int32(len(order))
				order = append(order, e.to)
			}
		}
	}
	// the kept edges, carved from one array
	kept := 0
	for _, s := range order {
		for _, e := range d.states[s].edges {
			if good[e.to] {
				kept++
			}
		}
	}
	edges := make([]dedge, 0, kept)
	out := &dfa{states: make([]dstate, len(order))}
	for i, s := range order {
		st := d.states[s]
		from := len(edges)
		for _, e := range st.edges {
			if good[e.to] {
				edges = append(edges, dedge{e.lo, e.hi, id[e.to]})
			}
		}
		out.states[i] = dstate{accept: st.accept}
		if len(edges) > from {
			out.states[i].edges = edges[from:len(edges):len(edges)]
		}
	}
	return out
}

// empty reports whether the automaton accepts nothing.
func (d *dfa) empty() bool { return len(d.states) == 0 }

// maxLen reports whether the language is finite (no cycle), and its longest
// text.
func (d *dfa) maxLen() (int, bool) {
	if len(d.states) == 0 {
		return 0, true
	}
	order, acyclic := d.postorder()
	if !acyclic {
		return 0, false
	}
	longest := make([]int, len(d.states))
	for _, s := range order { // every state after those it leads to
		for _, e := range d.states[s].edges {
			longest[s] = max(longest[s], longest[e.to]+1)
		}
	}
	return longest[0], true
}

// mergeAdjacent merges, in place, the adjacent ranges of rs (sorted and
// disjoint, as a state's edges are).
func mergeAdjacent(rs []rng) []rng {
	out := rs[:0]
	for _, r := range rs {
		if k := len(out); k > 0 && out[k-1].Hi+1 == r.Lo {
			out[k-1].Hi = r.Hi
			continue
		}
		out = append(out, r)
	}
	return out
}

// postorder lists the states reachable from the start, each after every
// state it leads to, when the automaton has no cycle (ok false otherwise).
func (d *dfa) postorder() (order []int32, ok bool) {
	const white, grey, black = 0, 1, 2
	color := make([]uint8, len(d.states))
	order = make([]int32, 0, len(d.states))
	type frame struct {
		s    int32
		next int
	}
	stack := []frame{{0, 0}}
	color[0] = grey
	for len(stack) > 0 {
		f := &stack[len(stack)-1]
		edges := d.states[f.s].edges
		if f.next == len(edges) {
			color[f.s] = black
			order = append(order, f.s)
			stack = stack[:len(stack)-1]
			continue
		}
		to := edges[f.next].to
		f.next++
		switch color[to] {
		case grey:
			return order, false
		case white:
			color[to] = grey
			stack = append(stack, frame{to, 0})
		}
	}
	return order, true
}

// grammar writes the automaton as right-linear rules (JSON string content in
// json mode) and returns the start's expression ("" for the empty text only).
func (d *dfa) grammar(rc *regexConv, hint string) string {
	if d.empty() {
		return noMatch
	}
	names := make([]string, len(d.states))
	final := func(s int32) bool { return d.states[s].accept && len(d.states[s].edges) == 0 }
	// An acyclic automaton (a length bound makes one) is written from its
	// last states back, each state's rule found by its body (builder.rule):
	// a state with the same continuations as one already written, in this
	// automaton or another, is that rule. Several automata in one grammar (the
	// branches of an anyOf of patterns with the same length bounds) share
	// what they have in common. A cycle needs its names before its bodies.
	order, acyclic := d.postorder()
	if !acyclic {
		order = order[:0]
		for s := range d.states {
			if !final(int32(s)) {
				names[s] = rc.b.reserve(hint + "-s" + strconv.Itoa(s))
			}
			order = append(order, int32(s))
		}
	}
	var targets []int32
	var ranges []rng
	var body []byte
	for _, s := range order {
		st := d.states[s]
		if final(s) {
			continue
		}
		// one alternative per target, in order of first appearance (a state
		// has few edges: a scan finds each target's)
		targets = targets[:0]
		for _, e := range st.edges {
			if !slices.Contains(targets, e.to) {
				targets = append(targets, e.to)
			}
		}
		body = body[:0]
		if st.accept {
			body = append(body, '(')
		}
		for i, t := range targets {
			ranges = ranges[:0]
			for _, e := range st.edges {
				if e.to == t {
					ranges = append(ranges, rng{Lo: e.lo, Hi: e.hi})
				}
			}
			if i > 0 {
				body = append(body, " | "...)
			}
			body = append(body, rc.classExpr(mergeAdjacent(ranges))...)
			if !final(t) {
				body = append(body, ' ')
				body = append(body, names[t]...)
			}
		}
		if st.accept {
			body = append(body, ")?"...)
		}
		if acyclic {
			if n, ok := rc.b.byBody[string(body)]; ok {
				names[s] = n // the name is made only for a new rule
			} else {
				names[s] = rc.b.rule(hint+"-s"+strconv.Itoa(int(s)), string(body))
			}
		} else {
			rc.b.define(names[s], string(body))
		}
	}
	if final(0) {
		return `""`
	}
	return names[0]
}

// minimize merges equivalent states; the automaton must be trimmed (every
// state can accept). It refines the partition {accepting, other} until every
// block's states have the same signature (their edges, by block of target,
// adjacent ranges into one block merged), as Moore's algorithm does, but a
// round looks only at the predecessors of the states that changed block in
// the round before: the others' signatures cannot have changed. Moore's
// rounds each look at every state, and an automaton that counts (a length
// bound: a chain of n states) takes n rounds, so n^2 signatures; here it
// takes O(n). Blocks are ranges of one array of states (Hopcroft's layout),
// so a split moves only the states that leave.
func (d *dfa) minimize() *dfa {
	n := len(d.states)
	if n <= 1 {
		return d
	}
	// predecessors, in compressed rows
	predStart := make([]int32, n+1)
	for _, st := range d.states {
		for _, e := range st.edges {
			predStart[e.to+1]++
		}
	}
	for i := 0; i < n; i++ {
		predStart[i+1] += predStart[i]
	}
	preds := make([]int32, predStart[n])
	fill := slices.Clone(predStart[:n])
	for s, st := range d.states {
		for _, e := range st.edges {
			preds[fill[e.to]] = int32(s)
			fill[e.to]++
		}
	}
	// blocks: elems[start[b]:end[b]] are block b's states; pos[s] is where s is
	class := make([]int32, n)
	elems := make([]int32, 0, n)
	for s, st := range d.states {
		if !st.accept {
			elems = append(elems, int32(s))
		}
	}
	split := int32(len(elems))
	for s, st := range d.states {
		if st.accept {
			elems = append(elems, int32(s))
			class[s] = 1
		}
	}
	pos := make([]int32, n)
	for i, s := range elems {
		pos[s] = int32(i)
	}
	start, end := []int32{0, split}, []int32{split, int32(n)}
	if split == 0 || split == int32(n) {
		// one block: every state accepts, or none does
		start, end = []int32{0}, []int32{int32(n)}
		clear(class)
	}
	var b []byte // signature buffer
	sigOf := func(s int32) []byte {
		b = b[:0]
		var lastTo int32 = -1
		var lastHi rune = -2
		for _, e := range d.states[s].edges {
			to := class[e.to]
			if to == lastTo && e.lo == lastHi+1 {
				b = b[:len(b)-4]
			} else {
				b = binary.LittleEndian.AppendUint32(b, uint32(e.lo))
				b = binary.LittleEndian.AppendUint32(b, uint32(to))
			}
			b = binary.LittleEndian.AppendUint32(b, uint32(e.hi))
			lastTo, lastHi = to, e.hi
		}
		return b
	}
	mark := make([]int32, n) // round in which a state is a candidate
	cands := make([]int32, n)
	for i := range cands {
		cands[i] = int32(i)
	}
	var moved, movedTo []int32
	groups := map[string]int32{}
	var gid []int32 // each candidate's group, in the order of cands of a block
	for round := int32(1); len(cands) > 0; round++ {
		for _, s := range cands {
			mark[s] = round
		}
		// candidates by block (a stable sort: blocks in order, then states)
		slices.SortFunc(cands, func(x, y int32) int {
			if class[x] != class[y] {
				return int(class[x] - class[y])
			}
			return int(x - y)
		})
		moved, movedTo = moved[:0], movedTo[:0]
		for i := 0; i < len(cands); {
			blk := class[cands[i]]
			j := i
			for j < len(cands) && class[cands[j]] == blk {
				j++
			}
			list := cands[i:j]
			i = j
			// the signature the block keeps: that of a state that is not a
			// candidate (all of those share it), else the first candidate's
			clear(groups)
			stay := list[0]
			if int32(len(list)) < end[blk]-start[blk] {
				for _, s := range elems[start[blk]:end[blk]] {
					if mark[s] != round {
						stay = s
						break
					}
				}
			}
			groups[string(sigOf(stay))] = -1
			gid = gid[:0]
			leaving := false
			for _, s := range list {
				g, ok := groups[string(sigOf(s))]
				if !ok {
					g = int32(len(groups) - 1)
					groups[string(b)] = g
				}
				gid = append(gid, g)
				leaving = leaving || g >= 0
			}
			if !leaving {
				continue
			}
			// each group of leavers becomes a new block at the end of blk's range
			first := int32(len(start))
			for range len(groups) - 1 {
				start, end = append(start, 0), append(end, 0)
			}
			for g := int32(0); g < int32(len(groups)-1); g++ {
				nb := first + g
				end[nb] = end[blk]
				for k, s := range list {
					if gid[k] != g {
						continue
					}
					last := end[blk] - 1
					o := elems[last]
					elems[pos[s]], elems[last] = o, s
					pos[o], pos[s] = pos[s], last
					end[blk] = last
					moved, movedTo = append(moved, s), append(movedTo, nb)
				}
				start[nb] = end[blk]
			}
		}
		// Signatures are taken against the blocks as they were at the start
		// of the round (as in Moore's rounds), so the moves apply at its end.
		for k, s := range moved {
			class[s] = movedTo[k]
		}
		// next round: the predecessors of the states that moved
		cands = cands[:0]
		for _, s := range moved {
			for _, p := range preds[predStart[s]:predStart[s+1]] {
				if mark[p] != -round {
					mark[p] = -round
					cands = append(cands, p)
				}
			}
		}
	}
	classes := len(start)
	if classes == n {
		return d
	}
	// renumber classes with the start's first
	id := make([]int32, classes)
	for i := range id {
		id[i] = -1
	}
	id[class[0]] = 0
	k := int32(1)
	out := &dfa{states: make([]dstate, classes)}
	for s := range d.states {
		if id[class[s]] < 0 {
			id[class[s]] = k
			k++
		}
	}
	done := make([]bool, classes)
	for s, st := range d.states {
		c := id[class[s]]
		if done[c] {
			continue
		}
		done[c] = true
		ns := dstate{accept: st.accept}
		for _, e := range st.edges {
			to := id[class[e.to]]
			if m := len(ns.edges); m > 0 && ns.edges[m-1].to == to && ns.edges[m-1].hi+1 == e.lo {
				ns.edges[m-1].hi = e.hi
				continue
			}
			ns.edges = append(ns.edges, dedge{e.lo, e.hi, to})
		}
		out.states[c] = ns
	}
	return out
}
