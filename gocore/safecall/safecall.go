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
// A panic that Go carried over from a goroutine is reported with that goroutine's
// value and stack.
func Do[T any](op string, f func() (T, error)) (res T, err error) {
	defer func() {
		if v := recover(); v != nil {
			var zero T
			if gp, ok := v.(*GoroutinePanic); ok {
				res, err = zero, &PanicError{Op: op, Value: gp.Value, Stack: gp.Stack}
				return
			}
			res, err = zero, &PanicError{Op: op, Value: v, Stack: stack(3, 8)}
		}
	}()
	return f()
}

// GoroutinePanic is the value wait re-raises on the caller when the goroutine that Go
// started panicked: the value it panicked with, and a few frames from where.
type GoroutinePanic struct {
	Value any
	Stack string
}

func (p *GoroutinePanic) Error() string {
	return fmt.Sprintf("%v (on a goroutine)\n%s", p.Value, p.Stack)
}

// Go runs f on a new goroutine for work split across cores inside one call; wait
// returns once f has returned. A panic in f would end the process from there (no
// recover at an API boundary can see another goroutine's panic), so it is caught and
// re-raised by wait on the caller as a *GoroutinePanic, where Do (or the CLI's
// recover) turns it into an error. Callers must call wait on every path.
func Go(f func()) (wait func()) {
	done := make(chan *GoroutinePanic, 1)
	go func() {
		defer func() {
			if v := recover(); v != nil {
				done <- &GoroutinePanic{Value: v, Stack: stack(3, 8)}
				return
			}
			done <- nil
		}()
		f()
	}()
	return func() {
		if p := <-done; p != nil {
			panic(p)
		}
	}
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
