package engine_test

import (
	"bytes"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/engine"
	"github.com/tetherlm/tether/gocore/gbnf"
	"github.com/tetherlm/tether/gocore/schema"
	"github.com/tetherlm/tether/gocore/vocab"
)

// randGrammar writes a random GBNF grammar: a few rules over literals (ASCII and
// multi-byte), character classes (plain, negated, multi-byte ranges), references
// (recursive ones only behind a literal) and repetitions.
func randGrammar(r *rand.Rand) string {
	lits := []string{"a", "b", "c", "ab", "the", " ", "\\n", "é", "日本", "😀", "{", "\\\"", "1", "12", "x", "in", " t", "ü"}
	classes := []string{"[a-z]", "[^\"\\n]", "[0-9]", "[à-ÿ]", "[一-龥]", "[^a-z]", "[ -~]", "[a-c]", "[ab]", "[^x]", ".", "[😀-😊]", "[\\x00-\\x7F]"}
	reps := []string{"*", "+", "?", "{0,3}", "{1,2}", "{2}"}
	n := 1 + r.Intn(4)
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "r%d ::= ", i)
		alts := 1 + r.Intn(3)
		for a := 0; a < alts; a++ {
			if a > 0 {
				b.WriteString(" | ")
			}
			items := 1 + r.Intn(4)
			guarded := false
			for k := 0; k < items; k++ {
				var it string
				switch x := r.Intn(10); {
				case x < 4:
					it = `"` + lits[r.Intn(len(lits))] + `"`
					guarded = true
				case x < 7:
					it = classes[r.Intn(len(classes))]
					guarded = true
				case x < 8:
					j := i + 1 + r.Intn(n)
					if j >= n {
						if !guarded {
							it = `"` + lits[r.Intn(len(lits))] + `"`
							guarded = true
							break
						}
						j = r.Intn(n)
					}
					it = fmt.Sprintf("r%d", j)
				default:
					it = "(" + `"` + lits[r.Intn(len(lits))] + `" ` + classes[r.Intn(len(classes))] + ")" + reps[r.Intn(len(reps))]
				}
				b.WriteString(it + " ")
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// TestPropertyMaskEqualsBruteForce compares the fast mask with a per-token check on
// random grammars and random reachable states, with the real Llama-3 vocabulary.
//
// The per-token check is IsAllowed (the verdict AcceptToken gives; checked against a
// real Clone+AcceptToken on a sample of every state). It runs on every token whose
// first byte the state accepts (AcceptBytes on a clone); a token whose first byte is
// refused cannot be accepted, and the test checks no such token is in the mask. One
// state in 25 is checked exhaustively over all 128,256 tokens.
func TestPropertyMaskEqualsBruteForce(t *testing.T) {
	v := llama3Vocab(t)
	size := v.Size()
	states, grammars := 12000, 150
	if testing.Short() {
		states, grammars = 1500, 25
	}
	r := rand.New(rand.NewSource(42))
	// tokens that end inside a UTF-8 character
	var partialToks []int
	for id := 0; id < size; id++ {
		if b := v.TokenBytes(id); len(b) > 0 && !v.IsSpecial(id) && !utf8.Valid(b) {
			partialToks = append(partialToks, id)
		}
	}
	require.NotEmpty(t, partialToks)
	mask := make([]uint32, (size+31)/32+1) // one word of padding
	allowed := make([]int, 0, size)
	checked, exhaustive, partialStates, disagreements, overflowed := 0, 0, 0, 0, 0
	perGrammar := states / grammars
	for gi := 0; checked < states; gi++ {
		src := randGrammar(r)
		g, err := gbnf.Parse(src, gbnf.WithRoot("r0"))
		if err != nil {
			gi--
			continue
		}
		// One grammar in five runs under the smallest stack limit its start
		// state fits in (up to 64), so that limit states are reached and
		// checked (every side must report the limit).
		gr, err := engine.Compile(g, v)
		if err != nil {
			gi--
			continue
		}
		if gi%5 == 4 {
			for k := 1; k <= 64; k++ {
				if tight, err := engine.Compile(g, v, engine.WithMaxStacks(k)); err == nil {
					gr = tight
					break
				}
			}
		}
		m := gr.NewMatcher()
		for s := 0; s < perGrammar && checked < states; s++ {
			maskErr := m.FillMask(mask)
			allowed = allowed[:0]
			for id := 0; id < len(mask)*32; id++ {
				if mask[id>>5]&(1<<(uint(id)&31)) != 0 {
					require.Less(t, id, size, "padding id %d set", id)
					allowed = append(allowed, id)
				}
			}
			full := s%25 == 0
			bad := bruteForceDisagreements(m, v, mask, maskErr, full)
			// IsAllowed agrees with a real clone + accept, on a sample.
			sample := make([]int, 0, 20)
			for k := 0; k < 20; k++ {
				id := r.Intn(size)
				if k < 5 && len(allowed) > 0 {
					id = allowed[r.Intn(len(allowed))]
				}
				sample = append(sample, id)
			}
			bad = append(bad, stateDisagreements(m, v, mask, maskErr, sample, 1)...)
			if len(bad) > 0 {
				disagreements += len(bad)
				t.Fatalf("grammar:\n%s\nstate %d: %d disagreements, first: %v", src, s, len(bad), bad[:min(5, len(bad))])
			}
			checked++
			if maskErr != nil {
				// A limit state, checked above (every verdict a limit error or
				// consistent): nothing to step on with.
				overflowed++
				m.Reset()
				continue
			}
			if full {
				exhaustive++
			}
			// next state: a random allowed token, often one ending inside a character
			if len(allowed) == 0 {
				m.Reset()
				continue
			}
			next := allowed[r.Intn(len(allowed))]
			if r.Intn(3) == 0 {
				for k := 0; k < 50; k++ {
					id := partialToks[r.Intn(len(partialToks))]
					if mask[id>>5]&(1<<(uint(id)&31)) != 0 {
						next = id
						break
					}
				}
			}
			if v.IsEOG(next) || r.Intn(40) == 0 {
				m.Reset()
				continue
			}
			require.NoError(t, m.AcceptToken(next))
			if !utf8.Valid(v.TokenBytes(next)) {
				partialStates++
			}
		}
	}
	t.Logf("%d states checked (%d exhaustively over all %d tokens), %d reached by a token ending inside a UTF-8 character; %d disagreements; %d limit states (checked)",
		checked, exhaustive, size, partialStates, disagreements, overflowed)
	require.GreaterOrEqual(t, checked, states)
}

// bruteForceDisagreements checks the mask m filled (with error maskErr) against a
// per-token check (see stateDisagreements) of every token (full) or of every token
// whose first byte the matcher can take (the others must be out of the mask), and
// describes the tokens on which they disagree.
func bruteForceDisagreements(m *engine.Matcher, v *vocab.Vocab, mask []uint32, maskErr error, full bool) []string {
	var viable [256]bool
	var bad []string
	for b := 0; b < 256; b++ {
		c := m.Clone()
		err := c.AcceptBytes([]byte{byte(b)})
		viable[b] = err == nil || isLimit(err)
		if maskErr == nil && isLimit(err) && !full {
			full = true // a limit on a first byte: check every token
		}
	}
	var ids []int
	for id := 0; id < v.Size(); id++ {
		tb := v.TokenBytes(id)
		if full || len(tb) == 0 || v.IsSpecial(id) || v.IsEOG(id) || viable[tb[0]] {
			ids = append(ids, id)
		} else if bitSet(mask, id) {
			bad = append(bad, fmt.Sprintf("token %d %q: in the mask, but its first byte is refused", id, tb))
		}
	}
	return append(bad, stateDisagreements(m, v, mask, maskErr, ids, 0)...)
}

// TestStructuredGrammarsMaskEqualsBruteForce walks grammars whose masks take the
// engine's shortcuts (runs of configurations over comments and strings, counted
// repetitions unrolled into nested rules, trampolines after whitespace, keys
// shared across positions) with the real Llama-3 vocabulary, checking each mask
// against the per-token check.
func TestStructuredGrammarsMaskEqualsBruteForce(t *testing.T) {
	v := llama3Vocab(t)
	type tc struct {
		name, src string
		states    int    // walked (0: the default)
		walk      string // a text walked token by token after the random walk
	}
	var cases []tc
	for _, f := range loadCases(t).GrammarFiles {
		if f.Name == "c.gbnf" || f.Name == "json.gbnf" {
			cases = append(cases, tc{f.Name, f.Grammar, 0, ""})
		}
	}
	require.Len(t, cases, 2)
	sch, _, err := schema.FromJSONSchema([]byte(`{"type":"object","properties":{
		"name":{"type":"string","maxLength":40},
		"tags":{"type":"array","items":{"type":"string","minLength":2,"maxLength":150}},
		"note":{"type":"string","pattern":"^[a-z ]{3,20}$"}},"required":["name","tags","note"]}`))
	require.NoError(t, err)
	// the converter's newer grammar shapes: counted hostname labels, e-mail,
	// the number automata (multipleOf, decimal bounds), uniqueItems and
	// contains automata, an idn-hostname
	sch2, _, err := schema.FromJSONSchema([]byte(`{"type":"object","properties":{
		"host":{"type":"string","format":"hostname"},"mail":{"type":"string","format":"email"},
		"idn":{"type":"string","format":"idn-hostname"},
		"n":{"type":"number","minimum":-1.25,"exclusiveMaximum":100,"multipleOf":0.75},
		"x":{"type":"number","exclusiveMinimum":0.05,"maximum":12.5},
		"tags":{"type":"array","uniqueItems":true,"items":{"enum":["a","b","c"]}},
		"c":{"type":"array","items":{"type":"integer"},"contains":{"minimum":5},"maxContains":2}},
		"required":["host","mail","idn","n","x","tags","c"]}`))
	require.NoError(t, err)
	// A string whose length is all but fixed (minLength 44, maxLength 45),
	// then more properties: near its end, thousands of tokens (those with the
	// closing quote where it may fall) stay uncertain key after key, and the
	// deeper keys walk them one by one from the shallower key's list.
	sch3, _, err := schema.FromJSONSchema([]byte(`{"type":"array","items":{"type":"object","properties":{
		"user_name":{"type":"string","minLength":44,"maxLength":45},"job_id":{"type":"integer"},"tag":{"type":"string"}},
		"required":["user_name","job_id"],"additionalProperties":false}}`))
	require.NoError(t, err)
	// A string alone with a maxLength (a counter): the first run asked about
	// from a count's configuration may start with a backslash, and the run must
	// then follow the letters (run.go, kindsTo), the escapes still checked.
	sch4, _, err := schema.FromJSONSchema([]byte(`{"type":"string","maxLength":100}`))
	require.NoError(t, err)
	cases = append(cases,
		tc{"bounded-string", sch4, 0, `"tab\there, \"quoted\" \u00e9 and \\ ok\/"`},
		tc{"string-end", sch3, 90, `[{"user_name": "` + strings.Repeat("u", 44) + `", "job_id": 7, "tag": "x"}, {"user_name": "` + strings.Repeat("v", 45) + `", "job_id": 8}]`},
		tc{"schema", sch, 0, ""},
		tc{"schema-automata", sch2, 400, `{"host": "api.example-1.com", "mail": "first.last@mail.example.org", "idn": "bücher.example", ` +
			`"n": 98.25, "x": 0.0501, "tags": ["c", "a"], "c": [1, 7, 2, 5]}`},
		tc{"counted", `root ::= ("\"" [^"]{0,30} "\"" | "/*" ([^*] | "*" [^/])* "*/" | [a-z]{2,9} " ") root?`, 0, ""},
		// Counters (counts above 64 are not unrolled), nested in a group, with
		// a minimum, ambiguous (two ways through "ab"), and unbounded.
		tc{"counters", `root ::= ("\"" [^"]{0,100} "\"" | [a-z]{66,70} " " | ("ab" | "a" | "b"){0,80} "." | ("x" [0-9]){65,} ";" | "é"{0,1000000} "!") root?`, 0, ""},
		// Loops over classes that hold every completion of some lead bytes
		// (accepted whole once the character is complete) and only part of
		// others' (б and 丁 excluded; Cyrillic а-я and ё cut across D0/D1;
		// CJK from U+4E00 cuts E4 and holds E5-E9), so a subtree under a lead
		// byte may be accepted whole only where every completion is in the class.
		tc{"multibyte-runs", `root ::= ("\"" [^"\u0431\u4E01]* "\"" | "<" [\u0400-\u0410а-в ]* ">" | "'" [^'\u00E9-\u00EB]{0,40} "'" | "«" [а-яё \u4E00-\u9FFF]+ "»") root?`, 0,
			`"дом 日本 éa"<ЀЁа в>'dója vu'«привет ёж 世界»"丙в"`},
		// Negated classes that refuse a few letters (as the converter's automata
		// for keys other than an object's named properties do): their positions
		// take their caches from a widened twin's, cut to the first bytes they
		// take. One holds ASCII only and is followed by a literal (few tokens
		// accepted, kept as ids), one is followed by a loop (most of the
		// vocabulary, kept as a bitset).
		// A regular expression's "." (every character but the line terminators,
		// U+2028 and U+2029 among them; here also “, which tokens hold), a class
		// without any of U+2000-U+2FFF, and one refusing 0x01 (a byte of the
		// NUL/DEL kind): runs over the trie's multi-byte characters must still
		// stop at “ (the lead byte E2 is a byte kind of its own) and at what each
		// class refuses.
		tc{"e2-kind", `root ::= ("\"" [^"\\\n\r\u2028\u2029\u201C]* "\"" | "'" [^'\x01]* "'" | "<" [^>\u2000-\u2FFF]* ">" | "\x02" [^\x02\u201C]* "\x02") root?`, 0,
			"\"he said ”hi” — ok…\"'a b'<x ÿ 日本>\"«»\"\x02so — ”no\x02"},
		tc{"widened-twins", `root ::= ([^a"\u0080-\U0010FFFF] "xyz" | "\"" [^\x00-\x1F"\\lr] [^\x00-\x1F"\\]* "\"" | [^abc"0-9] [0-9]{2}) root?`, 0,
			`bxyz"home"Ж12"ok"d42 xyz`})
	states := 60
	if testing.Short() {
		states = 12
	}
	mask := make([]uint32, (v.Size()+31)/32)
	for ci, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pg, err := gbnf.Parse(c.src)
			require.NoError(t, err)
			gr, err := engine.Compile(pg, v)
			require.NoError(t, err)
			r := rand.New(rand.NewSource(int64(ci)))
			m := gr.NewMatcher()
			n := states
			if c.states > 0 && !testing.Short() {
				n = c.states
			}
			for s := 0; s < n; s++ {
				clear(mask)
				require.NoError(t, m.FillMask(mask))
				if bad := bruteForceDisagreements(m, v, mask, nil, s%10 == 0); len(bad) > 0 {
					t.Fatalf("state %d: %d disagreements, first: %v", s, len(bad), bad[:min(5, len(bad))])
				}
				allowed, err := m.AllowedTokens(nil)
				require.NoError(t, err)
				if len(allowed) == 0 || r.Intn(30) == 0 {
					m.Reset()
					continue
				}
				next := allowed[r.Intn(len(allowed))]
				if v.IsEOG(next) {
					m.Reset()
					continue
				}
				require.NoError(t, m.AcceptToken(next))
			}
			if c.walk == "" {
				return
			}
			// through every field: the valid instance, each step the longest
			// allowed token that starts the rest of it, every state checked
			m.Reset()
			rest := []byte(c.walk)
			for step := 0; len(rest) > 0; step++ {
				clear(mask)
				require.NoError(t, m.FillMask(mask))
				if bad := bruteForceDisagreements(m, v, mask, nil, step%10 == 0); len(bad) > 0 {
					t.Fatalf("walk step %d (at %q): %d disagreements, first: %v", step, rest, len(bad), bad[:min(5, len(bad))])
				}
				allowed, err := m.AllowedTokens(nil)
				require.NoError(t, err)
				best := -1
				for _, id := range allowed {
					tb := v.TokenBytes(id)
					if len(tb) > 0 && bytes.HasPrefix(rest, tb) && (best < 0 || len(tb) > len(v.TokenBytes(best))) {
						best = id
					}
				}
				require.GreaterOrEqual(t, best, 0, "no allowed token starts %q", rest)
				require.NoError(t, m.AcceptToken(best))
				rest = rest[len(v.TokenBytes(best)):]
			}
			assert.True(t, m.CanEnd(), "the valid instance is complete")
		})
	}
}

