package engine

import (
	"math/bits"
	"strings"

	"github.com/tetherlm/tether/gocore/gbnf"
)

// Grammar analyses over the compiled program, run once by Compile: the bytes an
// element can still match (rem, minLen, minRest), the rule every path into a rule
// calls first (lead), left recursion (with gbnf.Nullable, the analysis gbnf uses
// for its own check), and the bytes that can follow each rule (follow).

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
		case opByte:
			return 1
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
// none) and reports whether every rule can finish (has a finite derivation; a
// rule that cannot keeps minCap).
//
// minLen is a shortest-derivation problem: an alternative costs its chars plus
// the minLen of the rules it calls (lo times for a counter), and every such cost
// is at least that of each rule it calls. So Knuth's generalization of Dijkstra's
// algorithm settles the rules in order of their bound: a rule is final when it
// leaves the heap, and an alternative is a candidate once all the rules it calls
// are final. O(program · log rules), whatever the shape of the recursion.
func (gr *Grammar) computeMinLen() (allFinite bool) {
	n := len(gr.rules)
	gr.minLen = make([]int32, n)
	for i := range gr.minLen {
		gr.minLen[i] = minCap
	}
	// Per alternative: its owner, the sum so far and the calls still pending;
	// per rule, its uses (alternative, multiplier) in compressed rows.
	var owner, sum, pending []int32
	useAt := make([]int32, n+1)
	for r := range n {
		for _, a := range gr.rules[r] {
			for i := a; gr.elems[i].op != opEnd; i++ {
				if e := gr.elems[i]; e.op == opRef || (e.op == opRepeat && e.lo > 0) {
					useAt[e.arg+1]++
				}
			}
		}
	}
	for r := range n {
		useAt[r+1] += useAt[r]
	}
	useAlt := make([]int32, useAt[n])
	useMul := make([]int32, useAt[n])
	fill := make([]int32, n)
	copy(fill, useAt[:n])
	h := &lenHeap{}
	for r := range n {
		for _, a := range gr.rules[r] {
			id := int32(len(owner))
			var base, calls int32
			for i := a; gr.elems[i].op != opEnd; i++ {
				switch e := gr.elems[i]; e.op {
				case opChar, opByte:
					base = min(base+1, minCap)
				case opRef, opRepeat:
					if e.op == opRepeat && e.lo == 0 {
						continue
					}
					calls++
					useAlt[fill[e.arg]] = id
					useMul[fill[e.arg]] = max(e.lo, 1)
					fill[e.arg]++
				}
			}
			owner = append(owner, int32(r))
			sum = append(sum, base)
			pending = append(pending, calls)
			if calls == 0 {
				h.push(base, int32(r))
			}
		}
	}
	final := make([]bool, n)
	finals := 0
	for h.len() > 0 {
		v, r := h.pop()
		if final[r] {
			continue
		}
		final[r] = true
		finals++
		gr.minLen[r] = v
		for k := useAt[r]; k < useAt[r+1]; k++ {
			a := useAlt[k]
			sum[a] = int32(min(int64(sum[a])+int64(useMul[k])*int64(v), minCap))
			pending[a]--
			if pending[a] == 0 && !final[owner[a]] {
				h.push(sum[a], owner[a])
			}
		}
	}
	gr.minRest = make([]int32, len(gr.elems))
	for i := len(gr.elems) - 1; i >= 0; i-- {
		var c int32
		switch e := gr.elems[i]; e.op {
		case opEnd:
			continue
		case opChar, opByte:
			c = 1
		case opRef:
			c = gr.minLen[e.arg]
		case opRepeat:
			// 0: a frame on this element may be anywhere in its count, and
			// minRest must stay a lower bound for it.
		}
		gr.minRest[i] = min(c+gr.minRest[i+1], minCap)
	}
	return finals == n
}

// lenHeap is a binary min-heap of (bound, rule) pairs for computeMinLen.
type lenHeap struct{ v, r []int32 }

func (h *lenHeap) len() int { return len(h.v) }

func (h *lenHeap) push(v, r int32) {
	h.v, h.r = append(h.v, v), append(h.r, r)
	for i := len(h.v) - 1; i > 0; {
		p := (i - 1) / 2
		if h.v[p] <= h.v[i] {
			break
		}
		h.v[p], h.v[i], h.r[p], h.r[i] = h.v[i], h.v[p], h.r[i], h.r[p]
		i = p
	}
}

