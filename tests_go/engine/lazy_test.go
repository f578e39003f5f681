package engine_test

import (
	"bytes"
	"math/rand/v2"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/engine"
	"github.com/tetherlm/tether/gocore/gbnf"
	"github.com/tetherlm/tether/gocore/vocab"
	"github.com/tetherlm/tether/tests_go/internal/testdata"
)

// Trigger cases written from llama.cpp's code: common/chat.cpp's trigger definitions
// for each tool-call format, common_sampler_init (WORD and PATTERN joined into
// "^[\s\S]*?(w1|w2|p1)[\s\S]*"; PATTERN_FULL anchored at both ends) and
// llama_grammar_accept_impl (the buffer holds every token's piece, special tokens
// rendered; on a match the tokens overlapping the constrained text are replayed, the
// first one from the start position on).

var (
	lazyVocabMu sync.Mutex
	lazyVocabs  = map[string]*vocab.Vocab{}
)

// lazyVocab loads a test tokenizer. "llama31" is the Llama-3 tokenizer with id 128010
// renamed <|python_tag|>, which is what Llama 3.1 did with that reserved special token.
func lazyVocab(t *testing.T, name string) *vocab.Vocab {
	t.Helper()
	lazyVocabMu.Lock()
	defer lazyVocabMu.Unlock()
	if v := lazyVocabs[name]; v != nil {
		return v
	}
	var v *vocab.Vocab
	var err error
	if name == "llama31" {
		raw := testdata.ReadTokenizerFile(t, "llama3", "tokenizer.json")
		raw = bytes.ReplaceAll(raw, []byte(`"<|reserved_special_token_2|>"`), []byte(`"<|python_tag|>"`))
		v, err = vocab.Load(raw, vocab.WithoutCache())
	} else {
		v = testdata.Vocab(t, name)
	}
	require.NoError(t, err)
	lazyVocabs[name] = v
	return v
}

// lazyPiece is generated output: text (tokenized greedily, longest token first, with real
// token ids of the vocabulary) or one token given by its name.
type lazyPiece struct {
	text string
	tok  string
}

func lazyText(s string) lazyPiece { return lazyPiece{text: s} }
func lazyTok(s string) lazyPiece  { return lazyPiece{tok: s} }

var (
	lazyIndexMu sync.Mutex
	lazyIndexes = map[*vocab.Vocab]map[string]int{}
)

func lazyTokens(t *testing.T, v *vocab.Vocab, s string) []int {
	t.Helper()
	lazyIndexMu.Lock()
	idx := lazyIndexes[v]
	if idx == nil {
		idx = map[string]int{}
		for id := 0; id < v.Size(); id++ {
			if b := v.TokenBytes(id); len(b) > 0 && !v.IsSpecial(id) {
				if _, ok := idx[string(b)]; !ok {
					idx[string(b)] = id
				}
			}
		}
		lazyIndexes[v] = idx
	}
	lazyIndexMu.Unlock()
	var ids []int
	for len(s) > 0 {
		n := min(len(s), 48)
		for ; n > 0; n-- {
			if id, ok := idx[s[:n]]; ok {
				ids = append(ids, id)
				break
			}
		}
		require.Greater(t, n, 0, "no token starts %q", s)
		s = s[n:]
	}
	return ids
}

func (p lazyPiece) ids(t *testing.T, v *vocab.Vocab) []int {
	if p.tok != "" {
		id, ok := v.TokenID(p.tok)
		require.True(t, ok, "token %q", p.tok)
		return []int{id}
	}
	return lazyTokens(t, v, p.text)
}

const lazyHermesPattern = `(?:<think>[\s\S]*?</think>\s*)?\s*(<tool_call>|<function|(?:` + "```" + `(?:json|xml)?\n\s*)?(?:<function_call>|<tools>|<xml><json>|<response>)?\s*\{\s*"name"\s*:\s*"(?:get_weather)")[\s\S]*`

