package engine_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/engine"
	"github.com/tetherlm/tether/gocore/gbnf"
	"github.com/tetherlm/tether/gocore/vocab"
	"github.com/tetherlm/tether/tests_go/internal/testdata"
)

// bnf_sampler's README examples (seed 003) with the Llama-2 and Llama-3
// vocabularies (issue 17).

func llama2Vocab(t testing.TB) *vocab.Vocab { return testdata.Vocab(t, "llama2") }

type namedVocab struct {
	name string
	v    *vocab.Vocab
}

func bnfVocabs(t *testing.T) []namedVocab {
	return []namedVocab{{"llama2", llama2Vocab(t)}, {"llama3", llama3Vocab(t)}}
}

func compileBNF(t testing.TB, src string, v engine.Vocabulary) *engine.Grammar {
	t.Helper()
	g, err := gbnf.ParseBNF(src)
	require.NoError(t, err, "parse %q", src)
	gr, err := engine.Compile(g, v)
	require.NoError(t, err, "compile %q", src)
	return gr
}

// textToken reports whether id is an ordinary token with text.
func textToken(v *vocab.Vocab, id int) bool {
	return len(v.TokenBytes(id)) > 0 && !v.IsSpecial(id) && !v.IsEOG(id)
}

// The cryscan/hex/wanicca sequence: only the longest token of each terminal is
// listed (bnf_sampler's rule), all its prefixes are allowed, and after the last
// terminal only the end is.
func TestBNFExampleSequence(t *testing.T) {
	src := "<start>::=<A><B><C>\n<A>::='cryscan'\n<B>::='hex'\n<C>::='wanicca'"
	for _, nv := range bnfVocabs(t) {
		t.Run(nv.name, func(t *testing.T) {
			v := nv.v
			gr := compileBNF(t, src, v)
			m := gr.NewMatcher()
			mask := make([]uint32, (v.Size()+31)/32)
			rest := []byte("cryscanhexwanicca")
			for steps := 0; len(rest) > 0; steps++ {
				require.Less(t, steps, 20)
				require.False(t, m.CanEnd())
				// Every token that is a prefix of the rest is allowed; the longest is listed.
				var prefixes []int
				longest := -1
				for id := 0; id < v.Size(); id++ {
					if tb := v.TokenBytes(id); textToken(v, id) && bytes.HasPrefix(rest, tb) {
						prefixes = append(prefixes, id)
						if longest < 0 || len(tb) > len(v.TokenBytes(longest)) {
							longest = id
						}
					}
				}
				all, err := m.PossibleTokens(false)
				require.NoError(t, err)
				assert.Equal(t, prefixes, all, "rest %q", rest)
				listed, err := m.PossibleTokens(true)
				require.NoError(t, err)
				// One token, or several with the same bytes (Llama-2's byte-fallback
				// <0x61> and "a").
				require.NotEmpty(t, listed)
				assert.Contains(t, listed, longest)
				for _, id := range listed {
					assert.Equal(t, v.TokenBytes(longest), v.TokenBytes(id), "rest %q: %v", rest, listed)
				}
				require.NoError(t, m.FillMask(mask))
				require.Empty(t, bruteForceDisagreements(m, v, mask, nil, false))
				require.NoError(t, m.AcceptToken(longest))
				rest = rest[len(v.TokenBytes(longest)):]
			}
			require.True(t, m.CanEnd())
			all, err := m.PossibleTokens(true)
			require.NoError(t, err)
			require.NotEmpty(t, all)
			for _, id := range all {
				assert.True(t, v.IsEOG(id), "after the sequence only end tokens: %d", id)
			}
		})
	}
}

