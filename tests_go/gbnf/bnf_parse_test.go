package gbnf_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/gbnf"
)

// Each BNF grammar gives the same IR as the GBNF grammar beside it.
func TestParseBNFMatchesGBNF(t *testing.T) {
	tests := []struct{ name, bnf, gbnf string }{
		{"bnf_sampler README sequence", "<start>::=<A><B><C>\n<A>::='cryscan'\n<B>::='hex'\n<C>::='wanicca'",
			"start ::= A B C\nA ::= \"cryscan\"\nB ::= \"hex\"\nC ::= \"wanicca\""},
		{"consecutive terminals merge", `<start> ::= 'b''o''y' | "g" 'irl'`, `start ::= "boy" | "girl"`},
		{"quotes of either kind", `<start> ::= "it's" | 'say "hi"'`, `start ::= "it's" | "say \"hi\""`},
		{"escapes", `<start> ::= '\t\n\r\\\'\"' '\u00e9\u{1F600}'`, `start ::= "\t\n\r\\'\"é😀"`},
		{"raw bytes forming UTF-8", `<start> ::= '\xe4\xbd\xa0' "\x41"`, `start ::= "你A"`},
		{"productions over several lines", "<start> ::=\n  'a'\n  | <b>\n\n<b> ::= 'b' ; a comment\n",
			"start ::= \"a\" | b\nb ::= \"b\""},
		{"names with dashes and digits", "<start>::=<positive-digit><d2>\n<positive-digit>::='1'\n<d2>::='2'",
			"start ::= positive-digit d2\npositive-digit ::= \"1\"\nd2 ::= \"2\""},
		{"empty terminal and empty alternative", `<start> ::= 'a' | ''`, `start ::= "a" | ""`},
		{"the first rule is the root without <start>", "<x> ::= <y>\n<y> ::= 'y'", "x ::= y\ny ::= \"y\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := gbnf.ParseBNF(tt.bnf)
			require.NoError(t, err)
			checkBNFInvariants(t, g)
			want, err := gbnf.Parse(tt.gbnf, gbnf.WithRoot(g.Rules[g.Root].Name))
			require.NoError(t, err)
			assert.Equal(t, gbnf.Format(want), gbnf.Format(g))
			assert.Equal(t, want.Rules[want.Root].Name, g.Rules[g.Root].Name)
		})
	}
}

// \xHH bytes that form UTF-8 characters are characters; every other byte is a
// raw-byte element (Kind Byte, one byte value), in place among the characters.
func TestParseBNFRawBytes(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"bnf_sampler's byte example", "<byte> ::= '\\xf0'|'\\xa0'|'\\xb0'\n<start> ::= <byte>|<byte><start>",
			"byte ::= '\\xf0' | '\\xa0' | '\\xb0'\nstart ::= byte | byte start\n"},
		{"a lone lead byte before a character", `<start> ::= 'a\xf0\xa0b'`, `start ::= "a" '\xf0' '\xa0' "b"` + "\n"},
		{"a stray continuation byte", `<start> ::= '\x80'`, `start ::= '\x80'` + "\n"},
		{"a character then a cut character", `<start> ::= '\xc3\xa9\xe4\xbd'`, `start ::= "é" '\xe4' '\xbd'` + "\n"},
		{"joined terminals form one character", `<start> ::= '\xe4' '\xbd\xa0'`, `start ::= "你"` + "\n"},
		{"split across rules: raw", "<start> ::= '\\xe4' <b>\n<b> ::= '\\xbd\\xa0'", "start ::= '\\xe4' b\nb ::= '\\xbd' '\\xa0'\n"},
		{"a surrogate's bytes", `<start> ::= '\xed\xa0\x80'`, `start ::= '\xed' '\xa0' '\x80'` + "\n"},
		{"an overlong form", `<start> ::= '\xc0\x80'`, `start ::= '\xc0' '\x80'` + "\n"},
		{"0xFF", `<start> ::= "\xff"`, `start ::= '\xff'` + "\n"},
		{"UTF-8 written raw in the source", "<start> ::= 'é'", `start ::= "é"` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := gbnf.ParseBNF(tt.src)
			require.NoError(t, err)
			checkBNFInvariants(t, g)
			assert.Equal(t, tt.want, gbnf.Format(g))
		})
	}
	// The elements themselves.
	g, err := gbnf.ParseBNF(`<start> ::= 'a\xf0'`)
	require.NoError(t, err)
	alt := g.Rules[g.Root].Alts[0]
	require.Len(t, alt, 2)
	assert.Equal(t, gbnf.Element{Kind: gbnf.Char, Ranges: []gbnf.Range{{Lo: 'a', Hi: 'a'}}}, alt[0])
	assert.Equal(t, gbnf.Element{Kind: gbnf.Byte, Ranges: []gbnf.Range{{Lo: 0xF0, Hi: 0xF0}}}, alt[1])
	// In excepted literals \xHH stays a raw byte of the literal.
	g, err = gbnf.ParseBNF(`<start> ::= <except!('\xf0')>`)
	require.NoError(t, err)
	assert.Equal(t, "\xf0", g.Rules[g.Root].Alts[0][0].Name)
	// The GBNF dialect is unchanged: \xHH is a code point there.
	g, err = gbnf.Parse(`root ::= "\xf0"`)
	require.NoError(t, err)
	assert.Equal(t, gbnf.Element{Kind: gbnf.Char, Ranges: []gbnf.Range{{Lo: 0xF0, Hi: 0xF0}}}, g.Rules[g.Root].Alts[0][0])
}

