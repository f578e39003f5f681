package engine_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/engine"
	"github.com/tetherlm/tether/gocore/vocab"
	"github.com/tetherlm/tether/tests_go/internal/testdata"
)

// sharedPair compiles src twice for v: with the cross-grammar position cache shared
// and without.
func sharedPair(t *testing.T, src string, v engine.Vocabulary) (shared, alone *engine.Grammar) {
	t.Helper()
	return compile(t, src, v, engine.WithSharedCache(true)), compile(t, src, v, engine.WithSharedCache(false))
}

// sameMasks steps a matcher of each grammar through text one byte at a time and
// requires identical masks before every byte and at the end; it returns the first mask.
func sameMasks(t *testing.T, a, b *engine.Grammar, text string) []uint32 {
	t.Helper()
	size := a.Vocabulary().Size()
	ma, mb := a.NewMatcher(), b.NewMatcher()
	wa, wb := make([]uint32, (size+31)/32), make([]uint32, (size+31)/32)
	var first []uint32
	for i := 0; i <= len(text); i++ {
		require.NoError(t, ma.FillMask(wa))
		require.NoError(t, mb.FillMask(wb))
		if first == nil {
			first = append([]uint32(nil), wa...)
		}
		if !slices.Equal(wa, wb) {
			t.Fatalf("after %q: masks differ (shared vs unshared): %s", text[:i], maskDiff(a.Vocabulary(), wa, wb))
		}
		if i == len(text) {
			break
		}
		require.NoError(t, ma.AcceptBytes([]byte{text[i]}), "after %q", text[:i])
		require.NoError(t, mb.AcceptBytes([]byte{text[i]}), "after %q", text[:i])
	}
	return first
}

func maskDiff(v engine.Vocabulary, a, b []uint32) string {
	var out []string
	for i := range a {
		for x := a[i] ^ b[i]; x != 0; x &= x - 1 {
			bit := 0
			for x>>bit&1 == 0 {
				bit++
			}
			id := i*32 + bit
			out = append(out, fmt.Sprintf("%d %q (first %v)", id, v.TokenBytes(id), a[i]>>bit&1 == 1))
			if len(out) >= 10 {
				return fmt.Sprint(out)
			}
		}
	}
	return fmt.Sprint(out)
}

// onlyIn reports whether some token is set in a but not in b.
func onlyIn(a, b []uint32) bool {
	for i := range a {
		if a[i]&^b[i] != 0 {
			return true
		}
	}
	return false
}

// TestSharedCacheAcrossGrammars: two different grammars (different rule order and
// numbering, different surroundings) that use the same string rule share its
// position caches, and their masks are the same as without sharing.
func TestSharedCacheAcrossGrammars(t *testing.T) {
	v := llama3Vocab(t)
	g1 := `root ::= "{" ws "\"name\"" ws ":" ws str ws "}"
str ::= "\"" chr* "\""
chr ::= [^"\\\x00-\x1F] | "\\" ["\\/nt]
ws ::= [ \t\n]*
`
	g2 := `pad ::= "pad"
chr ::= [^"\\\x00-\x1F] | "\\" ["\\/nt]
list ::= "[" ws str ws ("," ws str ws)* "]"
str ::= "\"" chr* "\""
ws ::= [ \t\n]*
root ::= list | pad
`
	s1, u1 := sharedPair(t, g1, v)
	sameMasks(t, s1, u1, `{"name": "a \"quoted\" väl\\ue"}`)
	before := s1.SharedCacheStats()
	s2, u2 := sharedPair(t, g2, v)
	sameMasks(t, s2, u2, `[ "x\\n y" , "日本語 \"q\""]`)
	after := s2.SharedCacheStats()
	require.Greater(t, after.Hits, before.Hits, "the second grammar reused no position cache of the first")
	require.Greater(t, after.Entries, 0)
	require.Greater(t, after.Bytes, int64(0))
}