// <sequence> of <any!>: any token (end tokens aside) at every step, the end only
// after one, and every allowed token is listed (token-level elements have no
// shorter prefixes to drop).
func TestBNFExampleAnySequence(t *testing.T) {
	src := "<start>::=<sequence>\n<sequence>::=<any!>|<any!><sequence>"
	for _, nv := range bnfVocabs(t) {
		t.Run(nv.name, func(t *testing.T) {
			v := nv.v
			gr := compileBNF(t, src, v)
			m := gr.NewMatcher()
			mask := make([]uint32, (v.Size()+31)/32)
			for step, next := range []int{v.Size() / 3, v.Size() / 2, 100} {
				require.NoError(t, m.FillMask(mask))
				for id := 0; id < v.Size(); id++ {
					want := !v.IsEOG(id) || step > 0
					require.Equal(t, want, bitSet(mask, id), "step %d token %d", step, id)
				}
				assert.Equal(t, step > 0, m.CanEnd())
				all, err := m.PossibleTokens(false)
				require.NoError(t, err)
				listed, err := m.PossibleTokens(true)
				require.NoError(t, err)
				assert.Equal(t, all, listed)
				if step == 0 {
					require.Empty(t, bruteForceDisagreements(m, v, mask, nil, true))
				}
				require.NoError(t, m.AcceptToken(next))
			}
		})
	}
}

// exceptModel is bnf_sampler's documented meaning of <except!(lits)> followed by a
// literal: a token without any excepted literal matches whole (the literal comes
// next); a token with one matches its slice before the first, when some prefix of
// the slice is a token, and the rest of the token must begin the literal.
func exceptModel(v *vocab.Vocab, lits [][]byte, next string) func(id int) bool {
	isToken := map[string]bool{}
	for id := 0; id < v.Size(); id++ {
		if textToken(v, id) {
			isToken[string(v.TokenBytes(id))] = true
		}
	}
	return func(id int) bool {
		if !textToken(v, id) {
			return false
		}
		t := v.TokenBytes(id)
		first := -1
		for _, l := range lits {
			if i := bytes.Index(t, l); i >= 0 && (first < 0 || i < first) {
				first = i
			}
		}
		if first < 0 {
			return true
		}
		if first == 0 {
			return false
		}
		prefixToken := false
		for k := 1; k <= first; k++ {
			prefixToken = prefixToken || isToken[string(t[:k])]
		}
		return prefixToken && strings.HasPrefix(next, string(t[first:]))
	}
}

// checkAgainst compares the mask of m's state with want for every token.
func checkAgainst(t *testing.T, m *engine.Matcher, v *vocab.Vocab, want func(int) bool) {
	t.Helper()
	mask := make([]uint32, (v.Size()+31)/32)
	require.NoError(t, m.FillMask(mask))
	n := 0
	for id := 0; id < v.Size(); id++ {
		w := want(id)
		if w != bitSet(mask, id) {
			t.Fatalf("token %d %q: mask %v, bnf_sampler's rule %v", id, v.TokenBytes(id), bitSet(mask, id), w)
		}
		if w {
			n++
		}
	}
	require.Greater(t, n, 0)
	require.Empty(t, bruteForceDisagreements(m, v, mask, nil, true))
}

// <except!('ar')>: "c" of "card" is matched and "ard" goes on to the next term.
func TestBNFExampleExceptLiteral(t *testing.T) {
	src := "<start> ::= <except!('ar')> 'ard!'"
	for _, nv := range bnfVocabs(t) {
		t.Run(nv.name, func(t *testing.T) {
			v := nv.v
			gr := compileBNF(t, src, v)
			m := gr.NewMatcher()
			checkAgainst(t, m, v, exceptModel(v, [][]byte{[]byte("ar")}, "ard!"))
			// A token split by the excepted literal: its slice matches, its rest
			// goes on to 'ard!'.
			split := -1
			for id := 0; id < v.Size() && split < 0; id++ {
				t := v.TokenBytes(id)
				if i := bytes.Index(t, []byte("ar")); i > 0 && textToken(v, id) && strings.HasPrefix("ard!", string(t[i:])) && len(t[i:]) >= 3 {
					split = id
				}
			}
			require.GreaterOrEqual(t, split, 0, "a token such as \"card\"")
			c := m.Clone()
			require.NoError(t, c.AcceptToken(split), "%q", v.TokenBytes(split))
			tb := v.TokenBytes(split)
			rest := "ard!"[len(tb)-bytes.Index(tb, []byte("ar")):]
			require.NoError(t, c.AcceptBytes([]byte(rest)))
			assert.True(t, c.CanEnd())
			// A token starting with the literal is refused.
			for id := 0; id < v.Size(); id++ {
				if textToken(v, id) && bytes.HasPrefix(v.TokenBytes(id), []byte("ar")) {
					require.Error(t, m.Clone().AcceptToken(id), "%q", v.TokenBytes(id))
					break
				}
			}
		})
	}
}

