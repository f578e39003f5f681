package engine_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/engine"
)

// releaseGrammar is JSON-like enough to reach string bodies, numbers, nested
// arrays and objects, and keys: the kinds of positions a matcher's caches hold.
const releaseGrammar = `root ::= obj
obj ::= "{" ws ( pair ( ws "," ws pair )* )? ws "}"
pair ::= str ws ":" ws val
val ::= str | num | obj | "[" ws ( val ( ws "," ws val )* )? ws "]" | "true" | "null"
str ::= "\"" [^"\\]{0,40} "\""
num ::= "-"? [0-9]+ ( "." [0-9]+ )?
ws ::= [ \n]{0,4}
`

var releaseTexts = []string{
	`{"a": [1, 2.5, "x"], "b": {"c": "héllo"}}`,
	`{"b": {"c": ""}, "a": []}`,
	`{"key": [[true], {"n": -12}], "z": null}`,
	`{}`,
}

// walkMasks steps m through text a byte at a time and returns the mask before
// every byte and at the end (nil where FillMask failed, with its error), or an
// error if a byte was refused. It does not stop the test, so goroutines may call it.
func walkMasks(m *engine.Matcher, size int, text string) (masks [][]uint32, errs []error, err error) {
	for i := 0; i <= len(text); i++ {
		w := make([]uint32, (size+31)/32)
		ferr := m.FillMask(w)
		if ferr != nil {
			w = nil
		}
		masks, errs = append(masks, w), append(errs, ferr)
		if i == len(text) || ferr != nil {
			break
		}
		if err := m.AcceptBytes([]byte{text[i]}); err != nil {
			return nil, nil, fmt.Errorf("after %q: %w", text[:i], err)
		}
	}
	return masks, errs, nil
}

// mustWalk is walkMasks on the test's goroutine.
func mustWalk(t *testing.T, m *engine.Matcher, size int, text string) ([][]uint32, []error) {
	t.Helper()
	masks, errs, err := walkMasks(m, size, text)
	require.NoError(t, err)
	return masks, errs
}

// walkDiff describes the first step where two walks of text disagree (masks, or a
// limit where the other has none), or returns "".
func walkDiff(text string, gotM, wantM [][]uint32, gotE, wantE []error) string {
	if len(gotM) != len(wantM) {
		return fmt.Sprintf("%q: walks of %d and %d steps", text, len(gotM), len(wantM))
	}
	for i := range wantM {
		switch {
		case (wantE[i] != nil) != (gotE[i] != nil):
			return fmt.Sprintf("%q after %d bytes: error %v, want %v", text, i, gotE[i], wantE[i])
		case wantE[i] != nil && !isLimit(gotE[i]):
			return fmt.Sprintf("%q after %d bytes: %v is not a limit", text, i, gotE[i])
		case wantE[i] == nil && !slices.Equal(wantM[i], gotM[i]):
			return fmt.Sprintf("%q after %d bytes: masks differ", text, i)
		}
	}
	return ""
}

func requireSameWalk(t *testing.T, text string, gotM, wantM [][]uint32, gotE, wantE []error) {
	t.Helper()
	require.Empty(t, walkDiff(text, gotM, wantM, gotE, wantE))
}

// TestReleasedCachesServeTheNextMatcher: each matcher released after its text
// hands its caches to the next NewMatcher, and every mask of every walk is the
// one a matcher of a grammar that never reuses caches gives.
func TestReleasedCachesServeTheNextMatcher(t *testing.T) {
	v := llama3Vocab(t)
	g, ref := compile(t, releaseGrammar, v), compile(t, releaseGrammar, v)
	n := 0
	for round := 0; round < 3; round++ {
		for _, text := range releaseTexts {
			wantM, wantE := mustWalk(t, ref.NewMatcher(), v.Size(), text)
			m := g.NewMatcher()
			gotM, gotE := mustWalk(t, m, v.Size(), text)
			requireSameWalk(t, text, gotM, wantM, gotE, wantE)
			m.Release()
			n++
		}
	}
	require.Equal(t, int64(n-1), g.ReusedMatchers(), "every NewMatcher after the first takes the last one's caches")
	require.Zero(t, ref.ReusedMatchers())
}

// TestReleaseWaitsForClonesAndCountsOnce: a matcher's caches are handed on only
// when it and its clones are all released, and releasing one twice (the second
// time after another matcher took its caches) hands them on once.
func TestReleaseWaitsForClonesAndCountsOnce(t *testing.T) {
	g := compile(t, releaseGrammar, tinyVocab)
	m := g.NewMatcher()
	require.NoError(t, m.AcceptBytes([]byte(`{"a": `)))
	c := m.Clone()
	m.Release()
	g.NewMatcher() // c still uses the caches: a fresh matcher
	require.Zero(t, g.ReusedMatchers())
	c.Release()
	y := g.NewMatcher()
	require.Equal(t, int64(1), g.ReusedMatchers())
	y.Release()
	z := g.NewMatcher() // takes y's caches
	require.Equal(t, int64(2), g.ReusedMatchers())
	y.Release() // again: z owns them now
	g.NewMatcher()
	require.Equal(t, int64(2), g.ReusedMatchers(), "a second Release handed on caches another matcher uses")
	z.Release()
	g.NewMatcher()
	require.Equal(t, int64(3), g.ReusedMatchers())

	// a clone of a released matcher, released in turn, does not hand the same
	// caches on a second time
	s := g.NewMatcher() // fresh: the pool is empty
	s.Release()
	sc := s.Clone()
	sc.Release()
	g.NewMatcher()
	g.NewMatcher()
	require.Equal(t, int64(4), g.ReusedMatchers(), "one set of caches handed to two matchers")
}

