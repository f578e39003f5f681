package schema

import (
	"encoding/binary"
	"fmt"
	"regexp/syntax"
	"strconv"
	"strings"
	"unicode"

	"github.com/tetherlm/tether/gocore/gbnf"
)

// FromRegex converts a regular expression into GBNF text whose root accepts
// exactly the strings the pattern matches in full, as
// regexp.MatchString("^(?:"+pattern+")$") would. The pattern is parsed by Go's
// regexp/syntax with Perl flags, so its syntax is Go's (RE2): lookarounds and
// backreferences do not exist there and are reported as such. ^ and $ (and \A,
// \z) are allowed at the start and end of the pattern or of its top-level
// alternatives, where they are redundant; anywhere else, and for \b and \B, the
// conversion fails with a *RegexError. Options other than none are ignored.
func FromRegex(pattern string, opts ...Option) (grammar string, err error) {
	defer func() {
		if r := recover(); r != nil {
			grammar, err = "", &RegexError{Pattern: pattern, Msg: fmt.Sprintf("internal error: %v", r)}
		}
	}()
	re, err := parseRegex(pattern, pattern)
	if err != nil {
		return "", err
	}
	b := newBuilder(0)
	rc := &regexConv{b: b, pattern: pattern}
	body, err := rc.top(re, true)
	if err != nil {
		return "", err
	}
	b.used["root"] = true
	b.define("root", body)
	g := gbnf.Text(b.ruleList("root"))
	if err := checkGrammar(g); err != nil {
		return "", &RegexError{Pattern: pattern, Msg: err.Error()}
	}
	return g, nil
}

// parseRegex parses a Go-syntax pattern; orig is what the user wrote (for errors).
func parseRegex(goPattern, orig string) (*syntax.Regexp, error) {
	re, err := syntax.Parse(goPattern, syntax.Perl)
	if err != nil {
		msg := err.Error()
		switch {
		case strings.Contains(goPattern, "(?=") || strings.Contains(goPattern, "(?!") ||
			strings.Contains(goPattern, "(?<=") || strings.Contains(goPattern, "(?<!"):
			msg = "lookaround assertions ((?=...), (?!...), (?<=...), (?<!...)) cannot be expressed in a grammar (" + msg + ")"
		case hasBackref(goPattern):
			msg = "backreferences (\\1, \\k<name>) cannot be expressed in a grammar (" + msg + ")"
		}
		return nil, &RegexError{Pattern: orig, Msg: msg}
	}
	return re, nil
}

func hasBackref(p string) bool {
	for i := 0; i+1 < len(p); i++ {
		if p[i] == '\\' {
			if c := p[i+1]; c >= '1' && c <= '9' || c == 'k' {
				return true
			}
			i++
		}
	}
	return false
}

// regexConv writes the GBNF for one parsed regex. In json mode the grammar
// describes the content of a JSON string whose decoded value the regex matches:
// each code point is written in canonical JSON form (see jsonEscapeRune), with
// control characters also accepted in their other escaped spelling.
type regexConv struct {
	b       *builder
	pattern string
	json    bool
	size    int // estimated expanded size, bounded by maxRegexSize
}

// maxRegexSize bounds the expansion of nested repetitions (elements).
const maxRegexSize = 1 << 17

func (rc *regexConv) errorf(format string, args ...any) error {
	return &RegexError{Pattern: rc.pattern, Msg: fmt.Sprintf(format, args...)}
}

// top converts a whole pattern. With full set, the pattern must match the whole
// text (FromRegex); otherwise (JSON Schema "pattern") it may match anywhere, so
// every top-level alternative not anchored at an end gets any text on that side.
func (rc *regexConv) top(re *syntax.Regexp, full bool) (string, error) {
	for re.Op == syntax.OpCapture {
		re = re.Sub[0]
	}
	branches := []*syntax.Regexp{re}
	if re.Op == syntax.OpAlternate {
		branches = re.Sub
	}
	var alts []string
	for _, br := range branches {
		parts := []*syntax.Regexp{br}
		if br.Op == syntax.OpConcat {
			parts = br.Sub
		}
		begin, end := full, full
		for len(parts) > 0 && isBegin(parts[0]) {
			begin, parts = true, parts[1:]
		}
		for len(parts) > 0 && isEnd(parts[len(parts)-1]) {
			end, parts = true, parts[:len(parts)-1]
		}
		var xs []string
		if !begin {
			xs = append(xs, rc.anyText())
		}
		for _, p := range parts {
			x, _, err := rc.conv(p, 1)
			if err != nil {
				return "", err
			}
			xs = append(xs, x)
		}
		if !end {
			xs = append(xs, rc.anyText())
		}
		s := seq(xs...)
		if s == "" {
			s = `""`
		}
		alts = append(alts, s)
	}
	return alt(alts), nil
}

