package engine

import (
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
			case opChar, opByte:
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
		case opByte:
			for k := range dst {
				dst[k] |= gr.byteSets[e.arg].bits[k]
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
