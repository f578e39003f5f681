package engine_test

import (
	"bytes"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/engine"
	"github.com/tetherlm/tether/gocore/gbnf"
	"github.com/tetherlm/tether/gocore/vocab"
)

// Raw-byte terminals of bnf_sampler's dialect (issue 17): \xHH bytes that are not
// part of a UTF-8 character match one raw byte (gbnf.Byte, engine opByte).

// bnfByteExample is bnf_sampler's README byte example.
const bnfByteExample = "<byte> ::= '\\xf0'|'\\xa0'|'\\xb0'\n<sequence> ::= <byte>|<byte><sequence>\n<start> ::= <sequence>"

// onlyBytes reports whether token id has text made only of the bytes in set.
func onlyBytes(v *vocab.Vocab, id int, set ...byte) bool {
	tb := v.TokenBytes(id)
	if !textToken(v, id) {
		return false
	}
	for _, b := range tb {
		if bytes.IndexByte(set, b) < 0 {
			return false
		}
	}
	return true
}

// exactEverywhere checks the state of m against every token of the vocabulary:
// the mask equals ReferenceMask, IsAllowed and a clone's AcceptToken for every
// token, and want (an independent model of the language) when given.
func exactEverywhere(t *testing.T, m *engine.Matcher, v *vocab.Vocab, want func(id int) bool) []uint32 {
	t.Helper()
	mask := make([]uint32, (v.Size()+31)/32)
	ref := make([]uint32, len(mask))
	require.NoError(t, m.FillMask(mask))
	require.NoError(t, m.ReferenceMask(ref))
	ids := make([]int, v.Size())
	for id := range ids {
		ids[id] = id
		if bitSet(mask, id) != bitSet(ref, id) {
			t.Fatalf("token %d %q: mask %v, reference %v", id, v.TokenBytes(id), bitSet(mask, id), bitSet(ref, id))
		}
		if want != nil && bitSet(mask, id) != want(id) {
			t.Fatalf("token %d %q: mask %v, model %v", id, v.TokenBytes(id), bitSet(mask, id), want(id))
		}
	}
	bad := stateDisagreements(m, v, mask, nil, ids, 1)
	require.Empty(t, bad, "first disagreements: %v", bad[:min(5, len(bad))])
	return mask
}

// The README example lists exactly the tokens whose bytes are all among F0, A0 and
// B0 (checked over the whole vocabulary, Llama-2's byte-fallback <0xF0> <0xA0>
// <0xB0> and Llama-3's single-byte tokens among them), at the start and after
// each accepted token; accept_token takes each such token and refuses every other.
func TestBNFRawByteExample(t *testing.T) {
	set := []byte{0xF0, 0xA0, 0xB0}
	for _, nv := range bnfVocabs(t) {
		t.Run(nv.name, func(t *testing.T) {
			v := nv.v
			gr := compileBNF(t, bnfByteExample, v)
			m := gr.NewMatcher()
			want := func(id int) bool { return onlyBytes(v, id, set...) }
			mask := exactEverywhere(t, m, v, want)
			var listed []int
			singles := map[byte]bool{}
			for id := 0; id < v.Size(); id++ {
				if bitSet(mask, id) {
					listed = append(listed, id)
					if tb := v.TokenBytes(id); len(tb) == 1 {
						singles[tb[0]] = true
					}
				}
			}
			assert.Equal(t, map[byte]bool{0xF0: true, 0xA0: true, 0xB0: true}, singles,
				"the single-byte tokens of F0, A0 and B0 are listed")
			if nv.name == "llama2" {
				for _, name := range []string{"<0xF0>", "<0xA0>", "<0xB0>"} {
					id, ok := v.TokenID(name)
					require.True(t, ok, name)
					assert.True(t, bitSet(mask, id), name)
				}
			}
			assert.False(t, m.CanEnd())
			pl, err := m.PossibleTokens(true)
			require.NoError(t, err)
			assert.NotEmpty(t, pl)

			// Accept each listed token (and refuse every other) from the
			// start; then, after one, the end is allowed as well.
			for id := 0; id < v.Size(); id++ {
				c := m.Clone()
				err := c.AcceptToken(id)
				if want(id) {
					require.NoError(t, err, "token %d %q", id, v.TokenBytes(id))
				} else {
					require.Error(t, err, "token %d %q", id, v.TokenBytes(id))
				}
			}
			r := rand.New(rand.NewSource(17))
			for step := 0; step < 4; step++ {
				id := listed[r.Intn(len(listed))]
				require.NoError(t, m.AcceptToken(id))
				require.True(t, m.CanEnd())
				endOrWant := func(id int) bool { return want(id) || v.IsEOG(id) }
				exactEverywhere(t, m, v, endOrWant)
			}
			// Text that is not among the bytes is refused, with a message that
			// names the raw bytes expected.
			err = m.AcceptBytes([]byte("a"))
			require.Error(t, err)
			assert.Contains(t, err.Error(), `expected end of text or raw byte '\xf0' or raw byte '\xa0' or raw byte '\xb0'`)
		})
	}
}