// TestSharedCacheLargeCountsShare: counted repetitions whose counts differ only
// past what one token can reach (a maxLength of 4096 or 8192) share their
// positions' analyses, and their masks stay those of each grammar alone; the
// vocabulary is one of the test's own, so earlier tests' caches cannot answer.
func TestSharedCacheLargeCountsShare(t *testing.T) {
	v, err := vocab.Load(testdata.ReadTokenizerFile(t, "llama3", "tokenizer.json"), vocab.WithoutCache())
	require.NoError(t, err)
	text := `"a few words, and \"quoted\" ones`
	s1, u1 := sharedPair(t, `root ::= "\"" ([^"\\] | "\\" ["\\n]){0,4096} "\""`, v)
	sameMasks(t, s1, u1, text)
	before := s1.SharedCacheStats()
	s2, u2 := sharedPair(t, `root ::= "\"" ([^"\\] | "\\" ["\\n]){0,8192} "\""`, v)
	sameMasks(t, s2, u2, text)
	after := s2.SharedCacheStats()
	require.Greater(t, after.Hits, before.Hits, "the second grammar reused no position cache of the first")
}

// TestSharedCacheDoesNotShareDifferentInputs: grammars that differ only in
// something a position's analysis reads — the bytes that may follow the rule, or a
// character class deep in a referenced rule — get their own caches, so their masks
// stay those of the grammar alone.
func TestSharedCacheDoesNotShareDifferentInputs(t *testing.T) {
	v := llama3Vocab(t)
	cases := []struct {
		name, a, b, text string
	}{
		{
			// The rule w and its frame are the same; only what may follow w (its
			// follow set) differs: the token ");" leaves w's frame with ';'.
			name: "follow set",
			a:    "root ::= w \",\"\nw ::= [)(\\]]\n",
			b:    "root ::= w \";\"\nw ::= [)(\\]]\n",
			text: ")",
		},
		{
			// Only a class two references deep differs: " an" fits [a-n] only.
			name: "deep class",
			a:    "root ::= [ \\t\\n] word \"!\"\nword ::= lc lc+\nlc ::= [a-m]\n",
			b:    "root ::= [ \\t\\n] word \"!\"\nword ::= lc lc+\nlc ::= [a-n]\n",
			text: " ab",
		},
		{
			name: "negation",
			a:    "root ::= [qrs] body\nbody ::= [a-f]+ \"!\"\n",
			b:    "root ::= [qrs] body\nbody ::= [^a-f]+ \"!\"\n",
			text: "q",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sa, ua := sharedPair(t, c.a, v)
			maskA := sameMasks(t, sa, ua, c.text)
			// The start position of b differs from a's only in what the case
			// changes: no position cache of a may be used for it. (Its first
			// character is a class of three or more bytes: positions that only
			// one or two bytes can start are never looked up, see narrowTop.)
			sb, ub := sharedPair(t, c.b, v)
			before := sb.SharedCacheStats()
			maskB := make([]uint32, len(maskA))
			require.NoError(t, sb.NewMatcher().FillMask(maskB))
			after := sb.SharedCacheStats()
			require.Equal(t, before.Hits, after.Hits, "the second grammar reused a position cache of the first")
			require.Greater(t, after.Misses, before.Misses)
			// The difference must show in the masks, or the test proves nothing.
			require.True(t, onlyIn(maskA, maskB) || onlyIn(maskB, maskA), "the grammars' first masks are equal")
			require.Equal(t, maskB, sameMasks(t, sb, ub, c.text))
		})
	}
}

