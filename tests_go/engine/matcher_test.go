package engine_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/engine"
	"github.com/tetherlm/tether/gocore/gbnf"
)

// listVocab is a small hand-made vocabulary: token i is toks[i]; names give special
// tokens their text for TokenID.
type listVocab struct {
	toks    [][]byte
	special map[int]string
	eog     map[int]bool
}

func newListVocab(pieces ...string) *listVocab {
	v := &listVocab{special: map[int]string{}, eog: map[int]bool{}}
	for _, p := range pieces {
		v.toks = append(v.toks, []byte(p))
	}
	return v
}

// addSpecial appends a special token (no text) and returns its id.
func (v *listVocab) addSpecial(name string, eog bool) int {
	id := len(v.toks)
	v.toks = append(v.toks, nil)
	v.special[id] = name
	v.eog[id] = eog
	return id
}

func (v *listVocab) Size() int { return len(v.toks) }
func (v *listVocab) TokenBytes(id int) []byte {
	if id < 0 || id >= len(v.toks) {
		return nil
	}
	return v.toks[id]
}
func (v *listVocab) IsSpecial(id int) bool { _, ok := v.special[id]; return ok }
func (v *listVocab) IsEOG(id int) bool     { return v.eog[id] }
func (v *listVocab) TokenID(text string) (int, bool) {
	for id, n := range v.special {
		if n == text {
			return id, true
		}
	}
	for id, b := range v.toks {
		if string(b) == text {
			return id, true
		}
	}
	return 0, false
}

// allowed lists the ids a fresh mask allows.
func allowed(m *engine.Matcher) []int {
	ids, err := m.AllowedTokens(nil)
	if err != nil {
		panic(err)
	}
	return ids
}

func TestPartialUTF8AcrossTokens(t *testing.T) {
	// "é" is C3 A9; "日" is E6 97 A5; "😀" is F0 9F 98 80.
	v := newListVocab("\xc3", "\xa9", "\xe6", "\x97", "\xa5", "\xe6\x97", "\xf0\x9f", "\x98\x80", "a", "é", "\xa9a", "\xc3\xa9")
	tests := []struct {
		name    string
		grammar string
		tokens  []int
		ok      bool
		canEnd  bool
	}{
		{"two-byte split", `root ::= "é"`, []int{0, 1}, true, true},
		{"two-byte whole", `root ::= "é"`, []int{9}, true, true},
		{"lead only cannot end", `root ::= "é"`, []int{0}, true, false},
		{"three-byte in three", `root ::= "日"`, []int{2, 3, 4}, true, true},
		{"three-byte 2+1", `root ::= "日"`, []int{5, 4}, true, true},
		{"four-byte 2+2", `root ::= "😀"`, []int{6, 7}, true, true},
		{"class range", `root ::= [à-ÿ]+`, []int{0, 1, 0, 1}, true, true},
		{"continuation then ascii", `root ::= "é" "a"`, []int{0, 10}, true, true},
		{"wrong lead", `root ::= "é"`, []int{2}, false, false},
		{"class excludes", `root ::= [a-z]`, []int{0}, false, false},
		{"negated class takes multibyte", `root ::= [^a]`, []int{2, 3, 4}, true, true},
		{"stray continuation", `root ::= .`, []int{1}, false, false},
		{"dot takes split emoji", `root ::= . .`, []int{6, 7, 8}, true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gr := compile(t, tc.grammar, v)
			m := gr.NewMatcher()
			var err error
			for i, id := range tc.tokens {
				if i == len(tc.tokens)-1 {
					// the mask agrees with the verdict
					assert.Equal(t, tc.ok, contains(allowed(m), id), "mask for last token %d", id)
				}
				if err = m.AcceptToken(id); err != nil {
					break
				}
			}
			if tc.ok {
				require.NoError(t, err)
				assert.Equal(t, tc.canEnd, m.CanEnd())
			} else {
				require.Error(t, err)
			}
		})
	}
}

func contains(ids []int, id int) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

