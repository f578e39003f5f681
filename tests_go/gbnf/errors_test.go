package gbnf_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/gbnf"
)

// Every kind of error, where it is reported (line:col, 1-based, columns in
// bytes) and what it says.
func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		code gbnf.ErrorCode
		want string // the whole Error() text
	}{
		// The grammar as a whole.
		{"empty", "", gbnf.ErrEmpty, `1:1: empty grammar: expected at least one rule such as "root ::= ..."`},
		{"only comments", "# nothing\n\n", gbnf.ErrEmpty, `1:1: empty grammar: expected at least one rule such as "root ::= ..."`},
		{"invalid UTF-8", "root ::= \"\xff\"", gbnf.ErrUTF8, `1:11: invalid UTF-8 byte 0xFF: grammar text must be UTF-8`},

		// Rules.
		{"missing ::=", "root ::= \"a\"\nvalue \"b\"", gbnf.ErrSyntax, `2:7: expected "::=" after rule name "value", found '"'`},
		{"no rule name", `::= "a"`, gbnf.ErrSyntax, `1:1: expected a rule name, found "::="`},
		{"alternative on a new line", "root ::= \"a\"\n  | \"b\"", gbnf.ErrSyntax,
			`2:3: expected a rule name, found "|" (a rule continues onto the next line only inside parentheses or after a trailing "|")`},
		{"trailing bar swallows the next rule", "root ::= \"a\" |\nb ::= \"b\"", gbnf.ErrSyntax,
			`2:3: unexpected "::=" inside rule "root": a new rule must start on its own line (a line ending in "|" continues the rule above)`},
		{"stray close paren", `root ::= "a" )`, gbnf.ErrSyntax, `1:14: unexpected ")" in rule "root": no "(" to close`},
		{"stray character", `root ::= "a" @`, gbnf.ErrSyntax, `1:14: unexpected "@" in rule "root": expected an item, "|" or the end of the line`},
		{"unclosed group", `root ::= ("a" | "b"`, gbnf.ErrSyntax, `1:20: expected ")" to close the "(" at 1:10, found end of input`},
		{"rule inside a group", "root ::= (\"a\"\n b ::= \"x\")", gbnf.ErrSyntax, `2:4: expected ")" to close the "(" at 1:10, found "::="`},
		{"duplicate rule", "root ::= a\na ::= \"x\"\na ::= \"y\"", gbnf.ErrDuplicateRule, `3:1: rule "a" is defined twice (first at 2:1)`},

		// Literals, classes and escapes.
		{"unterminated literal", `root ::= "abc`, gbnf.ErrSyntax, `1:10: unterminated string literal: no closing '"'`},
		{"unterminated class", `root ::= [abc`, gbnf.ErrSyntax, `1:10: unterminated character class: no closing "]"`},
		{"empty class", `root ::= []`, gbnf.ErrSyntax, `1:10: empty character class [] matches nothing`},
		{"empty negated class", `root ::= [^]`, gbnf.ErrSyntax, `1:10: empty character class [^] matches nothing`},
		{"reversed range", `root ::= [z-a]`, gbnf.ErrSyntax, `1:12: invalid range 'z'-'a' in character class: the end is before the start`},
		{"unknown escape", `root ::= "\q"`, gbnf.ErrEscape,
			`1:11: unknown escape "\q": expected one of \n \r \t \\ \" \[ \] \- \^ \xHH \uHHHH \UHHHHHHHH`},
		{"short hex escape", `root ::= "\x4"`, gbnf.ErrEscape, `1:11: escape \x needs 2 hex digits, found '"'`},
		{"short unicode escape in a class", `root ::= [\u12]`, gbnf.ErrEscape, `1:11: escape \u needs 4 hex digits, found "]"`},
		{"escape beyond unicode", `root ::= "\U00110000"`, gbnf.ErrEscape, `1:11: escape \U00110000 is beyond the last code point U+10FFFF`},
		{"escape beyond int32", `root ::= "\U80000000"`, gbnf.ErrEscape, `1:11: escape \U80000000 is beyond the last code point U+10FFFF`},
		{"escape at end of input", `root ::= "a\`, gbnf.ErrEscape, `1:12: unfinished escape sequence at end of input`},

		// Repetitions.
		{"nothing to repeat", `root ::= * "a"`, gbnf.ErrSyntax, `1:10: "*" must follow an item to repeat`},
		{"nothing to repeat after a bar", `root ::= "a" | +`, gbnf.ErrSyntax, `1:16: "+" must follow an item to repeat`},
		{"repeating an empty literal", `root ::= ""*`, gbnf.ErrSyntax, `1:12: "*" must follow an item to repeat, not an empty literal`},
		{"repeating an empty group", `root ::= ()?`, gbnf.ErrSyntax, `1:12: nothing to repeat: the item before "?" is empty`},
		{"repeating a group of empty literals", `root ::= ("" "")?`, gbnf.ErrSyntax, `1:17: nothing to repeat: the item before "?" is empty`},
		{"no count", `root ::= "a"{}`, gbnf.ErrSyntax, `1:14: expected a repetition count in "{}"`},
		{"no counts", `root ::= "a"{,}`, gbnf.ErrSyntax, `1:15: expected a minimum or maximum repetition count in "{,}"`},
		{"max below min", `root ::= "a"{2,1}`, gbnf.ErrSyntax, `1:13: repetition {2,1}: the maximum is less than the minimum`},
		{"unclosed count", `root ::= "a"{2`, gbnf.ErrSyntax, `1:15: expected "," or "}" after the repetition count, found end of input`},
		{"unclosed bounds", `root ::= "a"{2,3`, gbnf.ErrSyntax, `1:17: expected "}" to close the "{" at 1:13, found end of input`},
		{"count too large", `root ::= "a"{5000}`, gbnf.ErrTooLarge, `1:13: repetition count 5000 exceeds the limit of 2000 (WithMaxRepeat)`},
		{"number too large", `root ::= "a"{99999999999}`, gbnf.ErrTooLarge, `1:14: repetition count 99999999999 is too large`},
		{"nested repetitions", `root ::= (((("a"{0,99}){0,99}){0,99}){0,99})`, gbnf.ErrTooLarge,
			`1:38: nested repetitions unroll to more than 1048576 elements (WithMaxElements): bound them more tightly, or use * and +`},

		// Tokens.
		{"bad token id", `root ::= <[abc]>`, gbnf.ErrSyntax, `1:12: expected a token id in "<[...]>", found "a"`},
		{"unclosed token id", `root ::= <[12>`, gbnf.ErrSyntax, `1:14: expected "]>" after token id 12, found ">"`},
		{"unclosed token name", `root ::= <eot`, gbnf.ErrSyntax, `1:10: unterminated token: expected ">" to close "<" (tokens are written <[N]> or <name>)`},
		{"empty token name", `root ::= <>`, gbnf.ErrSyntax, `1:10: empty token name "<>"`},
		{"negation of a literal", `root ::= !"a"`, gbnf.ErrSyntax,
			`1:11: expected "<" after "!" (a negated token is written !<[N]> or !<name>), found '"'`},

		// References, the root, left recursion.
		{"undefined rule", "root ::= expr\nexpr ::= term (\"+\" term)*\nterm ::= numero", gbnf.ErrUndefinedRule,
			`3:10: undefined rule "numero" (referenced in rule "term")`},
		{"missing root", `start ::= "a"`, gbnf.ErrMissingRoot,
			`1:1: grammar has no root rule "root": define root ::= ..., or name another root rule (WithRoot)`},
		// Dead ends: a reachable element that can never match.
		{"surrogate class", `root ::= [\uD800-\uDFFF]`, gbnf.ErrDeadEnd,
			`1:10: dead end in rule "root": a character that matches nothing ([\U0000D800-\U0000DFFF]: surrogate code points U+D800..U+DFFF are not characters); a matcher reaching it could neither go on nor end`},
		{"class that matches nothing", `root ::= "a" [^\x00-\U0010FFFF]`, gbnf.ErrDeadEnd,
			`1:14: dead end in rule "root": a character that matches nothing ([^\U00000000-\U0010FFFF]); a matcher reaching it could neither go on nor end`},
		{"rules that produce nothing", "root ::= a\na ::= b\nb ::= a", gbnf.ErrDeadEnd,
			`1:10: dead end in rule "root": rule "a" can never match anything (every way through it needs itself or a character that matches nothing); a matcher reaching it could neither go on nor end`},
		{"a rule that never ends", "root ::= \"a\" | b\nb ::= \"x\" b", gbnf.ErrDeadEnd,
			`1:16: dead end in rule "root": rule "b" can never match anything (every way through it needs itself or a character that matches nothing); a matcher reaching it could neither go on nor end`},
		{"surrogate inside a repetition", `root ::= ([\uD800] "x")*`, gbnf.ErrDeadEnd,
			`1:11: dead end in rule "root": a character that matches nothing ([\U0000D800]: surrogate code points U+D800..U+DFFF are not characters); a matcher reaching it could neither go on nor end`},
		{"surrogate in a literal", `root ::= "x\uDC00"`, gbnf.ErrDeadEnd,
			`1:10: dead end in rule "root": a character that matches nothing ([\U0000DC00]: surrogate code points U+D800..U+DFFF are not characters); a matcher reaching it could neither go on nor end`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := gbnf.Parse(tt.src)
			require.Error(t, err)
			assert.Nil(t, g)
			var e *gbnf.Error
			require.True(t, errors.As(err, &e), "error is a *gbnf.Error: %T", err)
			assert.Equal(t, tt.want, err.Error())
			assert.Equal(t, tt.code, e.Code, "code %v", e.Code)
		})
	}
}

// A root chosen with WithRoot is named in the error when it is missing.
func TestParseMissingChosenRoot(t *testing.T) {
	_, err := gbnf.Parse(`root ::= "a"`, gbnf.WithRoot("start"))
	require.EqualError(t, err, `1:1: grammar has no root rule "start" (asked for with WithRoot)`)
}

// The limits are options.
func TestParseLimits(t *testing.T) {
	_, err := gbnf.Parse(`root ::= "a"{5000}`, gbnf.WithMaxRepeat(5000))
	require.NoError(t, err)

	_, err = gbnf.Parse(`root ::= "a"{11}`, gbnf.WithMaxRepeat(10))
	require.EqualError(t, err, `1:13: repetition count 11 exceeds the limit of 10 (WithMaxRepeat)`)

	_, err = gbnf.Parse(`root ::= "abcdef" "ghij"`, gbnf.WithMaxElements(8))
	require.EqualError(t, err, `1:19: grammar expands to more than 8 elements (WithMaxElements)`)

	_, err = gbnf.Parse(`root ::= [a-z]{5,8}`, gbnf.WithMaxElements(8))
	require.EqualError(t, err, `1:15: grammar expands to more than 8 elements (WithMaxElements)`)

	_, err = gbnf.Parse(`root ::= ("a"{0,10}){0,10}`, gbnf.WithMaxElements(99))
	require.EqualError(t, err,
		`1:21: nested repetitions unroll to more than 99 elements (WithMaxElements): bound them more tightly, or use * and +`)
}

// Grammars built to explode end quickly with an error, using little memory.
func TestParsePathologicalIsBounded(t *testing.T) {
	tests := []struct {
		name string
		src  string
	}{
		{"six nested {0,99}", `root ::= (((((([^x]*){0,99}){0,99}){0,99}){0,99}){0,99}){0,99}`},
		{"long literals repeated", manyRules(200, `"`+strings.Repeat("abcdefgh", 1000)+`"{2000}`)},
		{"deep parentheses", "root ::= " + strings.Repeat("(", 5000) + `"a"` + strings.Repeat(")", 5000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, err := gbnf.Parse(tt.src)
			elapsed := time.Since(start)
			var e *gbnf.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, gbnf.ErrTooLarge, e.Code, "%v", err)
			assert.Less(t, elapsed, 2*time.Second)
		})
	}
}

// TestCountersKeepParsingCheap: large counts are counters (gbnf.Repeat), not
// unrolled: wide optional chains that unrolled past the limits parse at once into
// a few rules, and an optional part of a million costs one element.
func TestCountersKeepParsingCheap(t *testing.T) {
	start := time.Now()
	g, err := gbnf.Parse(manyRules(200, `"a"{0,2000} "b"{0,2000} "c"{0,2000}`))
	require.NoError(t, err)
	assert.LessOrEqual(t, len(g.Rules), 200*4)
	g, err = gbnf.Parse(`root ::= "a"{0,2000000} [a-z]{3,1000000} ("x" [0-9]){70,}`)
	require.NoError(t, err)
	checkInvariants(t, g)
	checkRoundTrip(t, g)
	reps := 0
	for _, r := range g.Rules {
		for _, alt := range r.Alts {
			for _, e := range alt {
				if e.Kind == gbnf.Repeat {
					reps++
				}
			}
		}
	}
	assert.Equal(t, 3, reps)
	assert.Less(t, len(g.Rules), 10)
	assert.Less(t, time.Since(start), time.Second)

	// A counted item that can be empty is unrolled (as S{0,n}).
	g, err = gbnf.Parse(`root ::= ("a"?){0,100}`)
	require.NoError(t, err)
	checkInvariants(t, g)
	for _, r := range g.Rules {
		for _, alt := range r.Alts {
			for _, e := range alt {
				assert.NotEqual(t, gbnf.Repeat, e.Kind)
			}
		}
	}
}

// manyRules is a grammar of n rules root, r1, r2, ... with the same body.
func manyRules(n int, body string) string {
	var b strings.Builder
	b.WriteString("root ::= " + body + "\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "r%d ::= %s\n", i, body)
	}
	return b.String()
}

// TestNoDeadEndsAccepted: classes that merely include surrogates among real
// characters, and unreachable rules, are not dead ends.
func TestNoDeadEndsAccepted(t *testing.T) {
	for _, src := range []string{
		`root ::= [a\uD800]`,
		`root ::= [\u0000-\U0010FFFF]`,
		`root ::= [^"\\]* | .`,
		"root ::= \"a\"\nunused ::= [\\uD800]",
		"root ::= x\nx ::= \"a\" x | \"\"",
	} {
		_, err := gbnf.Parse(src)
		assert.NoError(t, err, "%q", src)
	}
}

// Dead ends are found, and reported the same way, in a grammar of a handful of rules
// and in one of thousands (where productivity is computed beside the walk of the
// reachable rules): at the end of a long chain, behind an unproductive cycle, and
// not when the dead rule is out of the root's reach.
func TestDeadEndsInLargeGrammars(t *testing.T) {
	chain := func(n int, last string, extra string) string {
		var b strings.Builder
		b.WriteString("root ::= \"a\" r1\n")
		for i := 1; i < n; i++ {
			fmt.Fprintf(&b, "r%d ::= \"a\" r%d | \"b\"\n", i, i+1)
		}
		fmt.Fprintf(&b, "r%d ::= %s\n", n, last)
		b.WriteString(extra)
		return b.String()
	}
	for _, n := range []int{5, 3000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			_, err := gbnf.Parse(chain(n, `"x" [\uD800-\uDFFF] | "y"`, ""))
			var ge *gbnf.Error
			require.ErrorAs(t, err, &ge)
			assert.Equal(t, gbnf.ErrDeadEnd, ge.Code)
			assert.Equal(t, gbnf.Pos{Line: n + 1, Col: len(fmt.Sprintf("r%d ::= \"x\" ", n)) + 1}, ge.Pos)
			assert.Contains(t, ge.Msg, fmt.Sprintf(`dead end in rule "r%d": a character that matches nothing`, n))

			_, err = gbnf.Parse(chain(n, `"x" a | "y"`, "a ::= b\nb ::= a\n"))
			require.ErrorAs(t, err, &ge)
			assert.Equal(t, gbnf.ErrDeadEnd, ge.Code)
			assert.Equal(t, n+1, ge.Pos.Line)
			assert.Contains(t, ge.Msg, fmt.Sprintf(`dead end in rule "r%d": rule "a" can never match anything`, n))

			g, err := gbnf.Parse(chain(n, `"z"`, "dead ::= \"c\" a\na ::= \"d\" b\nb ::= \"e\" a\n"))
			require.NoError(t, err, "a dead rule the root cannot reach is no dead end")
			assert.Nil(t, gbnf.DeadEnds(g, g.Root))
			d := gbnf.DeadEnds(g, g.Index["dead"])
			require.NotNil(t, d)
			assert.Equal(t, g.Index["dead"], d.Rule)
			assert.Contains(t, d.Why, `rule "a" can never match anything`)
		})
	}
}
