package gbnf_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tetherlm/tether/gocore/gbnf"
)

// FuzzParse: Parse never panics; an error is always a *gbnf.Error whose
// position lies inside the text (or just past its end); a grammar satisfies
// the IR's invariants and survives a round trip through Format.
func FuzzParse(f *testing.F) {
	seeds := []string{
		`root ::= "a"`,
		`root ::= [a-z]+ | "x"{2,5} (y | z)*` + "\ny ::= \"y\"\nz ::= [^\\n] .",
		`root ::= <[1000]> !<[1001]> <|eot_id|>`,
		"root ::= (\n \"a\" # comment\n | \"b\"\n)?\n",
		`root ::= "\x41\u00e9\U0001F600\n\t\\\"" [\]\[\-\^]`,
		`root ::= ( [x]* )*`,
		`root ::= ((("a"{0,9}){0,9}){0,9})`,
		`root ::= "a"{,3} "b"{2,} "c"{1}`,
		"root ::= expr\nexpr ::= term | expr \"+\" term\nterm ::= [0-9]",
		"root ::= a\na ::= e a \"x\" | \"y\"\ne ::= \"e\" |",
		`root ::= "a" | root "a"`,
		"root ::= \"a\" |\nb ::= \"b\"",
		"",
		"\xff",
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		g, err := gbnf.Parse(src, gbnf.WithMaxElements(1<<14), gbnf.WithMaxRepeat(100))
		if err != nil {
			var e *gbnf.Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is a %T, not a *gbnf.Error", err, err)
			}
			checkErrorPos(t, src, e)
			return
		}
		checkInvariants(t, g)
		checkRoundTrip(t, g)
	})
}

// checkErrorPos checks that e's position is a place in src: a line that exists
// and a column at most one past the end of that line.
func checkErrorPos(t *testing.T, src string, e *gbnf.Error) {
	t.Helper()
	lines := strings.Split(src, "\n")
	if e.Pos.Line < 1 || e.Pos.Line > len(lines) {
		t.Fatalf("%v: line %d is not in 1..%d", e, e.Pos.Line, len(lines))
	}
	if n := len(lines[e.Pos.Line-1]); e.Pos.Col < 1 || e.Pos.Col > n+1 {
		t.Fatalf("%v: column %d is not in 1..%d", e, e.Pos.Col, n+1)
	}
	if e.Msg == "" || e.Code == 0 {
		t.Fatalf("%v: no message or code", e)
	}
}