func TestEndOfGeneration(t *testing.T) {
	v := newListVocab("a", "b", "ab")
	eos := v.addSpecial("</s>", true)
	gr := compile(t, `root ::= "a" "b"?`, v)
	m := gr.NewMatcher()
	assert.Equal(t, []int{0, 2}, allowed(m), "cannot end yet: no EOG")
	err := m.AcceptToken(eos)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cannot end")
	require.NoError(t, m.AcceptToken(0))
	assert.True(t, m.CanEnd())
	assert.Equal(t, []int{1, eos}, allowed(m))
	require.NoError(t, m.AcceptToken(eos))
	assert.Equal(t, []int{eos}, allowed(m), "after the end only the end")
	require.Error(t, m.AcceptToken(1))
}

func TestSpecialTokens(t *testing.T) {
	v := newListVocab("a", "b")
	think := v.addSpecial("<think>", false)
	eot := v.addSpecial("<|eot_id|>", true)
	other := v.addSpecial("<other>", false)

	t.Run("masked unless named", func(t *testing.T) {
		m := compile(t, `root ::= [a-z]*`, v).NewMatcher()
		assert.Equal(t, []int{0, 1, eot}, allowed(m))
		err := m.AcceptToken(think)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "special token")
	})
	t.Run("named by text", func(t *testing.T) {
		m := compile(t, `root ::= <think> "a" <|eot_id|>`, v).NewMatcher()
		assert.Equal(t, []int{think}, allowed(m))
		require.NoError(t, m.AcceptToken(think))
		require.NoError(t, m.AcceptToken(0))
		assert.Equal(t, []int{eot}, allowed(m), "named EOG allowed by the grammar")
		require.NoError(t, m.AcceptToken(eot))
		assert.True(t, m.CanEnd())
	})
	t.Run("named by id and negated", func(t *testing.T) {
		m := compile(t, `root ::= (!<[`+itoa(other)+`]>)* <[`+itoa(other)+`]>`, v).NewMatcher()
		assert.Equal(t, []int{0, 1, think, other}, allowed(m), "any token but <other>, or <other> itself")
		require.NoError(t, m.AcceptToken(think))
		require.NoError(t, m.AcceptToken(other))
		assert.True(t, m.CanEnd())
	})
	t.Run("unknown name", func(t *testing.T) {
		g, err := gbnf.Parse(`root ::= <|nope|>`)
		require.NoError(t, err)
		_, err = engine.Compile(g, v)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "<|nope|>")
	})
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestMaskWidthAndPadding(t *testing.T) {
	v := newListVocab("a", "b")
	m := compile(t, `root ::= [a-z]*`, v).NewMatcher()
	mask := []uint32{0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF} // model vocabulary of 96 ids
	require.NoError(t, m.FillMask(mask))
	assert.Equal(t, []uint32{0b11, 0, 0}, mask)
	require.NoError(t, m.FillMask(mask[:0])) // zero width: nothing to do, no panic
}

func TestRollbackCloneReset(t *testing.T) {
	v := newListVocab("a", "b", "c", "ab")
	gr := compile(t, `root ::= "a" "b" "c"`, v)
	m := gr.NewMatcher()
	require.NoError(t, m.AcceptToken(0))
	require.NoError(t, m.AcceptToken(1))
	assert.Equal(t, []int{2}, allowed(m))

	c := m.Clone()
	require.NoError(t, m.Rollback(2))
	assert.Equal(t, []int{0, 3}, allowed(m), "back at the start")
	assert.Equal(t, []int{2}, allowed(c), "the clone is independent")

	require.NoError(t, m.AcceptToken(3))
	assert.Equal(t, []int{2}, allowed(m))
	require.Error(t, m.Rollback(2), "only one step in history")
	require.NoError(t, m.Rollback(1))
	assert.Equal(t, []int{0, 3}, allowed(m))

	require.NoError(t, c.AcceptToken(2))
	assert.True(t, c.CanEnd())
	c.Reset()
	assert.False(t, c.CanEnd())
	assert.Equal(t, 0, c.History())
	assert.Equal(t, []int{0, 3}, allowed(c))

	// a rejected token changes nothing
	require.Error(t, c.AcceptToken(2))
	assert.Equal(t, 0, c.History())
}

func TestAcceptBytesReportsOffset(t *testing.T) {
	v := newListVocab("a")
	m := compile(t, `root ::= "abc" [0-9]+`, v).NewMatcher()
	err := m.AcceptBytes([]byte("abc12x"))
	require.Error(t, err)
	var rej *engine.RejectError
	require.ErrorAs(t, err, &rej)
	assert.Equal(t, 5, rej.Offset)
	assert.Contains(t, err.Error(), "[0-9]")
	require.NoError(t, m.AcceptBytes([]byte("abc12")))
	assert.True(t, m.CanEnd())
}