// TestSharedCacheTokenReach: a position's fingerprint describes the grammar
// only as far as the longest token that can start there reaches (Llama-3's
// tokens starting with x, y or z have at most 14 bytes: "ynchronization"), not
// as far as the vocabulary's longest token (128 bytes). Grammars that differ at
// the 14th byte after such a position get their own caches (that token's verdict
// differs); grammars that differ only past it share one. Masks equal those of
// each grammar alone either way. The vocabulary is the test's own, so earlier
// tests' caches cannot answer.
func TestSharedCacheTokenReach(t *testing.T) {
	v, err := vocab.Load(testdata.ReadTokenizerFile(t, "llama3", "tokenizer.json"), vocab.WithoutCache())
	require.NoError(t, err)
	id, ok := v.TokenID("ynchronization")
	require.True(t, ok)
	cases := []struct {
		name, a, b string
		share      bool
	}{
		{"differ at the last byte a token reaches",
			`root ::= [xyz] "nchronizatio" "n" "!"`, `root ::= [xyz] "nchronizatio" "m" "!"`, false},
		{"differ one byte past it",
			`root ::= [xyz] "nchronization" "!" "a"`, `root ::= [xyz] "nchronization" "!" "b"`, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sa, ua := sharedPair(t, c.a, v)
			maskA := sameMasks(t, sa, ua, "ynchronization")
			sb, ub := sharedPair(t, c.b, v)
			before := sb.SharedCacheStats()
			maskB := make([]uint32, len(maskA))
			require.NoError(t, sb.NewMatcher().FillMask(maskB))
			after := sb.SharedCacheStats()
			if c.share {
				require.Greater(t, after.Hits, before.Hits, "the second grammar reused no position cache of the first")
				require.Equal(t, maskA, maskB)
			} else {
				require.Equal(t, before.Hits, after.Hits, "the second grammar reused a position cache of the first")
				// The difference shows in the masks: the token is allowed by a only.
				require.True(t, maskA[id/32]>>(id%32)&1 == 1 && maskB[id/32]>>(id%32)&1 == 0,
					"token %d %q: allowed by a %v, by b %v", id, "ynchronization", maskA[id/32]>>(id%32)&1, maskB[id/32]>>(id%32)&1)
			}
			require.Equal(t, maskB, sameMasks(t, sb, ub, "ynchronizatio"))
		})
	}
}

// TestSharedCacheConcurrent compiles the same grammar many times on several
// goroutines (all sharing, racing on the same table entries) and checks every mask
// against a grammar that does not share.
func TestSharedCacheConcurrent(t *testing.T) {
	v := llama3Vocab(t)
	src := `root ::= "{" ws "\"k\"" ws ":" ws (num | str) ws "}"
num ::= "-"? [0-9]+ ("." [0-9]+)?
str ::= "\"" [^"\\]* "\""
ws ::= [ \t]*
`
	text := `{ "k" : "abc déf" }`
	want := masksAlong(t, compile(t, src, v, engine.WithSharedCache(false)), v, text)
	concurrently(t, 4, func(int) error {
		for rep := 0; rep < 2; rep++ {
			if err := walkMatches(compile(t, src, v), v, text, want); err != nil {
				return err
			}
		}
		return nil
	})
}

// TestFirstVisitsConcurrent walks one Grammar from several goroutines at once
// (their matchers racing to compute the same position caches: widened twins of the
// key classes, count siblings along a counter over 64) and, on other goroutines,
// fresh compiles of it sharing the vocabulary's table; every mask must equal the
// one a single goroutine computes without sharing.
func TestFirstVisitsConcurrent(t *testing.T) {
	v := llama3Vocab(t)
	src := `root ::= "{" "\"" key "\"" ":" "\"" [^"\\]{0,90} "\"" "}"
key ::= ([^"\\\x00-\x1Flr] | "\\" ["\\]) [^"\\]* | "l" ([^"\\\x00-\x1Fa] [^"\\]*)? | "r" ([^"\\\x00-\x1Fe] [^"\\]*)?
`
	text := `{"rank":"` + strings.Repeat("some words — ", 5) + `"}`
	want := masksAlong(t, compile(t, src, v, engine.WithSharedCache(false)), v, text)
	shared := compile(t, src, v)
	concurrently(t, 6, func(w int) error {
		gr := shared
		if w%2 == 1 {
			gr = compile(t, src, v)
		}
		return walkMatches(gr, v, text, want)
	})
}

