package gbnf_test

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/gbnf"
)

// Each construct of the dialect, and the rules it expands to, written back with
// gbnf.Format: one line per rule, user rules first in the order written, then
// the generated helper rules ("name-N") in the order they were made.
func TestParseConstructs(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string
	}{
		{"literal", `root ::= "abc"`, `root ::= "abc"` + "\n"},
		{"empty literal", `root ::= ""`, `root ::= ""` + "\n"},
		{"literal escapes", `root ::= "\n\r\t\\\"\[\]\x41\u00e9\U0001F600"`, `root ::= "\n\r\t\\\"[]Aé😀"` + "\n"},
		{"utf-8 literal", `root ::= "日本"`, `root ::= "日本"` + "\n"},
		{"class", `root ::= [a-z0-9_]`, `root ::= [0-9_a-z]` + "\n"},
		{"class merges ranges", `root ::= [d-fa-ce]`, `root ::= [a-f]` + "\n"},
		{"negated class", `root ::= [^"\\]`, `root ::= [^\"\\]` + "\n"},
		{"class escapes", `root ::= [\]\[\-\^\x00-\x1F]`, `root ::= [\x00-\x1F\x2D\[\]-\x5E]` + "\n"},
		{"class dash at the ends is a dash", `root ::= [-a-]`, `root ::= [\x2Da]` + "\n"},
		{"caret not first is a caret", `root ::= [a^]`, `root ::= [\x5Ea]` + "\n"},
		{"any", `root ::= .`, `root ::= .` + "\n"},
		{"alternatives", `root ::= "a" | "b" |`, `root ::= "a" | "b" | ""` + "\n"},
		{"empty first alternative", `root ::= | "a"`, `root ::= "" | "a"` + "\n"},
		{"rule reference", "root ::= x-1 y\nx-1 ::= \"x\"\ny ::= \"y\"", "root ::= x-1 y\nx-1 ::= \"x\"\ny ::= \"y\"\n"},
		{"group with one alternative is inlined", `root ::= ("a" [b-c]) "d"`, `root ::= "a" [b-c] "d"` + "\n"},
		{"group with alternatives is a helper rule", `root ::= ("a" | "b") "c"`, "root ::= root-1 \"c\"\nroot-1 ::= \"a\" | \"b\"\n"},
		{"star", `root ::= "a"*`, "root ::= root-1\nroot-1 ::= \"a\" root-1 | \"\"\n"},
		{"plus", `root ::= [a]+`, "root ::= \"a\" root-1\nroot-1 ::= \"a\" root-1 | \"\"\n"},
		{"optional", `root ::= "a"?`, "root ::= root-1\nroot-1 ::= \"a\" | \"\"\n"},
		{"repetition applies to the whole literal", `root ::= "ab"*`, "root ::= root-1\nroot-1 ::= \"ab\" root-1 | \"\"\n"},
		{"exact count", `root ::= "a"{3}`, "root ::= \"aaa\"\n"},
		{"count with spaces", `root ::= "a"{ 2 }`, "root ::= \"aa\"\n"},
		{"min count", `root ::= "a"{2,}`, "root ::= \"aa\" root-1\nroot-1 ::= \"a\" root-1 | \"\"\n"},
		{"min and max count: nested optional helpers", `root ::= "a"{1,3}`,
			"root ::= \"a\" root-2\nroot-1 ::= \"a\" | \"\"\nroot-2 ::= \"a\" root-1 | \"\"\n"},
		{"max only", `root ::= "a"{,2}`, "root ::= root-2\nroot-1 ::= \"a\" | \"\"\nroot-2 ::= \"a\" root-1 | \"\"\n"},
		{"zero count", `root ::= "a"{0} "b"`, "root ::= \"b\"\n"},
		{"long item repeated many times goes through a helper", `root ::= "ab"{3}`, "root ::= root-1 root-1 root-1\nroot-1 ::= \"ab\"\n"},
		{"repeated group", `root ::= ("a" | "b"){2}`, "root ::= root-1 root-1\nroot-1 ::= \"a\" | \"b\"\n"},
		{"stacked quantifiers", `root ::= "a"*?`, "root ::= root-2\nroot-1 ::= \"a\" root-1 | \"\"\nroot-2 ::= root-1 | \"\"\n"},
		{"token id", `root ::= <[1000]> !<[1001]>`, "root ::= <[1000]> !<[1001]>\n"},
		{"named token", `root ::= <|eot_id|> !<think>`, "root ::= <|eot_id|> !<think>\n"},
		{"comments", "# a comment\nroot ::= \"a\" # trailing\n# last", "root ::= \"a\"\n"},
		{"rule over several lines inside parentheses", "root ::= (\n  \"a\"\n  | \"b\"\n)", "root ::= \"a\" | \"b\"\n"},
		// a body that is one group is the rule's own alternatives, not a helper
		{"body that is one optional group", `root ::= ("a" x | "b")?` + "\nx ::= \"x\"", "root ::= \"a\" x | \"b\" | \"\"\nx ::= \"x\"\n"},
		{"body that is one optional sequence", `root ::= ("a" x)?` + "\nx ::= \"x\"", "root ::= \"a\" x | \"\"\nx ::= \"x\"\n"},
		{"rule continues after a trailing bar", "root ::= \"a\" |\n  \"b\"", "root ::= \"a\" | \"b\"\n"},
		{"body may start on the next line", "root ::=\n  \"a\"", "root ::= \"a\"\n"},
		{"CRLF line ends", "root ::= a\r\na ::= \"a\"\r\n", "root ::= a\na ::= \"a\"\n"},
		{"no space needed", `root::="a"("b")`, "root ::= \"ab\"\n"},
		{"helper names avoid written names", "root ::= (\"a\" | \"b\") root-1\nroot-1 ::= \"c\"",
			"root ::= root-2 root-1\nroot-1 ::= \"c\"\nroot-2 ::= \"a\" | \"b\"\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := gbnf.Parse(tt.src)
			require.NoError(t, err)
			checkInvariants(t, g)
			assert.Equal(t, tt.want, gbnf.Format(g))
			checkRoundTrip(t, g)
		})
	}
}