func (h *lenHeap) pop() (v, r int32) {
	v, r = h.v[0], h.r[0]
	last := len(h.v) - 1
	h.v[0], h.r[0] = h.v[last], h.r[last]
	h.v, h.r = h.v[:last], h.r[:last]
	for i := 0; ; {
		c := 2*i + 1
		if c >= last {
			break
		}
		if c+1 < last && h.v[c+1] < h.v[c] {
			c++
		}
		if h.v[i] <= h.v[c] {
			break
		}
		h.v[i], h.v[c], h.r[i], h.r[c] = h.v[c], h.v[i], h.r[c], h.r[i]
		i = c
	}
	return v, r
}

// remMany is Grammar.rem's "unbounded or large".
const remMany = 255

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
	nullable := gr.nullable
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
//
// Both first and follow sets are unions over a dependency graph between rules
// (first[r] ⊇ first[s] when r can start with s; follow[s] ⊇ follow[r] when s can
// end r), so each is solved in one pass over the graph's strongly connected
// components (closeUnions): linear in the program's size, where a global fixpoint
// took one pass per link of the longest dependency chain. nullable is
// gbnf.Nullable of the source grammar (a worklist, also linear).
func (gr *Grammar) computeFollow(nullable []bool) {
	n := len(gr.rules)
	classFirst := make([]byteSet, len(gr.classes))
	for i := range gr.classes {
		addClassFirstBytes(&gr.classes[i], &classFirst[i])
		gr.classes[i].first = classFirst[i]
	}
	elemNullable := func(e elem) bool {
		switch e.op {
		case opRef:
			return nullable[e.arg]
		case opRepeat:
			return nullable[e.arg] || e.lo == 0
		}
		return false // chars, and tokens: they consume no bytes but are not empty
	}
	// first[r]: the first bytes of r's nonempty strings. r depends on every rule
	// it can call before consuming anything.
	first := make([]byteSet, n)
	var deps unionGraph
	deps.reset(n)
	for r := 0; r < n; r++ {
		for _, a := range gr.rules[r] {
			for i := a; ; i++ {
				e := gr.elems[i]
				if e.op == opChar {
					first[r].union(&classFirst[e.arg])
				} else if e.op == opByte {
					first[r].union(&gr.byteSets[e.arg].bits)
				} else if e.op == opRef || e.op == opRepeat {
					deps.add(int32(r), e.arg)
				}
				if e.op == opEnd || !elemNullable(e) {
					break
				}
			}
		}
	}
	deps.close(first)

	// follow[s]: the first bytes of what comes after s inside each alternative
	// that calls it (local), and r's follow where that rest can be empty.
	follow := make([]byteSet, n)
	deps.reset(n)
	var sufF []byteSet
	var sufN []bool
	for r := 0; r < n; r++ {
		for _, a := range gr.rules[r] {
			end := a
			hasRef := false
			for ; gr.elems[end].op != opEnd; end++ {
				op := gr.elems[end].op
				hasRef = hasRef || op == opRef || op == opRepeat
			}
			if !hasRef {
				continue
			}
			l := int(end - a)
			if cap(sufF) < l+1 {
				sufF = make([]byteSet, l+1)
				sufN = make([]bool, l+1)
			}
			sufF, sufN = sufF[:l+1], sufN[:l+1]
			sufF[l], sufN[l] = byteSet{}, true
			for j := l - 1; j >= 0; j-- {
				e := gr.elems[a+int32(j)]
				var f byteSet
				switch e.op {
				case opChar:
					f = classFirst[e.arg]
				case opByte:
					f = gr.byteSets[e.arg].bits
				case opRef, opRepeat:
					f = first[e.arg]
				}
				null := elemNullable(e)
				if null {
					f.union(&sufF[j+1])
				}
				sufF[j], sufN[j] = f, null && sufN[j+1]
			}
			for j := 0; j < l; j++ {
				e := gr.elems[a+int32(j)]
				if e.op != opRef && e.op != opRepeat {
					continue
				}
				follow[e.arg].union(&sufF[j+1])
				if e.op == opRepeat && e.hi > 1 {
					// Another round of the counter may follow.
					follow[e.arg].union(&first[e.arg])
				}
				if sufN[j+1] {
					deps.add(e.arg, int32(r))
				}
			}
		}
	}
	deps.close(follow)
	gr.follow = make([]byteSet, n)
	gr.followKinds = make([][2]uint64, n)
	for r := range follow {
		gr.follow[r] = follow[r]
		if r > 0 && follow[r] == follow[r-1] { // neighbouring rules often share one
			gr.followKinds[r] = gr.followKinds[r-1]
			continue
		}
		gr.followKinds[r] = byteKinds(&follow[r])
	}
}

