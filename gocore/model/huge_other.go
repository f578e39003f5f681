//go:build !linux

package model

import "unsafe"

// hugePages is a no-op where transparent huge pages cannot be asked for.
func hugePages(p unsafe.Pointer, n uintptr, filled bool) {}
