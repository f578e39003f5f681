package schema

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tetherlm/tether/gocore/gbnf"
)

// builder collects the rules of one grammar: names are unique, and a rule whose
// body equals an earlier one's reuses it.
type builder struct {
	order  []string         // the defined names, in the order first defined
	bodies []string         // bodies[i] is the body of order[i]
	rules  map[string]int32 // a defined name -> its index in order
	byBody map[string]string
	used   map[string]bool // reserved names
	size   int             // bytes of rule bodies so far
	cfg    config
	next   map[string]int // last suffix used per base name
	// classes memoizes regexConv.classExpr by its ranges (automata repeat
	// their edge classes from state to state and automaton to automaton)
	classes  map[string]string
	classKey []byte // classExpr's key buffer
	// names memoizes ruleName for bases it has to rewrite (a schema's definition
	// names, "io.k8s.api.core.v1.PodSpec", recur for every rule made under them)
	names map[string]string
}

// newBuilder returns an empty builder whose maps have room for about rules
// rules (a hint: they grow past it).
func newBuilder(rules int) *builder {
	b := &builder{rules: make(map[string]int32, rules), byBody: make(map[string]string, rules),
		used: make(map[string]bool, rules), next: map[string]int{}, classes: map[string]string{}}
	for n := range primBodies {
		b.used[n] = true
	}
	for _, f := range formats {
		for n := range f.rules {
			b.used[n] = true
		}
	}
	b.used["root"] = true
	return b
}

// maxGrammarBytes bounds the text a conversion may produce.
const maxGrammarBytes = 4 << 20

// reserve returns a fresh rule name derived from base.
func (b *builder) reserve(base string) string {
	if !cleanName(base) {
		n, ok := b.names[base]
		if !ok {
			if b.names == nil {
				b.names = map[string]string{}
			}
			n = ruleName(base)
			b.names[base] = n
		}
		base = n
	}
	name := base
	for b.used[name] {
		b.next[base]++
		name = base + "-" + strconv.Itoa(b.next[base])
	}
	b.used[name] = true
	return name
}

// define sets the body of a reserved name.
func (b *builder) define(name, body string) {
	i, ok := b.rules[name]
	if !ok {
		i = int32(len(b.order))
		b.rules[name] = i
		b.order = append(b.order, name)
		b.bodies = append(b.bodies, "")
	}
	b.bodies[i] = body
	b.size += len(name) + len(body) + 6
	if _, ok := b.byBody[body]; !ok {
		b.byBody[body] = name
	}
}

// rule adds a rule with the given body (or finds an identical one) and returns its name.
func (b *builder) rule(base, body string) string {
	if n, ok := b.byBody[body]; ok {
		return n
	}
	n := b.reserve(base)
	b.define(n, body)
	return n
}

// ruleBytes is rule for a body in a scratch buffer: the body is copied only
// when it is new.
func (b *builder) ruleBytes(base string, body []byte) string {
	if n, ok := b.byBody[string(body)]; ok {
		return n
	}
	return b.rule(base, string(body))
}

// fixed defines a rule under exactly this name once (for shared primitives).
func (b *builder) fixed(name, body string) string {
	if _, ok := b.rules[name]; ok {
		return name
	}
	b.used[name] = true
	b.define(name, body)
	return name
}

// ruleList lists the rules reachable from root: root first, then the others in
// definition order (gbnf.Text(rules) is the grammar's text). Rules that only a
// failed part of the conversion used (an anyOf branch or a $ref target that
// turned out to accept nothing) are left out.
func (b *builder) ruleList(root string) []gbnf.RuleText {
	ri, ok := b.rules[root]
	if !ok {
		return []gbnf.RuleText{{Name: root}}
	}
	// reachability by index: a reference costs one lookup of its name
	reach := make([]bool, len(b.order))
	reach[ri] = true
	work := []int32{ri}
	count := 1
	for len(work) > 0 {
		n := work[len(work)-1]
		work = work[:len(work)-1]
		forEachRef(b.bodies[n], func(r string) {
			if j, ok := b.rules[r]; ok && !reach[j] {
				reach[j] = true
				work = append(work, j)
				count++
			}
		})
	}
	return b.list(ri, reach, count)
}

// allRules lists every rule defined: root first, then the others in
// definition order (ruleList's order, without its reachability).
func (b *builder) allRules(root string) []gbnf.RuleText {
	ri, ok := b.rules[root]
	if !ok {
		return []gbnf.RuleText{{Name: root}}
	}
	return b.list(ri, nil, len(b.order))
}

// list lists rule ri, then the other rules in definition order that keep
// holds (all of them when keep is nil); n is how many that makes.
func (b *builder) list(ri int32, keep []bool, n int) []gbnf.RuleText {
	out := make([]gbnf.RuleText, 0, n)
	out = append(out, gbnf.RuleText{Name: b.order[ri], Body: b.bodies[ri]})
	for i, name := range b.order {
		if int32(i) != ri && (keep == nil || keep[i]) {
			out = append(out, gbnf.RuleText{Name: name, Body: b.bodies[i]})
		}
	}
	return out
}

// forEachRef calls f with each rule name an expression refers to (skipping
// literals, classes and token references).
func forEachRef(x string, f func(string)) {
	forEachRefAt(x, func(i, j int) { f(x[i:j]) })
}