// concurrently runs f(0) .. f(n-1) on n goroutines and fails the test with every error
// they return, each naming its goroutine.
func concurrently(t *testing.T, n int, f func(w int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := 0; w < n; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(w); err != nil {
				errs <- fmt.Errorf("goroutine %d: %w", w, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// masksAlong returns the masks a matcher of gr fills before each byte of text and
// after the last.
func masksAlong(t *testing.T, gr *engine.Grammar, v *vocab.Vocab, text string) [][]uint32 {
	t.Helper()
	var want [][]uint32
	m := gr.NewMatcher()
	for i := 0; i <= len(text); i++ {
		w := make([]uint32, (v.Size()+31)/32)
		require.NoError(t, m.FillMask(w))
		want = append(want, w)
		if i < len(text) {
			require.NoError(t, m.AcceptBytes([]byte{text[i]}), "at %q", text[:i])
		}
	}
	return want
}

// walkMatches steps a new matcher of gr through text byte by byte and reports the
// first mask that differs from want (masksAlong's), or the first error.
func walkMatches(gr *engine.Grammar, v *vocab.Vocab, text string, want [][]uint32) error {
	m := gr.NewMatcher()
	mask := make([]uint32, (v.Size()+31)/32)
	for i := 0; i <= len(text); i++ {
		if err := m.FillMask(mask); err != nil {
			return err
		}
		if !slices.Equal(mask, want[i]) {
			return fmt.Errorf("after %q: mask differs: %s", text[:i], maskDiff(v, mask, want[i]))
		}
		if i < len(text) {
			if err := m.AcceptBytes([]byte{text[i]}); err != nil {
				return err
			}
		}
	}
	return nil
}

// coreGrammars are three grammars with the same string frame, followed by ",",
// by "]" and by either: one core serves the three (see engine's shared.go).
func coreGrammars() []string {
	str := "str ::= \"\\\"\" chr{0,500} \"\\\"\"\nchr ::= [^\"\\\\\\x00-\\x1F] | \"\\\\\" [\"\\\\/nt]\n"
	return []string{
		"root ::= \"{\\\"a\\\":\" str \",\\\"b\\\":1}\"\n" + str,
		"root ::= \"[\" str \"]\"\n" + str,
		"root ::= \"[\" str (\",\" str)* \"]\"\n" + str,
	}
}

// TestSharedCacheCoreAcrossFollowSets: the same string frame followed by ","
// in one grammar, by "]" in another and by either in a third is analyzed once
// (under the follow set of a core, see engine's shared.go); each grammar derives
// its own split from it, so each keeps its own masks: inside the string, `",` is
// allowed where a comma follows and `"]` where a bracket does. The vocabulary is
// the test's own, so earlier tests' caches cannot answer.
func TestSharedCacheCoreAcrossFollowSets(t *testing.T) {
	v, err := vocab.Load(testdata.ReadTokenizerFile(t, "llama3", "tokenizer.json"), vocab.WithoutCache())
	require.NoError(t, err)
	grammars := coreGrammars()
	texts := []string{`{"a":"some text`, `["some text`, `["some text`}
	comma, ok := v.TokenID(`",`)
	require.True(t, ok)
	bracket, ok := v.TokenID(`"]`)
	require.True(t, ok)
	has := func(m []uint32, id int) bool { return m[id/32]>>(id%32)&1 == 1 }
	for i, src := range grammars {
		s, u := sharedPair(t, src, v)
		before := s.SharedCacheStats()
		sameMasks(t, s, u, texts[i])
		after := s.SharedCacheStats()
		if i > 0 {
			require.Greater(t, after.Hits, before.Hits, "grammar %d reused no analysis of the string", i)
		}
		m := s.NewMatcher()
		require.NoError(t, m.AcceptBytes([]byte(texts[i])))
		mask := make([]uint32, (v.Size()+31)/32)
		require.NoError(t, m.FillMask(mask))
		require.Equal(t, i != 1, has(mask, comma), "grammar %d: %q allowed", i, `",`)
		require.Equal(t, i != 0, has(mask, bracket), "grammar %d: %q allowed", i, `"]`)
	}
}

// TestSharedCacheCounterBoundsNotRead: a counter level of a position is keyed by
// the counts it has left, not by the bounds it started with, so the fourth
// character of `{4,255}` and the first of `{0,500}` (both: none needed, more than
// a token can use left) share one analysis, with the masks of each alone.
func TestSharedCacheCounterBoundsNotRead(t *testing.T) {
	v, err := vocab.Load(testdata.ReadTokenizerFile(t, "llama3", "tokenizer.json"), vocab.WithoutCache())
	require.NoError(t, err)
	s1, u1 := sharedPair(t, `root ::= "\"" [^"\\]{0,500} "\"" "!"`, v)
	sameMasks(t, s1, u1, `"abcd`)
	s2, u2 := sharedPair(t, `root ::= "\"" [^"\\]{4,255} "\"" "!"`, v)
	m := s2.NewMatcher()
	require.NoError(t, m.AcceptBytes([]byte(`"abcd`)))
	before := s2.SharedCacheStats()
	mask := make([]uint32, (v.Size()+31)/32)
	require.NoError(t, m.FillMask(mask))
	after := s2.SharedCacheStats()
	require.Greater(t, after.Hits, before.Hits, "the fourth character of {4,255} reused no analysis")
	sameMasks(t, s2, u2, `"abcdefg`)
}

// TestSharedCacheCoreNotAnalyzedWhenNothingIsKept: with the shared table's bound
// at 0 (SetSharedCacheLimit), no core is analyzed beside a slot's own analysis,
// since nothing could use it again; the masks are those of the grammar alone.
func TestSharedCacheCoreNotAnalyzedWhenNothingIsKept(t *testing.T) {
	src := "root ::= \"[\" str \",\" str \"]\"\nstr ::= \"\\\"\" chr{0,500} \"\\\"\"\nchr ::= [^\"\\\\\\x00-\\x1F] | \"\\\\\" [\"\\\\/nt]\n"
	analyses := func(limit int64) int64 {
		old := engine.SetSharedCacheLimit(limit)
		defer engine.SetSharedCacheLimit(old)
		v, err := vocab.Load(testdata.ReadTokenizerFile(t, "llama3", "tokenizer.json"), vocab.WithoutCache())
		require.NoError(t, err)
		s, u := sharedPair(t, src, v)
		sameMasks(t, s, u, `["some text`)
		return s.SharedCacheStats().Analyses
	}
	kept, none := analyses(engine.DefaultSharedCacheBytes), analyses(0)
	require.Greater(t, kept, none, "no core was analyzed when the table keeps it (the case proves nothing)")
}

// TestSharedCacheCoreConcurrent: grammars whose string frames share one core,
// compiled and walked on several goroutines at once from a fresh vocabulary (so
// that they race to analyze and share the core), give every mask of the grammar
// alone.
func TestSharedCacheCoreConcurrent(t *testing.T) {
	v, err := vocab.Load(testdata.ReadTokenizerFile(t, "llama3", "tokenizer.json"), vocab.WithoutCache())
	require.NoError(t, err)
	srcs := coreGrammars()
	texts := []string{`{"a":"some \"text\", here","b":1}`, `["some \"text\", here"]`, `["some \"text\"","here"]`}
	want := make([][][]uint32, len(srcs))
	for i, src := range srcs {
		want[i] = masksAlong(t, compile(t, src, v, engine.WithSharedCache(false)), v, texts[i])
	}
	concurrently(t, 4, func(w int) error {
		for k := range srcs {
			i := (k + w) % len(srcs)
			if err := walkMatches(compile(t, srcs[i], v), v, texts[i], want[i]); err != nil {
				return err
			}
		}
		return nil
	})
	require.Greater(t, compile(t, srcs[0], v).SharedCacheStats().Hits, int64(0))
}