// Names may hold what GBNF names cannot, such as "_" (bnf_sampler's examples use it).
func TestParseBNFNames(t *testing.T) {
	g, err := gbnf.ParseBNF("<start>::=<positive_digit>\n<positive_digit>::='1'|'2'")
	require.NoError(t, err)
	r := g.Rules[g.Index["positive_digit"]]
	assert.Len(t, r.Alts, 2)
}

// <start> is the root when defined, wherever it is; WithRoot overrides it.
func TestParseBNFRoot(t *testing.T) {
	src := "<a> ::= 'a'\n<start> ::= <a> 'b'"
	g, err := gbnf.ParseBNF(src)
	require.NoError(t, err)
	assert.Equal(t, "start", g.Rules[g.Root].Name)
	g, err = gbnf.ParseBNF(src, gbnf.WithRoot("a"))
	require.NoError(t, err)
	assert.Equal(t, "a", g.Rules[g.Root].Name)
}

// The token-level elements: <any!> and the two forms of <except!(...)>.
func TestParseBNFTokenElements(t *testing.T) {
	g, err := gbnf.ParseBNF("<start>::=<sequence>\n<sequence>::=<any!>|<any!><sequence>")
	require.NoError(t, err)
	seq := g.Rules[g.Index["sequence"]]
	require.Len(t, seq.Alts, 2)
	assert.Equal(t, gbnf.Element{Kind: gbnf.Token, Token: gbnf.AnyToken}, seq.Alts[0][0])

	g, err = gbnf.ParseBNF(`<start> ::= <except!('ar')> <except!("\x3e>")> 'x'`)
	require.NoError(t, err)
	alt := g.Rules[g.Root].Alts[0]
	require.Len(t, alt, 3)
	assert.Equal(t, gbnf.Except, alt[0].Kind)
	assert.Equal(t, "ar", alt[0].Name)
	assert.Equal(t, int32(-1), alt[0].Rule)
	assert.Equal(t, ">>", alt[1].Name)
	assert.Equal(t, "start ::= <except!('ar')> <except!('>>')> \"x\"\n", gbnf.Format(g))

	g, err = gbnf.ParseBNF("<abc> ::= 'a'|'b'|'c'\n<sequence>::= <abc>|<abc><sequence>\n<start> ::= <except!([sequence])>")
	require.NoError(t, err)
	e := g.Rules[g.Root].Alts[0][0]
	assert.Equal(t, gbnf.Except, e.Kind)
	assert.Equal(t, g.Index["sequence"], int(e.Rule))
	assert.Empty(t, e.Name)
	assert.Contains(t, gbnf.Format(g), "start ::= <except!([sequence])>\n")
}

