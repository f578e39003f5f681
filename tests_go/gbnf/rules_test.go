package gbnf_test

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/gbnf"
)

// splitRules reads a text with one rule per line ("name ::= body") as rules;
// ok is false when a line is not of that form.
func splitRules(src string) (rules []gbnf.RuleText, ok bool) {
	for _, line := range strings.Split(strings.TrimSuffix(src, "\n"), "\n") {
		name, body, found := strings.Cut(line, " ::= ")
		if !found {
			return nil, false
		}
		rules = append(rules, gbnf.RuleText{Name: name, Body: body})
	}
	return rules, true
}

// rulesValid reports whether rules meet ParseRules' conditions (a rule on one
// line each: a GBNF name, a body with no line break, not blank and not ending
// in "|"). It reads the body as Parse does only for that: comments and blanks.
func rulesValid(rules []gbnf.RuleText) bool {
	for _, r := range rules {
		if r.Name == "" || strings.IndexFunc(r.Name, func(c rune) bool {
			return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-')
		}) >= 0 || strings.ContainsAny(r.Body, "\r\n") {
			return false
		}
		// strip a trailing comment only where '#' starts one outside literals
		// and classes: too fiddly here, so a body with '#' counts as valid only
		// when what precedes the first '#' is not blank and does not end in '|'
		head := r.Body
		if i := strings.IndexByte(head, '#'); i >= 0 {
			head = head[:i]
		}
		head = strings.TrimRight(head, " \t")
		if strings.TrimLeft(head, " \t") == "" || strings.HasSuffix(head, "|") {
			return false
		}
	}
	return true
}

// leftOpen reports whether err is ParseRules' error for a literal, class,
// token or parenthesis that a body leaves open: in the text, Parse may read on
// into the next lines (a literal may hold a line break), so there only the
// error's kind is certain.
func leftOpen(err error) bool {
	var e *gbnf.Error
	return errors.As(err, &e) && e.Code == gbnf.ErrSyntax &&
		(strings.HasPrefix(e.Msg, "unterminated ") || strings.HasPrefix(e.Msg, `expected ")" to close`))
}

// sameAsParse checks that ParseRules(rules) gives what Parse(Text(rules)) gives:
// an equal grammar, or an equal error (see leftOpen for the exception).
func sameAsParse(t *testing.T, rules []gbnf.RuleText, opts ...gbnf.Option) {
	t.Helper()
	text := gbnf.Text(rules)
	want, wantErr := gbnf.Parse(text, opts...)
	got, gotErr := gbnf.ParseRules(rules, opts...)
	if wantErr == nil && gotErr == nil {
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("ParseRules and Parse differ for %q", text)
		}
		return
	}
	if reflect.DeepEqual(wantErr, gotErr) {
		return
	}
	require.True(t, leftOpen(gotErr), "%q: Parse gives %v, ParseRules %v", text, wantErr, gotErr)
	var e *gbnf.Error
	require.ErrorAs(t, gotErr, &e)
	require.LessOrEqual(t, e.Pos.Line, len(rules)+1, "%q: %v", text, e) // a "(" left open: the next line
}