// mixedItems are the byte strings of the mixed grammar's items, written in it as
// raw bytes, characters, and both.
var mixedItems = [][]byte{
	{0xF0, 'a'},                   // '\xf0' 'a': a raw byte, then a character: not UTF-8
	{0xC3, 0xA9, 0x80},            // 'é\x80': a character, then a stray continuation byte
	{0xE4, 0xBD, 0xA0},            // '\xe4' <b>, <b> ::= '\xbd\xa0': "你" as three raw bytes
	{0xE4, 0xC3, 0xA9},            // '\xe4' 'é': a raw lead byte the character does not complete
	[]byte("x"),                   // plain text
	[]byte("日本"),                  // characters
	{0xC3, 0xA9, 'z'},             // 'é' 'z' (shares a prefix with 'é\x80')
	{0xF0, 0x9F, 0x98},            // '\xf0\x9f\x98': a character cut short, raw
	{0xF0, 0x9F, 0x98, 0x80, '!'}, // '😀!' as a character (shares raw F0 9F 98)
}

const mixedGrammar = `<start> ::= <item> | <item> <start>
<item> ::= '\xf0' 'a' | '\xc3\xa9\x80' | '\xe4' <b> | '\xe4' 'é' | 'x' | '日本' | 'é' 'z' | <cut> | '😀!'
<b> ::= '\xbd\xa0'
<cut> ::= '\xf0\x9f\x98'`

// viablePrefix reports whether s is a prefix of a string of items+ (the mixed
// grammar's language, modelled directly on bytes), and whether s is in it.
func viablePrefix(s []byte) (prefix, whole bool) {
	// at[i]: s[:i] is a concatenation of items.
	at := make([]bool, len(s)+1)
	at[0] = true
	for i := 0; i <= len(s); i++ {
		if !at[i] {
			continue
		}
		for _, it := range mixedItems {
			if bytes.HasPrefix(it, s[i:]) {
				prefix = true // s[i:] begins another item
			}
			if bytes.HasPrefix(s[i:], it) {
				at[i+len(it)] = true
			}
		}
	}
	return prefix, at[len(s)] && len(s) > 0
}