// byteKinds returns the set of the byte kinds (see byteKind) of the bytes in s.
func byteKinds(s *byteSet) (kinds [2]uint64) {
	for w, word := range s {
		for ; word != 0; word &= word - 1 {
			k := byteKind(byte(w*32 + bits.TrailingZeros32(word)))
			kinds[k>>6] |= 1 << (k & 63)
		}
	}
	return kinds
}

// unionGraph is a dependency graph between rules for set unions: an edge r -> s
// says set[r] ⊇ set[s]. Edges are collected with add, then close solves the
// least sets in one pass over its strongly connected components (every rule of a
// component ends with the same set), in O(rules + edges) with a handful of
// allocations whatever the number of rules.
type unionGraph struct {
	n    int
	from []int32
	to   []int32
}

func (g *unionGraph) reset(n int) {
	g.n, g.from, g.to = n, g.from[:0], g.to[:0]
}

func (g *unionGraph) add(r, s int32) {
	g.from = append(g.from, r)
	g.to = append(g.to, s)
}

// close replaces each sets[r] by the union of the sets of every rule r reaches
// (itself included), one component at a time: a component comes after every
// component it reaches, so the sets it depends on are final by then.
func (g *unionGraph) close(sets []byteSet) {
	g.components(func(members []int32, adj func(int32) []int32, done []bool) {
		var acc byteSet
		for _, m := range members {
			acc.union(&sets[m])
			for _, w := range adj(m) {
				if done[w] {
					acc.union(&sets[w])
				}
			}
		}
		for _, m := range members {
			sets[m] = acc
		}
	})
}

// components calls visit with the graph's strongly connected components, each
// after every component it has an edge to (Tarjan's algorithm, iterative:
// chains of 100,000 rules are ordinary). adj gives a rule's edges; done marks the
// rules of the components visited before this one (members are marked after
// visit returns).
func (g *unionGraph) components(visit func(members []int32, adj func(int32) []int32, done []bool)) {
	n := g.n
	// Adjacency in compressed rows.
	start := make([]int32, n+1)
	for _, r := range g.from {
		start[r+1]++
	}
	for r := 0; r < n; r++ {
		start[r+1] += start[r]
	}
	adjs := make([]int32, len(g.from))
	fill := make([]int32, n)
	copy(fill, start[:n])
	for i, r := range g.from {
		adjs[fill[r]] = g.to[i]
		fill[r]++
	}
	adj := func(r int32) []int32 { return adjs[start[r]:start[r+1]] }
	const unvisited = -1
	index := make([]int32, n) // visit order, or unvisited
	low := make([]int32, n)
	done := make([]bool, n) // in a completed component
	for i := range index {
		index[i] = unvisited
	}
	next := fill // reused: per rule on the call stack, its next edge
	var stack, calls []int32
	counter := int32(0)
	for root := 0; root < n; root++ {
		if index[root] != unvisited {
			continue
		}
		calls = append(calls, int32(root))
		index[root], low[root] = counter, counter
		counter++
		next[root] = start[root]
		stack = append(stack, int32(root))
		for len(calls) > 0 {
			v := calls[len(calls)-1]
			if next[v] < start[v+1] {
				w := adjs[next[v]]
				next[v]++
				switch {
				case index[w] == unvisited:
					index[w], low[w] = counter, counter
					counter++
					next[w] = start[w]
					stack = append(stack, w)
					calls = append(calls, w)
				case !done[w]:
					low[v] = min(low[v], index[w])
				}
				continue
			}
			calls = calls[:len(calls)-1]
			if len(calls) > 0 {
				u := calls[len(calls)-1]
				low[u] = min(low[u], low[v])
			}
			if low[v] != index[v] {
				continue
			}
			// v roots a component: the stack from v up.
			k := len(stack) - 1
			for stack[k] != v {
				k--
			}
			members := stack[k:]
			visit(members, adj, done)
			for _, m := range members {
				done[m] = true
			}
			stack = stack[:k]
		}
	}
}

// addClassFirstBytes adds every byte that can start the UTF-8 encoding of a code
// point of c.
func addClassFirstBytes(c *class, dst *byteSet) {
	for w := range c.ascii { // an ASCII character is its own first byte
		dst[w] |= c.ascii[w]
	}
	if c.narrow {
		return // no character of more than one byte
	}
	for b := 0xC2; b <= 0xF4; b++ {
		p, ok := utf8Start(byte(b))
		if !ok {
			continue
		}
		lo, hi := p.span()
		if overlapsValid(c, lo, hi) {
			dst.add(byte(b))
		}
	}
}