func TestParseRulesIsParse(t *testing.T) {
	grammars := []string{
		"root ::= \"a\"\n",
		"root ::= x y\nx ::= [a-z]+ | \"é\"{2,5} (y | z)*\ny ::= \"y\" # a comment | not an alternative\nz ::= [^\\n] .\n",
		"root ::= <[1000]> !<[1001]> <|eot_id|>\n",
		"root ::= \"\\x41\\u00e9\\U0001F600\\n\\t\\\\\\\"\" [\\]\\[\\-\\^]\n",
		"root ::= ((( \"a\"{0,9} ){0,9}){0,9})\n",
		"root ::= \"a\"{,3} \"b\"{2,} \"c\"{1} d{3,7000}\nd ::= [0-9]\n",
		"root ::= expr\nexpr ::= term | expr \"+\" term\nterm ::= [0-9]\n",
		"root ::= a\na ::= e a \"x\" | \"y\"\ne ::= \"e\" | \"\"\n",
		"a ::= \"a\"\nroot ::= a a\n",
		"root ::=   \"spaces before\"   \n",
		// errors, each at its line and column in the text
		"root ::= undefined\n",
		"root ::= a\na ::= \"x\"\na ::= \"y\"\n",
		"root ::= (\"a\" | \"b\"\n",
		"root ::= \"a\")\n",
		"root ::= \"\\q\"\n",
		"root ::= [b-a]\n",
		"root ::= \"a\" ::= \"b\"\n",
		"root ::= x{3000}\nx ::= \"x\"\n",
		"root ::= root \"a\" | \"b\"\n",
		"root ::= [^\\x00-\\U0010FFFF]\n",
		"other ::= \"a\"\n",
		"root ::= * \"a\"\n",
		"root ::= \"\"*\n",
		"root ::= \"a\" ?\nx ::= \"a\" \xff\n",
		"root ::= \"ok\"\nx\xfe ::= \"a\"\n",
	}
	for _, src := range grammars {
		rules, ok := splitRules(src)
		require.True(t, ok, src)
		require.Equal(t, src, gbnf.Text(rules), "Text writes one rule per line")
		if !rulesValid(rules) {
			_, err := gbnf.ParseRules(rules)
			assert.Error(t, err, "%q breaks ParseRules' conditions", src)
			continue
		}
		sameAsParse(t, rules)
	}
	// options apply as they do to Parse
	rules, _ := splitRules("start ::= x{50}\nx ::= \"x\"\n")
	sameAsParse(t, rules, gbnf.WithRoot("start"), gbnf.WithMaxRepeat(10))
	sameAsParse(t, rules, gbnf.WithRoot("start"))
	dead, _ := splitRules("root ::= \"a\" | b\nb ::= b \"x\"\n")
	sameAsParse(t, dead)
	sameAsParse(t, dead, gbnf.AllowDeadEnds())
}

// Rules that would run on into the next line in a text are refused.
func TestParseRulesRefusesRulesOffTheirLine(t *testing.T) {
	for _, rules := range [][]gbnf.RuleText{
		nil,
		{{Name: "root", Body: ""}},
		{{Name: "root", Body: "   # only a comment"}},
		{{Name: "root", Body: `"a" |`}},
		{{Name: "root", Body: `"a" | # then a comment`}},
		{{Name: "root", Body: "\"a\"\nb ::= \"b\""}},
		{{Name: "root", Body: "\"a\"\r"}},
		{{Name: "", Body: `"a"`}},
		{{Name: "ro ot", Body: `"a"`}},
		{{Name: "root", Body: `"a"`}, {Name: "b_c", Body: `"b"`}},
	} {
		_, err := gbnf.ParseRules(rules)
		var e *gbnf.Error
		require.ErrorAs(t, err, &e, "%q", rules)
		assert.NotEmpty(t, e.Msg)
	}
}

// TestParseRulesErrorPastTheLineBreak: a body that breaks off inside
// parentheses, where a line break is only space, is read past it; the error then
// names what the text holds there, the next rule's name or the end of the text,
// as Parse's does.
func TestParseRulesErrorPastTheLineBreak(t *testing.T) {
	for _, c := range []struct {
		rules []gbnf.RuleText
		want  string
	}{
		{[]gbnf.RuleText{{Name: "root", Body: "(x{0#1"}, {Name: "x", Body: `"x"`}}, `2:1: expected "," or "}" after the repetition count, found "x"`},
		{[]gbnf.RuleText{{Name: "root", Body: "x"}, {Name: "x", Body: `("x"{2#1`}}, `3:1: expected "," or "}" after the repetition count, found end of input`},
		// Parse reads the next rule's name as the count (a name may be
		// digits), then fails at its "::=" (found by FuzzParseRules)
		{[]gbnf.RuleText{{Name: "0", Body: `(""{`}, {Name: "0", Body: "0"}}, `2:3: expected "," or "}" after the repetition count, found "::="`},
		// a group left open reads on to the end of the text
		{[]gbnf.RuleText{{Name: "root", Body: `("a"`}, {Name: "b", Body: `"b"`}}, `2:3: expected ")" to close the "(" at 1:10, found "::="`},
		// a literal that the next line closes: Parse takes the text as one
		// rule; ParseRules refuses the body it was given
		{[]gbnf.RuleText{{Name: "root", Body: `"a`}, {Name: "b", Body: `x"`}}, `1:10: unterminated string literal: no closing '"'`},
	} {
		_, err := gbnf.ParseRules(c.rules)
		require.Error(t, err)
		assert.Equal(t, c.want, err.Error())
		sameAsParse(t, c.rules)
	}
}