const lazyDeepseekPattern = `(?:<think>[\s\S]*?</think>\s*)?(<｜tool▁calls▁begin｜>|<｜tool_calls_begin｜>|<｜tool calls begin｜>|<｜tool\\_calls\\_begin｜>|<｜tool▁calls｜>)[\s\S]*`

func TestLazyToolCallFormats(t *testing.T) {
	const weatherJSON = `{"name": "get_weather", "arguments": {"city": "Paris"}}`
	cases := []struct {
		name      string
		tokenizer string
		grammar   string
		triggers  engine.Triggers
		pieces    []lazyPiece
		firesIn   int    // the lazyPiece during which the grammar wakes up; -1: never
		rejectIn  int    // the lazyPiece whose token the grammar refuses; -1: none
		rejectMsg string // part of that error
		canEnd    bool   // after all pieces (when it fired)
	}{
		{
			name: "llama-3.1 <|python_tag|> word, preserved: the special token is grammar text", tokenizer: "llama31",
			grammar:  `root ::= "<|python_tag|>" [a-z_]+ ".call(" [^)]* ")"`,
			triggers: engine.Triggers{Words: []string{"<|python_tag|>"}, PreservedTokens: []string{"<|python_tag|>"}},
			pieces:   []lazyPiece{lazyText("Let me search."), lazyTok("<|python_tag|>"), lazyText(`brave_search.call(query="tether")`)},
			firesIn:  1, rejectIn: -1, canEnd: true,
		},
		{
			name: "llama-3.1 <|python_tag|> word, not preserved: a grammar literal does not match a special token", tokenizer: "llama31",
			grammar:  `root ::= "<|python_tag|>" [a-z_]+ ".call(" [^)]* ")"`,
			triggers: engine.Triggers{Words: []string{"<|python_tag|>"}},
			pieces:   []lazyPiece{lazyText("Let me search."), lazyTok("<|python_tag|>")},
			firesIn:  -1, rejectIn: 1, rejectMsg: "preserved tokens",
		},
		{
			name: "llama-3.1 <|python_tag|> word, grammar names the token", tokenizer: "llama31",
			grammar:  `root ::= <|python_tag|> [a-z_]+ ".call(" [^)]* ")"`,
			triggers: engine.Triggers{Words: []string{"<|python_tag|>"}},
			pieces:   []lazyPiece{lazyText("Let me search."), lazyTok("<|python_tag|>"), lazyText(`brave_search.call(query="tether")`)},
			firesIn:  1, rejectIn: -1, canEnd: true,
		},
		{
			name: "llama-3.x JSON call: PATTERN_FULL from the start", tokenizer: "llama3",
			grammar:  `root ::= "{\"name\": \"" [a-z_]+ "\", \"parameters\": {" [^}]* "}}"`,
			triggers: engine.Triggers{PatternsFull: []string{`(\{\s*(?:"type"\s*:\s*"function"\s*,\s*)?"name"\s*:\s*")[\s\S]*`}},
			pieces:   []lazyPiece{lazyText(`{"name": "`), lazyText(`get_weather", "parameters": {"city": "Paris"}}`)},
			firesIn:  0, rejectIn: -1, canEnd: true,
		},
		{
			name: "llama-3.x JSON call after prose: PATTERN_FULL must match the whole output", tokenizer: "llama3",
			grammar:  `root ::= "{\"name\": \"" [a-z_]+ "\", \"parameters\": {" [^}]* "}}"`,
			triggers: engine.Triggers{PatternsFull: []string{`(\{\s*(?:"type"\s*:\s*"function"\s*,\s*)?"name"\s*:\s*")[\s\S]*`}},
			pieces:   []lazyPiece{lazyText(`Sure! {"name": "`), lazyText(`get_weather", "parameters": {}}`)},
			firesIn:  -1, rejectIn: -1,
		},
		{
			name: `PATTERN_FULL \{a does not fire on "{abc" (whole buffer, not a prefix)`, tokenizer: "llama3",
			grammar:  `root ::= "{" [a-z]* "}"`,
			triggers: engine.Triggers{PatternsFull: []string{`\{a`}},
			pieces:   []lazyPiece{lazyText("{"), lazyText("abc")},
			firesIn:  -1, rejectIn: -1,
		},
		{
			name: `PATTERN_FULL \{a[\s\S]* fires on "{abc"`, tokenizer: "llama3",
			grammar:  `root ::= "{" [a-z]* "}"`,
			triggers: engine.Triggers{PatternsFull: []string{`\{a[\s\S]*`}},
			pieces:   []lazyPiece{lazyText("{"), lazyText("abc"), lazyText("}")},
			firesIn:  1, rejectIn: -1, canEnd: true,
		},
		{
			name: "qwen3 / hermes <tool_call> after thinking", tokenizer: "qwen3",
			grammar:  `root ::= "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {" [^}]* "}}\n</tool_call>"`,
			triggers: engine.Triggers{PatternsFull: []string{lazyHermesPattern}},
			pieces: []lazyPiece{lazyTok("<think>"), lazyText("The user wants the weather."), lazyTok("</think>"), lazyText("\n\n"),
				lazyTok("<tool_call>"), lazyText("\n" + weatherJSON + "\n"), lazyTok("</tool_call>")},
			firesIn: 4, rejectIn: -1, canEnd: true,
		},
		{
			name: "qwen3 / hermes, thinking forced open: first non-empty group is </think>", tokenizer: "qwen3",
			grammar:  `root ::= "</think>" [ \n]* "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {" [^}]* "}}\n</tool_call>"`,
			triggers: engine.Triggers{PatternsFull: []string{`[\s\S]*?(</think>\s*)\s*(<tool_call>|<function)[\s\S]*`}},
			pieces: []lazyPiece{lazyText("The user wants the weather."), lazyTok("</think>"), lazyText("\n\n"), lazyTok("<tool_call>"),
				lazyText("\n" + weatherJSON + "\n"), lazyTok("</tool_call>")},
			firesIn: 3, rejectIn: -1, canEnd: true,
		},
		{
			name: "qwen3 / hermes <tool_call> after prose does not fire (llama.cpp's pattern is anchored)", tokenizer: "qwen3",
			grammar:  `root ::= "<tool_call>" [^<]* "</tool_call>"`,
			triggers: engine.Triggers{PatternsFull: []string{lazyHermesPattern}},
			pieces:   []lazyPiece{lazyText("Let me check that."), lazyTok("<tool_call>"), lazyText("\n" + weatherJSON + "\n")},
			firesIn:  -1, rejectIn: -1,
		},
		{
			name: "qwen3 <tool_call> word anywhere", tokenizer: "qwen3",
			grammar:  `root ::= "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {" [^}]* "}}\n</tool_call>"`,
			triggers: engine.Triggers{Words: []string{"<tool_call>"}},
			pieces:   []lazyPiece{lazyText("Let me check that. "), lazyTok("<tool_call>"), lazyText("\n" + weatherJSON + "\n"), lazyTok("</tool_call>")},
			firesIn:  1, rejectIn: -1, canEnd: true,
		},
		{
			name: "deepseek-r1 <｜tool▁calls▁begin｜> spelled in text tokens", tokenizer: "qwen3",
			grammar:  `root ::= "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>" [a-z_]+ "\n` + "```" + `json\n" [^` + "`" + `]* "` + "```" + `<｜tool▁call▁end｜><｜tool▁calls▁end｜>"`,
			triggers: engine.Triggers{PatternsFull: []string{lazyDeepseekPattern}},
			pieces: []lazyPiece{lazyTok("<think>"), lazyText("ok"), lazyTok("</think>"),
				lazyText("\n\n<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>")},
			firesIn: 3, rejectIn: -1, canEnd: true,
		},
		{
			name: "mistral-nemo [TOOL_CALLS] word inside a token (partial replay)", tokenizer: "llama2",
			grammar:  `root ::= "[TOOL_CALLS][" [^\]]* "]"`,
			triggers: engine.Triggers{Words: []string{"[TOOL_CALLS]"}},
			pieces:   []lazyPiece{lazyText("Sure"), lazyText(" [TOOL_CALLS]"), lazyText("[" + weatherJSON + "]")},
			firesIn:  1, rejectIn: -1, canEnd: true,
		},
		{
			name: `"call" <|start_header_id|> "abc": a special token inside the triggered text is replayed as a token`, tokenizer: "llama3",
			grammar:  `root ::= "call" <|start_header_id|> "abc" [a-z]*`,
			triggers: engine.Triggers{Patterns: []string{`call<\|start_header_id\|>abc`}},
			pieces:   []lazyPiece{lazyText("x call"), lazyTok("<|start_header_id|>"), lazyText("abc"), lazyText("def")},
			firesIn:  2, rejectIn: -1, canEnd: true,
		},
		{
			name: `PATTERN_FULL (X)?CALL:\s*(\{): first non-empty group`, tokenizer: "llama3",
			grammar:  `root ::= "{" [a-z]* "}"`,
			triggers: engine.Triggers{PatternsFull: []string{`(X)?CALL:\s*(\{)`}},
			pieces:   []lazyPiece{lazyText("CALL:"), lazyText(" {"), lazyText("ab}")},
			firesIn:  1, rejectIn: -1, canEnd: true,
		},
		{
			name: `PATTERN_FULL (X)?CALL:\s*(\{) with X: the constrained text starts at X`, tokenizer: "llama3",
			grammar:  `root ::= "{" [a-z]* "}"`,
			triggers: engine.Triggers{PatternsFull: []string{`(X)?CALL:\s*(\{)`}},
			pieces:   []lazyPiece{lazyText("XCALL:"), lazyText(" {")},
			firesIn:  -1, rejectIn: 1, rejectMsg: `"XCALL: {"`,
		},
		{
			name: "PATTERN anywhere: the match start, not its own group, starts the grammar", tokenizer: "llama3",
			grammar:  `root ::= "CALL: {" [a-z]* "}"`,
			triggers: engine.Triggers{Patterns: []string{`CALL:\s*(\{)`}},
			pieces:   []lazyPiece{lazyText("ok CALL:"), lazyText(" {"), lazyText("ab}")},
			firesIn:  1, rejectIn: -1, canEnd: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := lazyVocab(t, tc.tokenizer)
			m := compile(t, tc.grammar, v, engine.WithLazy(tc.triggers)).NewMatcher()
			fired := -1
			for i, p := range tc.pieces {
				for _, id := range p.ids(t, v) {
					err := m.AcceptToken(id)
					if i == tc.rejectIn && err != nil {
						assert.Contains(t, err.Error(), tc.rejectMsg)
						assert.True(t, m.Awaiting(), "a refused trigger leaves the matcher awaiting")
						return
					}
					require.NoError(t, err, "lazyPiece %d (%q), token %d (%q)", i, p.text+p.tok, id, v.Text(id))
					if fired < 0 && !m.Awaiting() {
						fired = i
					}
				}
			}
			require.Equal(t, -1, tc.rejectIn, "expected a rejection in lazyPiece %d", tc.rejectIn)
			assert.Equal(t, tc.firesIn, fired, "the lazyPiece the grammar wakes up in")
			if fired >= 0 {
				assert.Equal(t, tc.canEnd, m.CanEnd())
			}
		})
	}
}