func TestAcceptTokenErrorNamesToken(t *testing.T) {
	v := newListVocab("a", "hello")
	m := compile(t, `root ::= "a"+`, v).NewMatcher()
	err := m.AcceptToken(1)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "token 1")
	assert.Contains(t, err.Error(), `"hello"`)
	assert.Contains(t, err.Error(), `'a'`)
}

func TestLazyTriggers(t *testing.T) {
	v := newListVocab("hi ", "<tool", "_call>", "{", "}", "x", "<tool_call>{", "</think>", "\n{")
	toolTok := v.addSpecial("<|tool|>", false)
	eos := v.addSpecial("</s>", true)
	const grammar = `root ::= ("<tool_call>" | <|tool|>)? "{" [x]* "}"`
	all := func(m *engine.Matcher) []int { return allowed(m) }
	everything := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, toolTok, eos}

	t.Run("token", func(t *testing.T) {
		m := compile(t, grammar, v, engine.WithLazy(engine.Triggers{Tokens: []int{toolTok}})).NewMatcher()
		assert.Equal(t, everything, all(m))
		require.NoError(t, m.AcceptToken(0))
		assert.True(t, m.Awaiting())
		require.NoError(t, m.AcceptToken(toolTok))
		assert.False(t, m.Awaiting())
		assert.Equal(t, []int{3}, all(m))
	})
	t.Run("word spanning tokens", func(t *testing.T) {
		m := compile(t, grammar, v, engine.WithLazy(engine.Triggers{Words: []string{"<tool_call>"}})).NewMatcher()
		require.NoError(t, m.AcceptToken(0))
		require.NoError(t, m.AcceptToken(1))
		assert.True(t, m.Awaiting())
		require.NoError(t, m.AcceptToken(2)) // "<tool_call>" complete: the grammar consumed it
		assert.False(t, m.Awaiting())
		assert.Equal(t, []int{3}, all(m))
		require.NoError(t, m.Rollback(1))
		assert.True(t, m.Awaiting(), "rollback re-arms the trigger")
		require.NoError(t, m.AcceptToken(6))
		assert.Equal(t, []int{4, 5}, all(m))
	})
	t.Run("pattern anywhere with group", func(t *testing.T) {
		// llama.cpp: a PATTERN's constrained text starts where its match starts (its
		// groups sit inside the alternation's own group 1); a PATTERN_FULL's starts at
		// its first non-empty group.
		m := compile(t, grammar, v, engine.WithLazy(engine.Triggers{Patterns: []string{`\n(\{)`}})).NewMatcher()
		require.NoError(t, m.AcceptToken(0))
		require.Error(t, m.AcceptToken(8), `the constrained text "\n{" does not start the grammar`)
		m = compile(t, grammar, v, engine.WithLazy(engine.Triggers{PatternsFull: []string{`[\s\S]*\n(\{)[\s\S]*`}})).NewMatcher()
		require.NoError(t, m.AcceptToken(0))
		require.NoError(t, m.AcceptToken(8)) // "\n{": constrained text starts at "{"
		assert.False(t, m.Awaiting())
		assert.Equal(t, []int{4, 5}, all(m))
	})
	t.Run("pattern at start only", func(t *testing.T) {
		gr := compile(t, grammar, v, engine.WithLazy(engine.Triggers{PatternsAtStart: []string{`\{`}}))
		m := gr.NewMatcher()
		require.NoError(t, m.AcceptToken(0))
		require.NoError(t, m.AcceptToken(3))
		assert.True(t, m.Awaiting(), "not at the start")
		m2 := gr.NewMatcher()
		require.NoError(t, m2.AcceptToken(3))
		assert.False(t, m2.Awaiting())
		assert.Equal(t, []int{4, 5}, all(m2))
	})
	t.Run("after marker", func(t *testing.T) {
		m := compile(t, grammar, v, engine.WithLazy(engine.Triggers{After: "</think>"})).NewMatcher()
		require.NoError(t, m.AcceptToken(6)) // grammar-valid text while thinking: ignored
		require.NoError(t, m.AcceptToken(7))
		assert.False(t, m.Awaiting())
		assert.Equal(t, []int{1, 3, 6, toolTok}, all(m), "the grammar's start")
		assert.True(t, m.Clone().AcceptToken(0) != nil, "constrained now")
	})
	t.Run("trigger text the grammar refuses", func(t *testing.T) {
		m := compile(t, grammar, v, engine.WithLazy(engine.Triggers{Words: []string{"hi"}})).NewMatcher()
		err := m.AcceptToken(0)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "trigger")
		assert.True(t, m.Awaiting())
	})
}

