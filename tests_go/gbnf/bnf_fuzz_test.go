package gbnf_test

import (
	"errors"
	"testing"

	"github.com/tetherlm/tether/gocore/gbnf"
)

// FuzzParseBNF: ParseBNF never panics; an error is always a *gbnf.Error whose
// position lies inside the text; a grammar satisfies the IR's invariants (token-level
// elements included) and has no left recursion left.
func FuzzParseBNF(f *testing.F) {
	for _, s := range bnfSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		g, err := gbnf.ParseBNF(src, gbnf.WithMaxElements(1<<14))
		if err != nil {
			var e *gbnf.Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is a %T, not a *gbnf.Error", err, err)
			}
			checkErrorPos(t, src, e)
			return
		}
		checkBNFInvariants(t, g)
	})
}

var bnfSeeds = []string{
	"<start>::=<A><B><C>\n<A>::='cryscan'\n<B>::='hex'\n<C>::='wanicca'",
	"<start>::=<sequence>\n<sequence>::=<any!>|<any!><sequence>",
	"<start>::=<except!('ar')><start>|'x'",
	"<abc> ::= 'a'|'b'|'c'\n<sequence>::= <abc>|<abc><sequence>\n<start>::=<except!([sequence])>",
	`<start> ::= <byte> | <byte> <start>` + "\n" + `<byte> ::= '\xf0\xa0\xb0\xb0' | "\xe4\xbd\xa0"`,
	`<start>::='"'<content>'"'` + "\n" + `<content>::=<except!([escaped_literals])>|<except!([escaped_literals])><content>|'\\"'<content>|'\\"'` + "\n" + `<escaped_literals>::='\t'|'\n'|'\r'|'"'`,
	"<start> ::= <expr>\n<expr> ::= <expr> '+' <term> | <term>\n<term> ::= <term> '*' '1' | '1'",
	"<start> ::= 'b''o''y' ; comment\n | '\\u00e9' \"\\u{1F600}\"",
	"<start> ::= <start>",
	"<a> ::= <b> 'x'\n<b> ::= <a> | ''",
	"<except!('x')> ::= 'a'",
	"<start> ::= <except!('>')> <except!(\"<\")>",
	"",
	"\xff",
	"<byte> ::= '\\xf0'|'\\xa0'|'\\xb0'\n<sequence> ::= <byte>|<byte><sequence>\n<start> ::= <sequence>",
	`<start> ::= 'a\xf0' <b> | '\xed\xa0\x80\xc0\x80' "\xe4" '\xbd\xa0' <b>` + "\n" + `<b> ::= '\x80\xff' | ''`,
	`<start> ::= <except!('\xf0')> '\xc3'`,
}

func checkBNFInvariants(t *testing.T, g *gbnf.Grammar) {
	t.Helper()
	if len(g.Rules) == 0 || g.Root < 0 || g.Root >= len(g.Rules) || len(g.Index) != len(g.Rules) {
		t.Fatalf("bad grammar shape: %d rules, root %d, index %d", len(g.Rules), g.Root, len(g.Index))
	}
	for _, r := range g.Rules {
		if len(r.Alts) == 0 {
			t.Fatalf("rule %q has no alternatives", r.Name)
		}
		for _, alt := range r.Alts {
			for _, e := range alt {
				switch e.Kind {
				case gbnf.Char:
					if e.Negated || len(e.Ranges) != 1 || e.Ranges[0].Lo != e.Ranges[0].Hi {
						t.Fatalf("a terminal of %q is not one code point: %+v", r.Name, e)
					}
				case gbnf.Byte:
					if e.Negated || len(e.Ranges) != 1 || e.Ranges[0].Lo != e.Ranges[0].Hi || e.Ranges[0].Lo < 0x80 || e.Ranges[0].Lo > 0xFF {
						t.Fatalf("a raw byte of %q is not one byte >= 0x80: %+v", r.Name, e)
					}
				case gbnf.RuleRef:
					if e.Rule < 0 || int(e.Rule) >= len(g.Rules) {
						t.Fatalf("reference in %q out of range", r.Name)
					}
				case gbnf.Token:
					if e.Token != gbnf.AnyToken {
						t.Fatalf("token element in %q is not <any!>: %+v", r.Name, e)
					}
				case gbnf.Except:
					if (e.Rule < 0) == (e.Name == "") || int(e.Rule) >= len(g.Rules) {
						t.Fatalf("except element in %q: rule %d, literal %q", r.Name, e.Rule, e.Name)
					}
				default:
					t.Fatalf("unknown element kind %d in %q", e.Kind, r.Name)
				}
			}
		}
	}
}