// The shape of the IR for the basic elements.
func TestParseElements(t *testing.T) {
	g, err := gbnf.Parse(`root ::= "aé" [^a-c] . <[7]> !<|eot_id|> r
r ::= "x"`)
	require.NoError(t, err)
	require.Equal(t, 0, g.Root)
	require.Equal(t, map[string]int{"root": 0, "r": 1}, g.Index)
	assert.Equal(t, gbnf.Pos{Line: 1, Col: 1}, g.Rules[0].Pos)
	assert.Equal(t, gbnf.Pos{Line: 2, Col: 1}, g.Rules[1].Pos)
	assert.Equal(t, []gbnf.Sequence{{
		{Kind: gbnf.Char, Ranges: []gbnf.Range{{Lo: 'a', Hi: 'a'}}},
		{Kind: gbnf.Char, Ranges: []gbnf.Range{{Lo: 'é', Hi: 'é'}}},
		{Kind: gbnf.Char, Ranges: []gbnf.Range{{Lo: 'a', Hi: 'c'}}, Negated: true},
		{Kind: gbnf.Char, Negated: true},
		{Kind: gbnf.Token, Token: 7},
		{Kind: gbnf.Token, Token: -1, Name: "<|eot_id|>", Negated: true},
		{Kind: gbnf.RuleRef, Rule: 1},
	}}, g.Rules[0].Alts)
}

// The IR holds one Element per character of a literal (a 1 MB grammar made from a
// JSON Schema has ~140k of them, live while the engine compiles it), so its size
// is part of every large compile's cost: it was 104 bytes, and is 64.
func TestElementStaysNarrow(t *testing.T) {
	assert.LessOrEqual(t, unsafe.Sizeof(gbnf.Element{}), uintptr(64))
}

func TestParseRoot(t *testing.T) {
	g, err := gbnf.Parse("a ::= \"a\"\nstart ::= a a", gbnf.WithRoot("start"))
	require.NoError(t, err)
	assert.Equal(t, "start", g.Rules[g.Root].Name)
}

// Helper rules are positioned where their syntax is.
func TestParseHelperPositions(t *testing.T) {
	g, err := gbnf.Parse("root ::= \"a\"\n  x ::= (\"b\" | \"c\")*")
	require.NoError(t, err)
	assert.Equal(t, gbnf.Pos{Line: 2, Col: 3}, g.Rules[g.Index["x"]].Pos)
	assert.Equal(t, gbnf.Pos{Line: 2, Col: 9}, g.Rules[g.Index["x-1"]].Pos, "the group")
	assert.Equal(t, gbnf.Pos{Line: 2, Col: 20}, g.Rules[g.Index["x-2"]].Pos, "the star")
}

// Left recursion through rules that match the empty string is refused, but a
// cycle that leaves nothing behind (repeating something that can be empty) is
// not left recursion: llama.cpp accepts ( [x]* )*.
func TestParseNullableRepetitionIsNotLeftRecursion(t *testing.T) {
	for _, src := range []string{
		`root ::= ( [x]* )*`,
		"root ::= ws*\nws ::= [ ]*",
		`root ::= ("a"? "b"?)+`,
		`root ::= (("a"{0,3}){0,3})*`,
	} {
		g, err := gbnf.Parse(src)
		require.NoError(t, err, src)
		checkInvariants(t, g)
	}
}

// A grammar with a big expansion that stays under the limits.
func TestParseLargeButBounded(t *testing.T) {
	g, err := gbnf.Parse(`root ::= "a"{2000} [0-9]{0,5000} ("x"{0,99}){0,99}`)
	require.NoError(t, err)
	checkInvariants(t, g)
	assert.Less(t, len(g.Rules), 200, "large counts are counters, not unrolled")
	assert.Len(t, strings.Split(strings.TrimSpace(gbnf.Format(g)), "\n"), len(g.Rules))
}
