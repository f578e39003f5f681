package schema

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// builder collects the rules of one grammar: names are unique, and a rule whose
// body equals an earlier one's reuses it.
type builder struct {
	order  []string
	rules  map[string]string
	byBody map[string]string
	used   map[string]bool // reserved names
	size   int             // bytes of rule bodies so far
	cfg    config
	next   map[string]int // last suffix used per base name
}

func newBuilder() *builder {
	b := &builder{rules: map[string]string{}, byBody: map[string]string{}, used: map[string]bool{}, next: map[string]int{}}
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
	base = ruleName(base)
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
	if _, ok := b.rules[name]; !ok {
		b.order = append(b.order, name)
	}
	b.rules[name] = body
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

// fixed defines a rule under exactly this name once (for shared primitives).
func (b *builder) fixed(name, body string) string {
	if _, ok := b.rules[name]; ok {
		return name
	}
	b.used[name] = true
	b.define(name, body)
	return name
}

// text writes the grammar: root first, then the other rules in definition order.
func (b *builder) text(root string) string {
	var sb strings.Builder
	write := func(n string) {
		sb.WriteString(n)
		sb.WriteString(" ::= ")
		sb.WriteString(b.rules[n])
		sb.WriteByte('\n')
	}
	write(root)
	for _, n := range b.order {
		if n != root {
			write(n)
		}
	}
	return sb.String()
}

// ruleName keeps letters, digits and '-' of s (GBNF rule names), mapping others
// to '-', and keeps only the last 24 characters (the most specific part).
func ruleName(s string) string {
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

// lit is s as a GBNF string literal.
func lit(s string) string {
	var sb strings.Builder
	sb.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			sb.WriteString(`\"`)
		case '\\':
			sb.WriteString(`\\`)
		case '\n':
			sb.WriteString(`\n`)
		case '\r':
			sb.WriteString(`\r`)
		case '\t':
			sb.WriteString(`\t`)
		default:
			sb.WriteString(escRune(r))
		}
	}
	sb.WriteByte('"')
	return sb.String()
}

// escRune writes r literally when it is printable, else as a GBNF hex escape.
func escRune(r rune) string {
	if r >= 0x20 && r < 0x7f || r > 0x7f && unicode.IsPrint(r) && r != 0xFFFD {
		return string(r)
	}
	switch {
	case r < 0x100:
		return fmt.Sprintf(`\x%02X`, r)
	case r < 0x10000:
		return fmt.Sprintf(`\u%04X`, r)
	}
	return fmt.Sprintf(`\U%08X`, r)
}

// rng is an inclusive range of code points.
type rng struct{ lo, hi rune }

// normRanges sorts and merges ranges.
func normRanges(rs []rng) []rng {
	if len(rs) == 0 {
		return nil
	}
	s := append([]rng(nil), rs...)
	sort.Slice(s, func(i, j int) bool { return s[i].lo < s[j].lo })
	out := []rng{s[0]}
	for _, r := range s[1:] {
		last := &out[len(out)-1]
		if r.lo <= last.hi+1 {
			if r.hi > last.hi {
				last.hi = r.hi
			}
			continue
		}
		out = append(out, r)
	}
	return out
}

// subRanges is a minus b (both normalized).
func subRanges(a, b []rng) []rng {
	var out []rng
	for _, r := range a {
		lo := r.lo
		for _, x := range b {
			if x.hi < lo || x.lo > r.hi {
				continue
			}
			if x.lo > lo {
				out = append(out, rng{lo, x.lo - 1})
			}
			lo = x.hi + 1
			if lo > r.hi {
				break
			}
		}
		if lo <= r.hi {
			out = append(out, rng{lo, r.hi})
		}
	}
	return out
}

// interRanges is a ∩ b (both normalized).
func interRanges(a, b []rng) []rng {
	var out []rng
	for _, x := range a {
		for _, y := range b {
			lo, hi := max(x.lo, y.lo), min(x.hi, y.hi)
			if lo <= hi {
				out = append(out, rng{lo, hi})
			}
		}
	}
	return normRanges(out)
}

// class writes ranges as a GBNF character class (never empty: callers check).
func class(rs []rng, negated bool) string {
	var sb strings.Builder
	sb.WriteByte('[')
	if negated {
		sb.WriteByte('^')
	}
	for _, r := range rs {
		sb.WriteString(classRune(r.lo))
		if r.hi != r.lo {
			if r.hi > r.lo+1 {
				sb.WriteByte('-')
			}
			sb.WriteString(classRune(r.hi))
		}
	}
	sb.WriteByte(']')
	return sb.String()
}

func classRune(r rune) string {
	switch r {
	case '\\', ']', '[', '-', '^', '"':
		return `\` + string(r)
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	}
	return escRune(r)
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

// matchingParen finds the index of the parenthesis closing x[0], skipping
// literals and classes.
func matchingParen(x string) int {
	depth := 0
	for i := 0; i < len(x); i++ {
		switch x[i] {
		case '"':
			for i++; i < len(x) && x[i] != '"'; i++ {
				if x[i] == '\\' {
					i++
				}
			}
		case '[':
			for i++; i < len(x) && x[i] != ']'; i++ {
				if x[i] == '\\' {
					i++
				}
			}
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
func seq(xs ...string) string {
	var parts []string
	for _, x := range xs {
		if x != "" {
			parts = append(parts, x)
		}
	}
	return strings.Join(parts, " ")
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