func TestPathologicalGrammars(t *testing.T) {
	v := newListVocab("a", "b", "aa")
	t.Run("six nested {0,99}", func(t *testing.T) {
		start := time.Now()
		g, err := gbnf.Parse(`root ::= (((((([^x]*){0,99}){0,99}){0,99}){0,99}){0,99}){0,99}`)
		if err == nil {
			_, err = engine.Compile(g, v)
		}
		require.Error(t, err)
		assert.Less(t, time.Since(start), time.Second)
	})
	t.Run("stack cap at compile", func(t *testing.T) {
		start := time.Now()
		g, err := gbnf.Parse(strings.Replace(manyAlternatives(40, "a", "b"), `root ::= "a" x`, `root ::= x`, 1))
		require.NoError(t, err)
		_, err = engine.Compile(g, v, engine.WithMaxStacks(16))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "too ambiguous")
		assert.Less(t, time.Since(start), time.Second)
	})
	t.Run("stack cap while matching", func(t *testing.T) {
		start := time.Now()
		g, err := gbnf.Parse(nestedOptionals(300, "a", "b"))
		require.NoError(t, err)
		gr, err := engine.Compile(g, v, engine.WithMaxStacks(64))
		require.NoError(t, err)
		m := gr.NewMatcher()
		err = m.AcceptBytes([]byte(strings.Repeat("a", 200)))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "too ambiguous")
		mask := make([]uint32, 1)
		m.FillMask(mask) // still usable
		assert.Less(t, time.Since(start), time.Second)
	})
	t.Run("left recursion in hand-built IR", func(t *testing.T) {
		g := &gbnf.Grammar{Rules: []gbnf.Rule{
			{Name: "root", Alts: []gbnf.Sequence{{{Kind: gbnf.RuleRef, Rule: 1}, {Kind: gbnf.Char, Ranges: []gbnf.Range{{Lo: 'a', Hi: 'a'}}}}}},
			{Name: "x", Alts: []gbnf.Sequence{{}, {{Kind: gbnf.RuleRef, Rule: 0}}}},
		}}
		_, err := engine.Compile(g, v)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "left recursion")
	})
}

func TestHandBuiltIR(t *testing.T) {
	v := newListVocab("a", "b", "ab")
	g := &gbnf.Grammar{
		Rules: []gbnf.Rule{{Name: "root", Alts: []gbnf.Sequence{
			{{Kind: gbnf.Char, Ranges: []gbnf.Range{{Lo: 'a', Hi: 'a'}}}, {Kind: gbnf.Char, Ranges: []gbnf.Range{{Lo: 'b', Hi: 'b'}}}},
		}}},
		Index: map[string]int{"root": 0},
	}
	gr, err := engine.Compile(g, v)
	require.NoError(t, err)
	m := gr.NewMatcher()
	assert.Equal(t, []int{0, 2}, allowed(m))
	_, err = engine.Compile(g, v, engine.WithRoot("nope"))
	require.Error(t, err)
}

// TestConcurrentMatchers shares one Grammar between goroutines (run with -race).
func TestConcurrentMatchers(t *testing.T) {
	v := fuzzVocab()
	gr := compile(t, fuzzGrammars[0], v)
	done := make(chan error, 4)
	for w := 0; w < 4; w++ {
		go func() {
			m := gr.NewMatcher()
			c := m.Clone()
			for _, s := range []string{`{"a": 12}`, `{"ab": ["x", {}]}`} {
				m.Reset()
				if err := m.AcceptBytes([]byte(s)); err != nil {
					done <- err
					return
				}
				_ = allowed(m)
				_ = allowed(c)
			}
			done <- nil
		}()
	}
	for w := 0; w < 4; w++ {
		require.NoError(t, <-done)
	}
}