// forEachRefAt calls f with the start and end of each rule reference in the GBNF
// body x, in order.
func forEachRefAt(x string, f func(i, j int)) {
	for i := 0; i < len(x); i++ {
		switch c := x[i]; {
		case c == '"' || c == '[' || c == '<':
			end := byte('"')
			if c == '[' {
				end = ']'
			} else if c == '<' {
				end = '>'
			}
			i = spanEnd(x, i, end)
		case c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9':
			j := i
			for j < len(x) && (x[j] == '-' || x[j] >= 'a' && x[j] <= 'z' || x[j] >= 'A' && x[j] <= 'Z' || x[j] >= '0' && x[j] <= '9') {
				j++
			}
			if k := x[i]; !(k >= '0' && k <= '9') || i == 0 || x[i-1] != '{' && x[i-1] != ',' {
				f(i, j)
			}
			i = j - 1
		}
	}
}

// ruleName keeps letters, digits and '-' of s (GBNF rule names), mapping others
// to '-', and keeps only the last 24 characters (the most specific part).
func ruleName(s string) string {
	if cleanName(s) {
		return s // the common case (a name the converter made): no copy
	}
	var sb strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			sb.WriteRune(r)
		default:
			sb.WriteByte('-')
		}
	}
	n := sb.String()
	for strings.Contains(n, "--") {
		n = strings.ReplaceAll(n, "--", "-")
	}
	if len(n) > 24 {
		n = n[len(n)-24:]
	}
	n = strings.Trim(n, "-")
	if n == "" {
		return "r"
	}
	return n
}

// cleanName reports whether ruleName would return s unchanged.
func cleanName(s string) bool {
	if s == "" || len(s) > 24 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '-' && s[i-1] != '-':
		default:
			return false
		}
	}
	return true
}

// rng is an inclusive range of code points.
type rng = gbnf.Range

// subRanges is a minus b (both normalized).
func subRanges(a, b []rng) []rng {
	var out []rng
	for _, r := range a {
		lo := r.Lo
		for _, x := range b {
			if x.Hi < lo || x.Lo > r.Hi {
				continue
			}
			if x.Lo > lo {
				out = append(out, rng{Lo: lo, Hi: x.Lo - 1})
			}
			lo = x.Hi + 1
			if lo > r.Hi {
				break
			}
		}
		if lo <= r.Hi {
			out = append(out, rng{Lo: lo, Hi: r.Hi})
		}
	}
	return out
}

// interRanges is a ∩ b (both normalized).
func interRanges(a, b []rng) []rng {
	var out []rng
	for _, x := range a {
		for _, y := range b {
			lo, hi := max(x.Lo, y.Lo), min(x.Hi, y.Hi)
			if lo <= hi {
				out = append(out, rng{Lo: lo, Hi: hi})
			}
		}
	}
	return gbnf.NormalizeRanges(out)
}

// alt joins alternatives; a single one is returned as is.
func alt(xs []string) string {
	if len(xs) == 1 {
		return xs[0]
	}
	return strings.Join(xs, " | ")
}

// group parenthesizes an expression unless it is a single name, literal or class.
func group(x string) string {
	if isAtom(x) {
		return x
	}
	return "(" + x + ")"
}

func isAtom(x string) bool {
	if x == "" {
		return false
	}
	if x[0] == '(' && matchingParen(x) == len(x)-1 {
		return true
	}
	if x[0] == '"' && len(x) >= 2 && x[len(x)-1] == '"' {
		// a single literal: no unescaped quote inside
		esc := false
		for _, c := range x[1 : len(x)-1] {
			if esc {
				esc = false
				continue
			}
			if c == '\\' {
				esc = true
				continue
			}
			if c == '"' {
				return false
			}
		}
		return true
	}
	if x[0] == '[' && x[len(x)-1] == ']' && !strings.ContainsAny(x, " ") {
		return true
	}
	for _, c := range x {
		if !(c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// spanEnd returns the index of the delimiter end that closes the literal, class
// or token reference opening at x[i], skipping backslash escapes (len(x) or past
// it when nothing closes it).
func spanEnd(x string, i int, end byte) int {
	for i++; i < len(x) && x[i] != end; i++ {
		if x[i] == '\\' {
			i++
		}
	}
	return i
}

// matchingParen finds the index of the parenthesis closing x[0], skipping
// literals and classes.
func matchingParen(x string) int {
	depth := 0
	for i := 0; i < len(x); i++ {
		switch x[i] {
		case '"':
			i = spanEnd(x, i, '"')
		case '[':
			i = spanEnd(x, i, ']')
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// seq joins the non-empty parts of a sequence; an empty sequence is "".
// litComma and litColon are the GBNF literals "," and ":" (QuoteLiteral's text).
const (
	litComma = `","`
	litColon = `":"`
)

func seq(xs ...string) string {
	n, k, last := 0, 0, ""
	for _, x := range xs {
		if x != "" {
			n, k, last = n+len(x), k+1, x
		}
	}
	if k <= 1 {
		return last
	}
	var b strings.Builder // one allocation: the converter's most frequent join
	b.Grow(n + k - 1)
	for _, x := range xs {
		if x != "" {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(x)
		}
	}
	return b.String()
}

// repeat writes x{lo,hi} (hi < 0: unbounded) in its shortest GBNF form.
func repeat(x string, lo, hi int) string {
	if hi == 0 {
		return `""`
	}
	g := group(x)
	switch {
	case lo == 0 && hi < 0:
		return g + "*"
	case lo == 1 && hi < 0:
		return g + "+"
	case lo == 0 && hi == 1:
		return g + "?"
	case lo == 1 && hi == 1:
		return x
	case hi < 0:
		return fmt.Sprintf("%s{%d,}", g, lo)
	case lo == hi:
		return fmt.Sprintf("%s{%d}", g, lo)
	}
	return fmt.Sprintf("%s{%d,%d}", g, lo, hi)
}

// opt is x? (an empty x stays empty).
func opt(x string) string {
	if x == "" || x == `""` {
		return ""
	}
	return group(x) + "?"
}