// TestReleasedMatcherKeepsWorking: a matcher used after Release, while the matcher
// that took its caches runs on another goroutine, still gives exact masks (the two
// share the caches as clones do). Run with -race, this also checks the sharing is
// locked.
func TestReleasedMatcherKeepsWorking(t *testing.T) {
	v := llama3Vocab(t)
	g, ref := compile(t, releaseGrammar, v), compile(t, releaseGrammar, v)
	a, b := releaseTexts[0], releaseTexts[2]
	wantA, wantAE := mustWalk(t, ref.NewMatcher(), v.Size(), a)
	wantB, wantBE := mustWalk(t, ref.NewMatcher(), v.Size(), b)
	old := g.NewMatcher()
	half := len(a) / 2
	firstM, firstE := mustWalk(t, old, v.Size(), a[:half])
	requireSameWalk(t, a[:half], firstM, wantA[:half+1], firstE, wantAE[:half+1])
	old.Release()
	taker := g.NewMatcher()
	require.Equal(t, int64(1), g.ReusedMatchers())
	var wg sync.WaitGroup
	var restM, newM [][]uint32
	var restE, newE []error
	var restErr, newErr error
	wg.Add(2)
	go func() {
		defer wg.Done()
		restM, restE, restErr = walkMasks(old, v.Size(), a[half:])
	}()
	go func() {
		defer wg.Done()
		newM, newE, newErr = walkMasks(taker, v.Size(), b)
	}()
	wg.Wait()
	require.NoError(t, restErr)
	require.NoError(t, newErr)
	requireSameWalk(t, a[half:], restM, wantA[half:], restE, wantAE[half:])
	requireSameWalk(t, b, newM, wantB, newE, wantBE)
}

// TestReleaseDropsBigCaches: caches that grew past the bound (a literal of 10,000
// characters interns a configuration per character) are not kept; small ones are.
func TestReleaseDropsBigCaches(t *testing.T) {
	long := strings.Repeat("ab", 5000)
	g := compile(t, fmt.Sprintf("root ::= %q | \"x\"\n", long), tinyVocab)
	m := g.NewMatcher()
	require.NoError(t, m.AcceptBytes([]byte(long)))
	require.True(t, m.CanEnd())
	m.Release()
	g.NewMatcher()
	require.Zero(t, g.ReusedMatchers(), "caches of 10,000 configurations were kept")
	m = g.NewMatcher()
	require.NoError(t, m.AcceptBytes([]byte("x")))
	m.Release()
	m = g.NewMatcher()
	require.Equal(t, int64(1), g.ReusedMatchers())
	// and the kept caches answer right: the long literal still walks
	require.NoError(t, m.AcceptBytes([]byte(long)))
	require.True(t, m.CanEnd())
}

// TestReleaseKeepsLimitStatesExact: caches that hold a limit state (the stack
// limit met while nesting) serve the next matcher, which meets the limit at the
// same depth with a *LimitError and gets the same masks before it.
func TestReleaseKeepsLimitStatesExact(t *testing.T) {
	v := llama3Vocab(t)
	src := nestedOptionals(40, "[", "]")
	g := compile(t, src, v, engine.WithMaxStacks(8))
	ref := compile(t, src, v, engine.WithMaxStacks(8))
	text := strings.Repeat("[", 40)
	wantM, wantE := mustWalk(t, ref.NewMatcher(), v.Size(), text)
	require.True(t, isLimit(wantE[len(wantE)-1]), "the limit is met before depth 40: %v", wantE[len(wantE)-1])
	for range 3 {
		m := g.NewMatcher()
		gotM, gotE := mustWalk(t, m, v.Size(), text)
		requireSameWalk(t, text, gotM, wantM, gotE, wantE)
		// a shallower state after the limit state is still exact
		require.NoError(t, m.Rollback(2))
		w := make([]uint32, (v.Size()+31)/32)
		require.NoError(t, m.FillMask(w))
		require.True(t, slices.Equal(wantM[len(wantM)-3], w), "after rolling back from the limit state")
		m.Release()
	}
	require.Equal(t, int64(2), g.ReusedMatchers())
}

// TestReleaseConcurrent: goroutines that each make, walk and release matchers of
// one grammar (and clone some) get exact masks throughout. Run with -race.
func TestReleaseConcurrent(t *testing.T) {
	v := llama3Vocab(t)
	g, ref := compile(t, releaseGrammar, v), compile(t, releaseGrammar, v)
	type walk struct {
		m [][]uint32
		e []error
	}
	want := make([]walk, len(releaseTexts))
	for i, text := range releaseTexts {
		want[i].m, want[i].e = mustWalk(t, ref.NewMatcher(), v.Size(), text)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range 6 {
				i := (w + it) % len(releaseTexts)
				m := g.NewMatcher()
				if it%3 == 2 {
					c := m.Clone()
					m.Release()
					m = c
				}
				gotM, gotE, err := walkMasks(m, v.Size(), releaseTexts[i])
				d := ""
				if err != nil {
					d = err.Error()
				} else {
					d = walkDiff(releaseTexts[i], gotM, want[i].m, gotE, want[i].e)
				}
				if d != "" {
					mu.Lock()
					failures = append(failures, d)
					mu.Unlock()
				}
				m.Release()
			}
		}()
	}
	wg.Wait()
	require.Empty(t, failures)
	require.Positive(t, g.ReusedMatchers())
}
