package gbnf

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Format writes g as GBNF text: one line per rule, in index order, generated
// helper rules included, with no groups or repetitions left. Parsing the text
// with WithRoot(g.Rules[g.Root].Name) gives a Grammar with the same rules,
// alternatives and elements (only the positions differ). An empty alternative
// is written "". Format is meant for debugging and tests, and for grammars that
// Parse produced; it does not check g.
func Format(g *Grammar) string {
	var b strings.Builder
	for _, r := range g.Rules {
		b.WriteString(r.Name)
		b.WriteString(" ::=")
		for i, alt := range r.Alts {
			if i > 0 {
				b.WriteString(" |")
			}
			b.WriteByte(' ')
			formatSequence(&b, g, alt)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// String formats the grammar as GBNF text (see Format).
func (g *Grammar) String() string { return Format(g) }

func formatSequence(b *strings.Builder, g *Grammar, seq Sequence) {
	if len(seq) == 0 {
		b.WriteString(`""`)
		return
	}
	for i := 0; i < len(seq); {
		if i > 0 {
			b.WriteByte(' ')
		}
		e := seq[i]
		if isSingleChar(e) {
			// A run of single code points is written as one literal.
			b.WriteByte('"')
			for ; i < len(seq) && isSingleChar(seq[i]); i++ {
				writeChar(b, seq[i].Ranges[0].Lo, false)
			}
			b.WriteByte('"')
			continue
		}
		i++
		switch e.Kind {
		case Char:
			if e.Negated && len(e.Ranges) == 0 {
				b.WriteByte('.')
				continue
			}
			writeClass(b, e.Ranges, e.Negated)
		case RuleRef:
			if e.Rule >= 0 && int(e.Rule) < len(g.Rules) {
				b.WriteString(g.Rules[e.Rule].Name)
			} else {
				fmt.Fprintf(b, "<bad-rule-%d>", e.Rule)
			}
		case Repeat:
			if e.Rule >= 0 && int(e.Rule) < len(g.Rules) {
				b.WriteString(g.Rules[e.Rule].Name)
			} else {
				fmt.Fprintf(b, "<bad-rule-%d>", e.Rule)
			}
			fmt.Fprintf(b, "{%d,%d}", e.Min, e.Max)
		case Token:
			if e.Token == AnyToken && e.Name == "" {
				b.WriteString("<any!>") // bnf_sampler's notation: GBNF has none
				continue
			}
			if e.Negated {
				b.WriteByte('!')
			}
			if e.Name != "" {
				b.WriteString(e.Name)
			} else {
				fmt.Fprintf(b, "<[%d]>", e.Token)
			}
		case Except:
			formatExcept(b, g, e) // bnf_sampler's notation: GBNF has none
		case Byte:
			formatByte(b, e) // bnf_sampler's notation: GBNF has none
		}
	}
}

// QuoteLiteral returns s as a GBNF string literal, escaped so that Parse (and
// llama.cpp) reads back exactly s.
func QuoteLiteral(s string) string {
	plain := true // printable ASCII that needs no escape: written as it is
	for i := 0; i < len(s) && plain; i++ {
		c := s[i]
		plain = c >= 0x20 && c < 0x7F && c != '"' && c != '\\'
	}
	if plain {
		return `"` + s + `"`
	}
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, r := range s {
		writeChar(&b, r, false)
	}
	b.WriteByte('"')
	return b.String()
}

// FormatClass returns the ranges as a GBNF character class, [^...] if negated.
func FormatClass(rs []Range, negated bool) string {
	var b strings.Builder
	writeClass(&b, rs, negated)
	return b.String()
}

func writeClass(b *strings.Builder, rs []Range, negated bool) {
	b.WriteByte('[')
	if negated {
		b.WriteByte('^')
	}
	for _, r := range rs {
		writeChar(b, r.Lo, true)
		if r.Hi != r.Lo {
			b.WriteByte('-')
			writeChar(b, r.Hi, true)
		}
	}
	b.WriteByte(']')
}

func isSingleChar(e Element) bool {
	return e.Kind == Char && !e.Negated && len(e.Ranges) == 1 && e.Ranges[0].Lo == e.Ranges[0].Hi
}

// writeChar writes code point r as it may appear in a literal (inClass false)
// or a character class, escaping what would otherwise mean something else and
// what is not printable.
func writeChar(b *strings.Builder, r rune, inClass bool) {
	switch r {
	case '\n':
		b.WriteString(`\n`)
		return
	case '\r':
		b.WriteString(`\r`)
		return
	case '\t':
		b.WriteString(`\t`)
		return
	case '\\':
		b.WriteString(`\\`)
		return
	case '"':
		b.WriteString(`\"`)
		return
	}
	if inClass {
		switch r {
		case ']':
			b.WriteString(`\]`)
			return
		case '[':
			b.WriteString(`\[`)
			return
		case '-', '^':
			// \x2D and \x5E, not \- and \^, so that llama.cpp reads the text too.
			fmt.Fprintf(b, `\x%02X`, r)
			return
		}
	}
	switch {
	case r < 0x80 && unicode.IsPrint(r):
		b.WriteRune(r)
	case r < 0x100 && !unicode.IsPrint(r):
		fmt.Fprintf(b, `\x%02X`, r)
	case utf8.ValidRune(r) && unicode.IsPrint(r):
		b.WriteRune(r)
	case r <= 0xFFFF:
		fmt.Fprintf(b, `\u%04X`, r)
	default:
		b.WriteString(`\U` + fmt.Sprintf("%08X", r))
	}
}