func TestLazyReplayRollbackAndClone(t *testing.T) {
	v := lazyVocab(t, "llama3")
	gr := compile(t, `root ::= "call" <|start_header_id|> "abc" [a-z]*`, v,
		engine.WithLazy(engine.Triggers{Patterns: []string{`call<\|start_header_id\|>abc`}}))
	m := gr.NewMatcher()
	hdr, _ := v.TokenID("<|start_header_id|>")
	for _, id := range append(lazyTokens(t, v, "x call"), hdr) {
		require.NoError(t, m.AcceptToken(id))
	}
	assert.True(t, m.Awaiting())
	c := m.Clone()
	abc := lazyTokens(t, v, "abc")
	require.Len(t, abc, 1)
	require.NoError(t, m.AcceptToken(abc[0]))
	assert.False(t, m.Awaiting())
	require.NoError(t, m.Rollback(1))
	assert.True(t, m.Awaiting(), "rollback re-arms the trigger")
	require.NoError(t, m.AcceptToken(abc[0]), "the buffered tokens are replayed again")
	assert.False(t, m.Awaiting())
	assert.True(t, m.CanEnd())

	require.NoError(t, c.AcceptToken(abc[0]), "a clone carries the buffered tokens")
	assert.False(t, c.Awaiting())
	assert.True(t, c.CanEnd())

	m.Reset()
	require.NoError(t, m.AcceptToken(abc[0]))
	assert.True(t, m.Awaiting(), "after Reset nothing is buffered")
}