// A grammar mixing raw bytes and characters: masks equal an independent model of
// its byte-level language (and ReferenceMask, IsAllowed and AcceptToken on every
// token) on every prefix of a few random walks, with both vocabularies.
func TestBNFRawBytesMixedGrammar(t *testing.T) {
	g, err := gbnf.ParseBNF(mixedGrammar)
	require.NoError(t, err)
	kinds := map[gbnf.Kind]int{}
	for _, r := range g.Rules {
		for _, alt := range r.Alts {
			for _, e := range alt {
				kinds[e.Kind]++
			}
		}
	}
	require.Equal(t, 9, kinds[gbnf.Byte], "raw bytes: F0, 80, E4, BD, A0, E4, F0, 9F, 98")
	for _, nv := range bnfVocabs(t) {
		t.Run(nv.name, func(t *testing.T) {
			v := nv.v
			gr, err := engine.Compile(g, v)
			require.NoError(t, err)
			r := rand.New(rand.NewSource(int64(len(nv.name))))
			walks, steps := 3, 6
			if testing.Short() {
				walks, steps = 1, 3
			}
			for w := 0; w < walks; w++ {
				m := gr.NewMatcher()
				var text []byte
				for s := 0; s < steps; s++ {
					_, whole := viablePrefix(text)
					model := func(id int) bool {
						if v.IsEOG(id) {
							return whole
						}
						if !textToken(v, id) {
							return false
						}
						p, _ := viablePrefix(append(text[:len(text):len(text)], v.TokenBytes(id)...))
						return p
					}
					require.Equal(t, whole, m.CanEnd(), "after %q", text)
					mask := exactEverywhere(t, m, v, model)
					var allowed []int
					for id := 0; id < v.Size(); id++ {
						if bitSet(mask, id) && !v.IsEOG(id) {
							allowed = append(allowed, id)
						}
					}
					require.NotEmpty(t, allowed)
					id := allowed[r.Intn(len(allowed))]
					require.NoError(t, m.AcceptToken(id), "token %d %q after %q", id, v.TokenBytes(id), text)
					text = append(text, v.TokenBytes(id)...)
				}
			}
		})
	}
}

// Raw bytes next to characters, token by token, with a small vocabulary: what is
// allowed after each piece of text.
func TestBNFRawBytesSteps(t *testing.T) {
	pieces := []string{"\xc3", "\xa9", "(", "\xc3(", "é", "\xe4", "\xbd", "\xa0", "\xbd\xa0", "你", "\xe4\xc3\xa9", "a", "\xf0", "\xf0a", "\x80", "\xff"}
	v := newListVocab(pieces...)
	eos := v.addSpecial("</s>", true)
	tests := []struct {
		name, src string
		feed      []string // tokens accepted first
		allowed   []string // then exactly these are allowed ("</s>": the end)
	}{
		{"a raw lead byte beside a character", `<start> ::= 'é' | '\xc3' '('`, nil,
			[]string{"\xc3", "\xc3(", "é"}},
		{"after C3: the character's A9 or the raw path's (", `<start> ::= 'é' | '\xc3' '('`, []string{"\xc3"},
			[]string{"\xa9", "("}},
		{"a raw byte never starts a character", `<start> ::= '\xe4' <c>` + "\n" + `<c> ::= 'é'`, nil,
			[]string{"\xe4", "\xe4\xc3\xa9"}},
		{"after raw E4 the character é, not 你's BD", `<start> ::= '\xe4' <c>` + "\n" + `<c> ::= 'é'`, []string{"\xe4"},
			[]string{"\xc3", "é"}},
		{"你 as three raw bytes takes the character token", `<start> ::= '\xe4' <b>` + "\n" + `<b> ::= '\xbd\xa0'`, nil,
			[]string{"\xe4", "你"}},
		{"then BD, then A0", `<start> ::= '\xe4' <b>` + "\n" + `<b> ::= '\xbd\xa0'`, []string{"\xe4"},
			[]string{"\xbd", "\xbd\xa0"}},
		{"the end after the last raw byte", `<start> ::= '\xe4' <b>` + "\n" + `<b> ::= '\xbd\xa0'`, []string{"\xe4", "\xbd", "\xa0"},
			[]string{"</s>"}},
		{"a raw byte then ASCII", `<start> ::= '\xf0' 'a' | '\xff'`, nil,
			[]string{"\xf0", "\xf0a", "\xff"}},
		{"raw F0 then a", `<start> ::= '\xf0' 'a' | '\xff'`, []string{"\xf0"},
			[]string{"a"}},
		{"a stray continuation byte after a character", `<start> ::= 'é\x80'`, []string{"é"},
			[]string{"\x80"}},
		{"the GBNF dialect is unchanged: \\xf0 is U+00F0 there", "", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.src == "" {
				g, err := gbnf.Parse(`root ::= "\xf0"`)
				require.NoError(t, err)
				gr, err := engine.Compile(g, v)
				require.NoError(t, err)
				m := gr.NewMatcher()
				require.Error(t, m.AcceptBytes([]byte{0xF0}))
				require.NoError(t, m.AcceptBytes([]byte("ð")))
				return
			}
			gr := compileBNF(t, tt.src, v)
			m := gr.NewMatcher()
			for _, p := range tt.feed {
				id, ok := v.TokenID(p)
				require.True(t, ok, p)
				require.NoError(t, m.AcceptToken(id), "feed %q", p)
			}
			var got []string
			for _, id := range allowed(m) {
				if id == eos {
					got = append(got, "</s>")
				} else {
					got = append(got, string(v.TokenBytes(id)))
				}
			}
			assert.ElementsMatch(t, tt.allowed, got)
		})
	}
}

