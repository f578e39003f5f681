// Package bindings is the flat API that gopy exports to Python as tether._native.
//
// Rules, because gopy's conversions are costly and its failure modes are fatal:
//   - objects cross as int64 handles, never as Go pointers (a stale pointer would
//     segfault; a stale handle is an error);
//   - bulk data crosses as the address of a caller-owned, contiguous CPU buffer
//     (uintptr) plus a length, read or written with unsafe.Slice during the call only;
//   - every function returns an error and runs under safecall.Do, so a Go panic comes
//     back as an error instead of aborting the interpreter.
//
// This package knows nothing of grammar internals; it only adapts gocore to those rules.
package bindings