func isBegin(re *syntax.Regexp) bool {
	return re.Op == syntax.OpBeginText || re.Op == syntax.OpBeginLine
}

func isEnd(re *syntax.Regexp) bool {
	return re.Op == syntax.OpEndText || re.Op == syntax.OpEndLine
}

// anyText is any run of characters (JSON string content in json mode).
func (rc *regexConv) anyText() string {
	if rc.json {
		return primRef(rc.b, "char") + "*"
	}
	return gbnf.FormatClass(subRanges([]rng{{Lo: 0, Hi: unicode.MaxRune}}, surrogates), false) + "*"
}

// conv converts one node; mult is the product of the repetition counts around
// it, used to bound the expansion. It returns an expression safe to use as one
// item of a sequence.
func (rc *regexConv) conv(re *syntax.Regexp, mult int) (string, int, error) {
	switch re.Op {
	case syntax.OpNoMatch:
		return noMatch, 1, nil
	case syntax.OpEmptyMatch:
		return `""`, 1, nil
	case syntax.OpLiteral:
		var xs []string
		if re.Flags&syntax.FoldCase != 0 {
			for _, r := range re.Rune {
				xs = append(xs, rc.classExpr(foldRanges(r)))
			}
		} else if rc.json {
			var sb strings.Builder
			for _, r := range re.Rune {
				if isJSONSpecial(r) {
					if sb.Len() > 0 {
						xs = append(xs, gbnf.QuoteLiteral(sb.String()))
						sb.Reset()
					}
					xs = append(xs, group(jsonRuneExpr(r)))
					continue
				}
				sb.WriteRune(r)
			}
			if sb.Len() > 0 {
				xs = append(xs, gbnf.QuoteLiteral(sb.String()))
			}
		} else {
			xs = append(xs, gbnf.QuoteLiteral(string(re.Rune)))
		}
		if err := rc.grow(len(re.Rune), mult); err != nil {
			return "", 0, err
		}
		return seqGroup(xs), len(re.Rune), nil
	case syntax.OpCharClass:
		var rs []rng
		for i := 0; i+1 < len(re.Rune); i += 2 {
			rs = append(rs, rng{Lo: re.Rune[i], Hi: re.Rune[i+1]})
		}
		if err := rc.grow(1, mult); err != nil {
			return "", 0, err
		}
		return rc.classExpr(gbnf.NormalizeRanges(rs)), 1, nil
	case syntax.OpAnyCharNotNL:
		return rc.classExpr([]rng{{Lo: 0, Hi: '\n' - 1}, {Lo: '\n' + 1, Hi: unicode.MaxRune}}), 1, nil
	case syntax.OpAnyChar:
		return rc.classExpr([]rng{{Lo: 0, Hi: unicode.MaxRune}}), 1, nil
	case syntax.OpBeginLine, syntax.OpBeginText:
		return "", 0, rc.errorf("the start anchor (^ or \\A) is supported only at the start of the pattern")
	case syntax.OpEndLine, syntax.OpEndText:
		return "", 0, rc.errorf("the end anchor ($ or \\z) is supported only at the end of the pattern")
	case syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return "", 0, rc.errorf("word boundaries (\\b, \\B) cannot be expressed in a grammar")
	case syntax.OpCapture:
		return rc.conv(re.Sub[0], mult)
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest:
		x, n, err := rc.conv(re.Sub[0], mult)
		if err != nil {
			return "", 0, err
		}
		switch re.Op {
		case syntax.OpStar:
			return repeat(x, 0, -1), n, nil
		case syntax.OpPlus:
			return repeat(x, 1, -1), n, nil
		}
		return repeat(x, 0, 1), n, nil
	case syntax.OpRepeat:
		hi := re.Max
		count := max(re.Min, hi)
		if hi < 0 {
			count = re.Min + 1
		}
		if count > 0 && mult > maxRegexSize/count {
			return "", 0, rc.errorf("repetitions nest too deeply: the grammar would be too large")
		}
		x, n, err := rc.conv(re.Sub[0], mult*max(count, 1))
		if err != nil {
			return "", 0, err
		}
		if x == `""` {
			return x, 0, nil
		}
		return repeat(x, re.Min, hi), n * count, nil
	case syntax.OpConcat:
		var xs []string
		total := 0
		for _, s := range re.Sub {
			x, n, err := rc.conv(s, mult)
			if err != nil {
				return "", 0, err
			}
			if x != `""` {
				xs = append(xs, x)
			}
			total += n
		}
		if len(xs) == 0 {
			return `""`, 0, nil
		}
		return seqGroup(xs), total, nil
	case syntax.OpAlternate:
		var xs []string
		total := 0
		for _, s := range re.Sub {
			x, n, err := rc.conv(s, mult)
			if err != nil {
				return "", 0, err
			}
			xs = append(xs, x)
			total += n
		}
		return "(" + alt(xs) + ")", total, nil
	}
	return "", 0, rc.errorf("unsupported regex operator %v", re.Op)
}