// Left recursion in the BNF dialect is rewritten, as in GBNF.
func TestParseBNFLeftRecursion(t *testing.T) {
	g, err := gbnf.ParseBNF("<start> ::= <expr>\n<expr> ::= <expr> '+' <term> | <term>\n<term> ::= <term> '*' '1' | '1'")
	require.NoError(t, err)
	checkBNFInvariants(t, g)
}

func TestParseBNFErrors(t *testing.T) {
	tests := []struct {
		name, src string
		code      gbnf.ErrorCode
		want      string
	}{
		{"empty", "  ; nothing\n", gbnf.ErrEmpty, `1:1: empty grammar: expected at least one production such as "<start> ::= 'x'"`},
		{"no ::=", "<start> 'a'", gbnf.ErrSyntax, `1:9: expected "::=" after <start>, found "'"`},
		{"not a nonterminal", "start ::= 'a'", gbnf.ErrSyntax, `1:1: expected a nonterminal such as <name>, found "s"`},
		{"unterminated terminal", "<start> ::= 'abc", gbnf.ErrSyntax, `1:13: unterminated terminal: no closing '`},
		{"unterminated nonterminal", "<start> ::= <abc", gbnf.ErrSyntax, `1:13: unterminated nonterminal: expected ">" to close "<"`},
		{"stray character", "<start> ::= 'a' ( 'b' )", gbnf.ErrSyntax,
			`1:17: unexpected "(" in <start>: expected a terminal, a nonterminal, "|" or a new production "<name> ::= ..."`},
		{"undefined", "<start> ::= <a>", gbnf.ErrUndefinedRule, `1:13: undefined rule "a" (referenced in rule "start")`},
		{"undefined in except", "<start> ::= <except!([a])>", gbnf.ErrUndefinedRule,
			`1:13: undefined rule "a" (referenced by <except!([a])> in rule "start")`},
		{"defined twice", "<start> ::= 'a'\n<start> ::= 'b'", gbnf.ErrDuplicateRule, `2:1: rule "start" is defined twice (first at 1:1)`},
		{"bad escape", `<start> ::= '\q'`, gbnf.ErrEscape, `1:14: unknown escape "\q": expected one of \t \n \r \\ \' \" \xHH \uHHHH \u{H...}`},
		{"short hex", `<start> ::= '\x4'`, gbnf.ErrEscape, `1:14: escape \x needs 2 hex digits, found "'"`},
		{"surrogate", `<start> ::= '\ud800'`, gbnf.ErrEscape, `1:14: escape \ud800 is a UTF-16 surrogate, not a character`},
		{"unknown built-in", "<start> ::= <all!>", gbnf.ErrSyntax,
			`1:13: unknown built-in nonterminal <all!>: expected <any!>, <except!('literal')> or <except!([nonterminal])>`},
		{"defining a built-in", "<any!> ::= 'a'", gbnf.ErrSyntax, `1:1: <any!> is a built-in nonterminal and cannot be defined`},
		{"malformed except", "<start> ::= <except!(ar)>", gbnf.ErrSyntax,
			`1:13: malformed <except!(...)>: expected <except!('literal')>, <except!("literal")> or <except!([nonterminal])>`},
		{"empty except", "<start> ::= <except!('')>", gbnf.ErrSyntax, `1:13: <except!('')>: the excepted literal is empty`},
		{"unclosed except", "<start> ::= <except!('a'>", gbnf.ErrSyntax, `1:25: expected ")>" to close <except!(...)>, found ">"`},
		{"a cycle with no way out", "<start> ::= <start> 'a'", gbnf.ErrLeftRecursion,
			`1:13: left recursion: start -> start: a rule reaches itself again before matching any text (write x ::= x y | z as x ::= z y*)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := gbnf.ParseBNF(tt.src)
			require.Error(t, err)
			assert.Nil(t, g)
			var e *gbnf.Error
			require.True(t, errors.As(err, &e), "%T", err)
			assert.Equal(t, tt.want, err.Error())
			assert.Equal(t, tt.code, e.Code)
		})
	}
}
