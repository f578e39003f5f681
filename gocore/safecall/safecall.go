// Package safecall turns a Go panic into an ordinary error at an API boundary.
//
// Every function that tether exports to Python goes through Do: a panic that escaped
// into cgo would abort the whole Python process (gopy has no recovery of its own).
// The error names the operation, the panic value and the innermost frames of the
// stack, so a bug report carries enough to find the fault.
package safecall

import (
	"fmt"
	"runtime"
	"strings"
)

// PanicError is the error Do returns when the wrapped function panicked.
type PanicError struct {
	Op    string // the operation that was running, e.g. "TokenizerEncode"
	Value any    // the value passed to panic
	Stack string // a few frames from where the panic started
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("tether internal error in %s: %v (this is a bug in tether; please report it with this message)\n%s",
		e.Op, e.Value, e.Stack)
}

// Do runs f and returns its results; if f panics, Do returns the zero T and a *PanicError.
func Do[T any](op string, f func() (T, error)) (res T, err error) {
	defer func() {
		if v := recover(); v != nil {
			var zero T
			res, err = zero, &PanicError{Op: op, Value: v, Stack: stack(3, 8)}
		}
	}()
	return f()
}

// stack formats up to n frames, skipping the runtime's own panic frames.
func stack(skip, n int) string {
	pcs := make([]uintptr, 32)
	k := runtime.Callers(skip, pcs)
	frames := runtime.CallersFrames(pcs[:k])
	var b strings.Builder
	for written := 0; written < n; {
		fr, more := frames.Next()
		if !strings.HasPrefix(fr.Function, "runtime.") {
			fmt.Fprintf(&b, "  %s (%s:%d)\n", fr.Function, fr.File, fr.Line)
			written++
		}
		if !more {
			break
		}
	}
	return b.String()
}