func (rc *regexConv) grow(n, mult int) error {
	rc.size += n * mult
	if rc.size > maxRegexSize {
		return rc.errorf("the grammar would be too large (nested or long repetitions)")
	}
	return nil
}

// seqGroup joins a sequence and parenthesizes it when it has several items.
func seqGroup(xs []string) string {
	if len(xs) == 1 {
		return xs[0]
	}
	return "(" + strings.Join(xs, " ") + ")"
}

// noMatch is an expression that matches nothing.
const noMatch = `[^\x00-\U0010FFFF]`

// surrogates are not code points a grammar can match.
var surrogates = []rng{{Lo: 0xD800, Hi: 0xDFFF}}

// classExpr writes a set of code points: in raw mode one class; in json mode the
// unescaped part as a class plus each character that JSON must escape, escaped.
func (rc *regexConv) classExpr(rs []rng) string {
	key := append(rc.b.classKey[:0], 0)
	if rc.json {
		key[0] = 1
	}
	for _, r := range rs {
		key = binary.LittleEndian.AppendUint32(key, uint32(r.Lo))
		key = binary.LittleEndian.AppendUint32(key, uint32(r.Hi))
	}
	rc.b.classKey = key
	if x, ok := rc.b.classes[string(key)]; ok { // a lookup that copies nothing
		return x
	}
	x := rc.classText(rs)
	if len(x) > maxInlineClass && strings.HasPrefix(x, "(") && strings.HasSuffix(x, ")") {
		// An alternation (a class plus JSON escapes): one rule, referenced wherever
		// the set occurs. Automata repeat a few sets over thousands of edges, and
		// written inline they were most of such a grammar's text (Handwritten
		// allany22: 3.0 of its 4.2 MB), each parsed into a rule of its own.
		x = rc.b.rule("c", x[1:len(x)-1])
	}
	rc.b.classes[string(key)] = x
	return x
}

// maxInlineClass is the longest class expression classExpr writes inline.
const maxInlineClass = 32

func (rc *regexConv) classText(rs []rng) string {
	rs = subRanges(rs, surrogates)
	if len(rs) == 0 {
		return noMatch
	}
	if !rc.json {
		return gbnf.FormatClass(rs, false)
	}
	plain := subRanges(rs, jsonSpecialRanges)
	var alts []string
	if len(plain) > 0 {
		alts = append(alts, gbnf.FormatClass(plain, false))
	}
	special := interRanges(rs, jsonSpecialRanges)
	switch n := countRunes(special); {
	case n > 0 && len(subRanges(jsonSpecialRanges, special)) == 0:
		alts = append(alts, primRef(rc.b, "esc"))
	case n > 2:
		alts = append(alts, jsonEscapesExpr(special))
	default:
		for _, r := range special {
			for c := r.Lo; c <= r.Hi; c++ {
				alts = append(alts, jsonRuneExpr(c))
			}
		}
	}
	if len(alts) == 1 {
		return group(alts[0])
	}
	return "(" + alt(alts) + ")"
}

