package session_test

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/session"
)

// cacheSrc is a grammar no other test compiles (tag keeps each test's own).
func cacheSrc(tag string, i int) string {
	return fmt.Sprintf("root ::= \"%s-%d\" [0-9]*\n", tag, i)
}

// compileWeak compiles src and returns only a weak pointer to the grammar (a
// function of its own, so no strong reference outlives it).
func compileWeak(t *testing.T, src string) weak.Pointer[session.Grammar] {
	t.Helper()
	return weak.Make(compile(t, src))
}

// The compiled-grammar cache: the most recent grammars are held, older ones are
// found while something else still uses them and let go once nothing does.
func TestCompiledCache(t *testing.T) {
	t.Run("the same spec again is the same grammar", func(t *testing.T) {
		a := compile(t, cacheSrc("same", 0))
		b := compile(t, cacheSrc("same", 0))
		assert.Same(t, a, b)
		other, err := session.Compile(voc, session.Spec{Src: cacheSrc("same", 0), MaxStacks: 7})
		require.NoError(t, err)
		assert.NotSame(t, a, other, "another stack limit is another grammar")
		assert.Equal(t, 7, other.Spec.MaxStacks)
	})

	t.Run("the most recent grammar is held with no other reference", func(t *testing.T) {
		w := compileWeak(t, cacheSrc("recent", 0))
		runtime.GC()
		g := w.Value()
		require.NotNil(t, g, "the cache let go of the grammar it compiled last")
		assert.Same(t, g, compile(t, cacheSrc("recent", 0)))
	})

	t.Run("an older grammar in use is found again", func(t *testing.T) {
		a := compile(t, cacheSrc("inuse", 0))
		for i := 1; i <= 40; i++ {
			compile(t, cacheSrc("inuse", i))
		}
		runtime.GC()
		assert.Same(t, a, compile(t, cacheSrc("inuse", 0)), "a grammar its caller still holds was compiled again")
		runtime.KeepAlive(a)
	})

	t.Run("an older grammar nobody uses is let go", func(t *testing.T) {
		w := compileWeak(t, cacheSrc("dropped", 0))
		for i := 1; i <= 40; i++ { // past the grammars held strongly, and past a sweep
			compile(t, cacheSrc("dropped", i))
		}
		runtime.GC()
		assert.Nil(t, w.Value(), "the cache (or something the grammar left behind) still holds a grammar nobody uses")
		// compiling it again works, and gives a grammar that behaves the same
		g := compile(t, cacheSrc("dropped", 0))
		m := g.NewMatcher()
		require.NoError(t, m.AcceptBytes([]byte("dropped-0")))
		assert.True(t, m.CanEnd())
	})

	t.Run("concurrent callers each get their own spec's grammar", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for w := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 60 {
					src := cacheSrc("conc", (w+i)%11)
					g, err := session.Compile(voc, session.Spec{Src: src})
					if err != nil {
						errs <- err
						return
					}
					if g.Spec.Src != src {
						errs <- fmt.Errorf("asked for %q, got %q", src, g.Spec.Src)
						return
					}
					if i%13 == 0 {
						runtime.GC()
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			assert.NoError(t, err)
		}
	})
}