// TestBoundedStringFirstVisitEqualsBruteForce: a string alone with a length bound
// (a counter), its masks computed first after the opening quote, without the
// cross-grammar cache, so that the runs along the counts are first asked about
// from inside the string (a backslash's run before the letters', run.go:
// kindsTo). Every token is checked at each prefix.
func TestBoundedStringFirstVisitEqualsBruteForce(t *testing.T) {
	v := llama3Vocab(t)
	mask := make([]uint32, (v.Size()+31)/32)
	for _, sch := range []string{`{"type":"string","maxLength":100}`, `{"type":"string","minLength":3,"maxLength":70}`} {
		src, _, err := schema.FromJSONSchema([]byte(sch))
		require.NoError(t, err)
		pg, err := gbnf.Parse(src)
		require.NoError(t, err)
		for _, prefix := range []string{`"`, `"a\`, `"` + strings.Repeat("x", 66)} {
			gr, err := engine.Compile(pg, v, engine.WithSharedCache(false))
			require.NoError(t, err)
			m := gr.NewMatcher()
			require.NoError(t, m.AcceptBytes([]byte(prefix)))
			clear(mask)
			require.NoError(t, m.FillMask(mask))
			if bad := bruteForceDisagreements(m, v, mask, nil, true); len(bad) > 0 {
				t.Fatalf("%s after %q: %d disagreements, first: %v", sch, prefix, len(bad), bad[:min(5, len(bad))])
			}
		}
	}
}