// ForcedBytes, Expected and CanEnd see raw bytes too.
func TestBNFRawBytesForcedAndExpected(t *testing.T) {
	v := llama3Vocab(t)
	gr := compileBNF(t, `<start> ::= '\xf0' 'abc' '\xff' | '\xf0' 'abd'`, v)
	m := gr.NewMatcher()
	forced, err := m.ForcedBytes(16)
	require.NoError(t, err)
	assert.Equal(t, []byte{0xF0, 'a', 'b'}, forced)
	assert.Equal(t, `raw byte '\xf0'`, m.Expected())
	require.NoError(t, m.AcceptBytes([]byte{0xF0, 'a', 'b', 'c'}))
	assert.Equal(t, `raw byte '\xff'`, m.Expected())
	assert.False(t, m.CanEnd())
	require.NoError(t, m.AcceptBytes([]byte{0xFF}))
	assert.True(t, m.CanEnd())
}

// A raw byte that takes a character's lead byte in the middle of a token ('b'
// then raw C3 over "bé"): the position cache must not count the token's
// characters as if the stacks were between characters there (found by
// FuzzGrammarDifferential: "bé" and "bí" were allowed, though A9 cannot follow).
func TestBNFRawByteMidCharacter(t *testing.T) {
	for _, nv := range bnfVocabs(t) {
		t.Run(nv.name, func(t *testing.T) {
			v := nv.v
			for _, src := range []string{
				"<r0> ::= <any!> 'b' '\\xc3' | <r0> 'abc'",
				"<start> ::= 'b' '\\xc3' <rest>\n<rest> ::= 'abc' <rest> | ''",
				"<start> ::= 'b' <x>\n<x> ::= '\\xc3' | '\\xc3' '\\xa9' 'z'",
			} {
				gr := compileBNF(t, src, v)
				m := gr.NewMatcher()
				if !m.CanEnd() && len(allowed(m)) > 1000 { // after <any!>
					id, ok := v.TokenID("x")
					require.True(t, ok)
					require.NoError(t, m.AcceptToken(id))
				}
				exactEverywhere(t, m, v, nil)
			}
		})
	}
}

// BenchmarkMaskRawBytes: the mask of bnf_sampler's byte example (every state of it
// is walked exactly: raw bytes on top use no position cache) and of the mixed
// grammar after a few bytes, Llama-3 vocabulary, warm.
func BenchmarkMaskRawBytes(b *testing.B) {
	v := llama3Vocab(b)
	for _, bc := range []struct{ name, src string }{{"bytes", bnfByteExample}, {"mixed", mixedGrammar}} {
		b.Run(bc.name, func(b *testing.B) {
			g, err := gbnf.ParseBNF(bc.src)
			require.NoError(b, err)
			gr, err := engine.Compile(g, v)
			require.NoError(b, err)
			m := gr.NewMatcher()
			mask := make([]uint32, (v.Size()+31)/32)
			require.NoError(b, m.FillMask(mask))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				clear(mask)
				if err := m.FillMask(mask); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