func TestLazyPreservedTokenErrors(t *testing.T) {
	v := lazyVocab(t, "llama3")
	err := lazyCompileErr(t, `root ::= "x"`, v, engine.WithLazy(engine.Triggers{Words: []string{"a\xffb"}}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not valid UTF-8")
	g := lazyCompileErr(t, `root ::= "x"`, v, engine.WithLazy(engine.Triggers{Words: []string{"x"}, PreservedTokens: []string{"<|no_such_token|>"}}))
	require.Error(t, g)
	assert.Contains(t, g.Error(), `preserved token "<|no_such_token|>"`)
}

func TestLazyPreservedTokenInMasks(t *testing.T) {
	v := lazyVocab(t, "llama31")
	tag, _ := v.TokenID("<|python_tag|>")
	grammar := `root ::= "<|python_tag|>" [a-z]+`
	m := compile(t, grammar, v, engine.WithLazy(engine.Triggers{Tokens: []int{tag}, PreservedTokens: []string{"<|python_tag|>"}})).NewMatcher()
	require.NoError(t, m.AcceptToken(tag), "a preserved trigger token is taken as its text")
	assert.False(t, m.Awaiting())
	// Without preserving it, the special token can only come where the grammar names it.
	m = compile(t, grammar, v, engine.WithLazy(engine.Triggers{Tokens: []int{tag}})).NewMatcher()
	require.Error(t, m.AcceptToken(tag))
	// Preserved tokens are text in masks too: after the trigger fires on "x", the
	// grammar's literal "<|python_tag|>" allows the special token.
	m = compile(t, `root ::= "x" "<|python_tag|>" [a-z]+`, v, engine.WithLazy(engine.Triggers{Words: []string{"x"}, PreservedTokens: []string{"<|python_tag|>"}})).NewMatcher()
	x := lazyTokens(t, v, "x")
	require.NoError(t, m.AcceptToken(x[0]))
	assert.False(t, m.Awaiting())
	ok, err := m.IsAllowed(tag)
	require.NoError(t, err)
	assert.True(t, ok)
	allowed, err := m.AllowedTokens(nil)
	require.NoError(t, err)
	assert.Contains(t, allowed, tag)
}

// compileErr parses src and returns Compile's error.
func lazyCompileErr(t *testing.T, src string, v engine.Vocabulary, opts ...engine.Option) error {
	t.Helper()
	g, err := gbnf.Parse(src)
	require.NoError(t, err)
	_, err = engine.Compile(g, v, opts...)
	return err
}

// TestLazyIncrementalMatchesRegexp: trigger patterns are checked incrementally (a Pike
// VM over the new bytes); a PATTERN_FULL must fire at exactly the step where Go's
// regexp, run on the whole buffer as llama.cpp runs std::regex_match, first matches,
// and a PATTERN or word where a search of the whole buffer first finds one — including
// when tokens split UTF-8 characters and around ^, $, \b and \B.
func TestLazyIncrementalMatchesRegexp(t *testing.T) {
	patterns := []string{
		`[\s\S]*?(<tc>)[\s\S]*`,
		`(?:<think>[\s\S]*?</think>\s*)?\s*(<tc>|\{"n")[\s\S]*`,
		`(X)?CALL:\s*(\{)`,
		`[^é]*é☃[\s\S]*`,
		`.*\bab\b.*`,
		`[\s\S]*\Bb<[\s\S]*`,
		`(?i)[\s\S]*TC>`,
		`a*`,
		`[\s\S]*\n$`,
		`(?s).*☃`,
		`[\s\S]*\n`,
		`[\s\S]*é`,
		`[\s\S]*\Bc[\s\S]*`,
		`[\s\S]*\bc[\s\S]*`,
		`[\s\S]*c\b`,
		`[^\n]*\n[^\n]*\n[\s\S]*`,
		`\Bc\b`,
		`^ab`,
		`c$`,
		`é☃|X\{`,
		`b\s*<`,
		`(?i)caLL`,
	}
	alphabet := []string{"a", "b", " ", "\n", "<", ">", "t", "c", "c", "é", "☃", "X", "CALL:", "{", "\"n\"", "<think>", "</think>", "<tc>", "\xff", "é☃"}
	r := rand.New(rand.NewPCG(5, 6))
	fired := 0
	for pi, p := range patterns {
		for _, mode := range []string{"full", "anywhere", "word"} {
			var trig engine.Triggers
			var ref interface{ Match([]byte) bool }
			switch mode {
			case "full":
				trig, ref = engine.Triggers{PatternsFull: []string{p}}, regexp.MustCompile(`^(?:`+p+`)$`)
			case "anywhere":
				trig, ref = engine.Triggers{Patterns: []string{p}}, regexp.MustCompile(`(`+p+`)`)
			case "word":
				w := strings.ReplaceAll(alphabet[pi%len(alphabet)]+alphabet[(pi*7+3)%len(alphabet)], "\xff", "é")
				trig, ref = engine.Triggers{Words: []string{w}}, containsRef(w)
			}
			for trial := 0; trial < 100; trial++ {
				var text []byte
				for len(text) < 40 {
					text = append(text, alphabet[r.IntN(len(alphabet))]...)
				}
				// Split into tokens at random byte offsets (partial UTF-8 included).
				var pieces []string
				for rest := text; len(rest) > 0; {
					n := 1 + r.IntN(min(4, len(rest)))
					pieces = append(pieces, string(rest[:n]))
					rest = rest[n:]
				}
				v := newListVocab(pieces...)
				gr := compile(t, `root ::= [^\x00]*`, v, engine.WithLazy(trig))
				m := gr.NewMatcher()
				want, got := -1, -1
				var buf []byte
				for i, pc := range pieces {
					buf = append(buf, pc...)
					if want < 0 && ref.Match(buf) {
						want = i
					}
					err := m.AcceptToken(i)
					if err != nil {
						// The trigger fired but the grammar refused the replayed
						// text (invalid UTF-8): that still shows the step it fired.
						require.Contains(t, err.Error(), "trigger fired")
						got = i
						break
					}
					if !m.Awaiting() {
						got = i
						break
					}
					if want >= 0 {
						break
					}
				}
				require.Equal(t, want, got, "%s pattern %d %q on %q", mode, pi, p, buf)
				if want >= 0 {
					fired++
				}
			}
		}
	}
	assert.Greater(t, fired, 1000, "the cases must fire often enough to test something")
}

// containsRef finds a word as bytes (a word may hold invalid UTF-8).
type containsRef string

func (w containsRef) Match(b []byte) bool { return bytes.Contains(b, []byte(w)) }
