package safecall_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/safecall"
)

func TestDo(t *testing.T) {
	cases := []struct {
		name    string
		f       func() (int, error)
		want    int
		wantErr string
	}{
		{"value", func() (int, error) { return 7, nil }, 7, ""},
		{"error passes through", func() (int, error) { return 0, errors.New("bad input") }, 0, "bad input"},
		{"panic with string", func() (int, error) { panic("boom") }, 0, "tether internal error in op: boom"},
		{"runtime panic", func() (int, error) {
			var s []int
			return s[3], nil
		}, 0, "index out of range"},
		{"nil map write", func() (int, error) {
			var m map[string]int
			m["x"] = 1
			return 1, nil
		}, 0, "assignment to entry in nil map"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := safecall.Do("op", tc.f)
			assert.Equal(t, tc.want, got)
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
}

func TestPanicErrorCarriesStack(t *testing.T) {
	_, err := safecall.Do("Explode", func() (string, error) { panic(errors.New("deep")) })
	var pe *safecall.PanicError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "Explode", pe.Op)
	assert.Contains(t, pe.Stack, "safecall_test", "the stack names the frame that panicked")
}

//go:noinline
func explodeOnGoroutine() { panic("kaboom") }

// Go runs work on another goroutine and carries its panic to the caller: wait
// re-raises it there, and Do reports the goroutine's own value and stack (where
// it panicked, not where wait re-raised it) instead of the process ending.
func TestGoCarriesPanicToCaller(t *testing.T) {
	ran := false
	wait := safecall.Go(func() { ran = true })
	wait()
	assert.True(t, ran, "wait returns after f has run")

	got, err := safecall.Do("op", func() (int, error) {
		wait := safecall.Go(explodeOnGoroutine)
		wait()
		return 1, nil
	})
	assert.Zero(t, got)
	var pe *safecall.PanicError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "op", pe.Op)
	assert.Equal(t, "kaboom", pe.Value)
	assert.Contains(t, pe.Stack, "explodeOnGoroutine")
	assert.Contains(t, err.Error(), "tether internal error in op: kaboom")

	// Outside Do the re-raised value says what and where.
	func() {
		defer func() {
			gp, ok := recover().(*safecall.GoroutinePanic)
			require.True(t, ok)
			assert.Equal(t, "kaboom", gp.Value)
			assert.Contains(t, gp.Error(), "explodeOnGoroutine")
		}()
		safecall.Go(explodeOnGoroutine)()
	}()
}