// FuzzParseRules: for rules on a line each, ParseRules is Parse of their text;
// for others it refuses them. It never panics.
func FuzzParseRules(f *testing.F) {
	for _, s := range []string{
		"root ::= \"a\"",
		"root ::= x y\nx ::= [a-z]+ | \"é\"{2,5} (y | z)*\ny ::= \"y\"\nz ::= [^\\n] .",
		"root ::= a\na ::= \"x\"\na ::= \"y\"",
		"root ::= (\"a\" | \"b\"\nb ::= \"c\")",
		"root ::= \"a\" |\nb ::= \"b\"",
		"root ::= <[5]> x{2,3000}\nx ::= \"x\" # c",
		"root ::= root \"a\" | \"b\"",
		// a count broken off by a comment inside parentheses: past its line
		// break, Parse finds the next rule's name, or the end of the text
		"root ::= (x{0#1\nx ::= \"x\"",
		"root ::= x\nx ::= (\"x\"{2#1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		rules, ok := splitRules(src)
		if !ok {
			return
		}
		opts := []gbnf.Option{gbnf.WithMaxElements(1 << 14), gbnf.WithMaxRepeat(100)}
		if !rulesValid(rules) {
			if _, err := gbnf.ParseRules(rules, opts...); err == nil {
				// rulesValid is conservative about '#': a body whose '#' sits in
				// a literal may be fine; then it must equal Parse
				sameAsParse(t, rules, opts...)
			}
			return
		}
		sameAsParse(t, rules, opts...)
	})
}

// ClassEmpty against an independent merge of the ranges, on random classes
// (sorted and not, with empty ranges, around the surrogates and the ends).
func TestClassEmpty(t *testing.T) {
	edges := []rune{0, 1, 0x41, 0xD7FE, 0xD7FF, 0xD800, 0xDFFF, 0xE000, 0xE001, 0x10FFFE, 0x10FFFF}
	pick := func(r *rand.Rand) rune {
		if r.IntN(3) == 0 {
			return r.Int32N(0x110000)
		}
		return edges[r.IntN(len(edges))]
	}
	covers := func(rs []gbnf.Range, lo, hi rune) bool {
		var cp []gbnf.Range
		for _, x := range rs {
			if x.Lo <= x.Hi {
				cp = append(cp, x)
			}
		}
		slices.SortFunc(cp, func(a, b gbnf.Range) int { return int(a.Lo - b.Lo) })
		next := lo // the first point not yet covered
		for _, x := range cp {
			if x.Lo > next {
				break
			}
			next = max(next, x.Hi+1)
		}
		return next > hi
	}
	r := rand.New(rand.NewPCG(1, 2))
	full, empty := 0, 0
	for range 20000 {
		n := r.IntN(5)
		rs := make([]gbnf.Range, n)
		for i := range rs {
			a, b := pick(r), pick(r)
			if r.IntN(6) > 0 && a > b {
				a, b = b, a
			}
			rs[i] = gbnf.Range{Lo: a, Hi: b}
		}
		if r.IntN(2) == 0 {
			slices.SortFunc(rs, func(a, b gbnf.Range) int { return int(a.Lo - b.Lo) })
		}
		in := slices.Clone(rs)
		negEmpty := covers(rs, 0, 0xD7FF) && covers(rs, 0xE000, 0x10FFFF)
		if negEmpty {
			full++
		}
		require.Equal(t, negEmpty, gbnf.ClassEmpty(rs, true), "negated %v", rs)
		posEmpty := !slices.ContainsFunc(rs, func(x gbnf.Range) bool {
			return x.Lo <= x.Hi && (x.Lo < 0xD800 || x.Hi > 0xDFFF)
		})
		if posEmpty {
			empty++
		}
		require.Equal(t, posEmpty, gbnf.ClassEmpty(rs, false), "%v", rs)
		require.Equal(t, in, rs, "ClassEmpty changed its argument")
	}
	// both answers occur often enough for the comparison to mean something
	assert.Greater(t, full, 200)
	assert.Greater(t, empty, 200)
}