// <except!([sequence])>: the excepted literals are the tokens <sequence> matches
// whole, here every token of only a, b and c.
func TestBNFExampleExceptNonterminal(t *testing.T) {
	src := "<start> ::= <except!([sequence])> 'a'\n<abc> ::= 'a'|'b'|'c'\n<sequence>::= <abc>|<abc><sequence>"
	for _, nv := range bnfVocabs(t) {
		t.Run(nv.name, func(t *testing.T) {
			v := nv.v
			var lits [][]byte
			for id := 0; id < v.Size(); id++ {
				tb := v.TokenBytes(id)
				if textToken(v, id) && len(bytes.Trim(tb, "abc")) == 0 {
					lits = append(lits, tb)
				}
			}
			require.NotEmpty(t, lits)
			gr := compileBNF(t, src, v)
			checkAgainst(t, gr.NewMatcher(), v, exceptModel(v, lits, "a"))
		})
	}
}

// The README's string grammar: except!([escaped_literals]) inside a quoted string,
// walked token by token on an encoded text.
func TestBNFExampleString(t *testing.T) {
	src := `<start>::='"'<content>'"'
<content>::=<except!([escaped_literals])>|<except!([escaped_literals])><content>|'\\"'<content>|'\\"'
<escaped_literals>::='\t'|'\n'|'\r'|'"'`
	for _, nv := range bnfVocabs(t) {
		t.Run(nv.name, func(t *testing.T) {
			v := nv.v
			gr := compileBNF(t, src, v)
			m := gr.NewMatcher()
			mask := make([]uint32, (v.Size()+31)/32)
			require.NoError(t, m.FillMask(mask))
			require.Empty(t, bruteForceDisagreements(m, v, mask, nil, true))
			// A depth-first search over the allowed tokens that begin the rest of the
			// text (longest first): some tokenization of the text is accepted whole,
			// escapes included; every token on the way is checked to be in the mask.
			text := []byte(`"hello world, \"quoted\" text"`)
			checked := 0
			var dfs func(m *engine.Matcher, rest []byte) bool
			dfs = func(m *engine.Matcher, rest []byte) bool {
				if len(rest) == 0 {
					return m.CanEnd()
				}
				require.NoError(t, m.FillMask(mask))
				var cands []int
				for id := 0; id < v.Size(); id++ {
					if tb := v.TokenBytes(id); textToken(v, id) && bytes.HasPrefix(rest, tb) {
						ok, err := m.IsAllowed(id)
						require.NoError(t, err)
						require.Equal(t, ok, bitSet(mask, id), "token %d %q", id, tb)
						checked++
						if ok {
							cands = append(cands, id)
						}
					}
				}
				slices.SortFunc(cands, func(a, b int) int { return len(v.TokenBytes(b)) - len(v.TokenBytes(a)) })
				for _, id := range cands {
					c := m.Clone()
					require.NoError(t, c.AcceptToken(id))
					if dfs(c, rest[len(v.TokenBytes(id)):]) {
						return true
					}
				}
				return false
			}
			require.True(t, dfs(m, text), "some tokenization of %q is accepted", text)
			require.Greater(t, checked, 10)
		})
	}
}