// countRunes is the number of code points in rs.
func countRunes(rs []rng) int {
	n := 0
	for _, r := range rs {
		n += int(r.Hi-r.Lo) + 1
	}
	return n
}

// jsonEscapesExpr is the GBNF for the escaped spellings of the JSON-special code
// points special (jsonRuneExpr of each), factored behind the one backslash they
// all start with: `"\" (["\bnt] | "u00" ("0" [0-8bB] | "1" [0-9a-fA-F]))`
// matches the same strings as listing the spellings one by one. The engine then
// meets one position after the backslash instead of one per spelling (a pattern's
// "." allows 32 of the 34 special code points).
func jsonEscapesExpr(special []rng) string {
	var short []gbnf.Range
	var digits [2][]gbnf.Range // last hex digit of \u000X and \u001X, both cases
	for _, r := range special {
		for c := r.Lo; c <= r.Hi; c++ {
			switch c {
			case '"', '\\':
				short = append(short, gbnf.Range{Lo: c, Hi: c})
			case '\b', '\f', '\n', '\r', '\t':
				e := rune(jsonEscapeRune(c)[1])
				short = append(short, gbnf.Range{Lo: e, Hi: e})
			}
			if c < 0x20 {
				d := rune("0123456789abcdef"[c&0xF])
				digits[c>>4] = append(digits[c>>4], gbnf.Range{Lo: d, Hi: d})
				if d >= 'a' {
					digits[c>>4] = append(digits[c>>4], gbnf.Range{Lo: d - 'a' + 'A', Hi: d - 'a' + 'A'})
				}
			}
		}
	}
	var alts, us []string
	if len(short) > 0 {
		alts = append(alts, gbnf.FormatClass(gbnf.NormalizeRanges(short), false))
	}
	for hi, ds := range digits {
		if len(ds) > 0 {
			us = append(us, gbnf.QuoteLiteral(strconv.Itoa(hi))+" "+gbnf.FormatClass(gbnf.NormalizeRanges(ds), false))
		}
	}
	if len(us) > 0 {
		alts = append(alts, gbnf.QuoteLiteral("u00")+" "+group(alt(us)))
	}
	return gbnf.QuoteLiteral(`\`) + " " + group(alt(alts))
}

// jsonSpecialRanges are the code points JSON strings must escape.
var jsonSpecialRanges = []rng{{Lo: 0, Hi: 0x1F}, {Lo: '"', Hi: '"'}, {Lo: '\\', Hi: '\\'}}

func isJSONSpecial(r rune) bool { return r < 0x20 || r == '"' || r == '\\' }

// jsonRuneExpr is the GBNF for code point r inside a JSON string: its canonical
// spelling, and for control characters also the other escaped one.
func jsonRuneExpr(r rune) string {
	if !isJSONSpecial(r) {
		return gbnf.QuoteLiteral(string(r))
	}
	hexLo := fmt.Sprintf("%04x", r)
	u := gbnf.QuoteLiteral(`\u`+hexLo[:3]) + " " + hexClass(hexLo[3])
	switch r {
	case '"':
		return gbnf.QuoteLiteral(`\"`)
	case '\\':
		return gbnf.QuoteLiteral(`\\`)
	case '\b', '\f', '\n', '\r', '\t':
		return gbnf.QuoteLiteral(jsonEscapeRune(r)) + " | " + u
	}
	return u
}

func hexClass(c byte) string {
	if c >= 'a' && c <= 'f' {
		return "[" + string(c) + string(c-'a'+'A') + "]"
	}
	return gbnf.QuoteLiteral(string(c))
}

// foldRanges is the case-folding orbit of r.
func foldRanges(r rune) []rng {
	rs := []rng{{Lo: r, Hi: r}}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		rs = append(rs, rng{Lo: f, Hi: f})
	}
	return gbnf.NormalizeRanges(rs)
}
