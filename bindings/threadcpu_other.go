//go:build !linux && !darwin

package bindings

import "time"

// threadCPU is -1: no per-thread CPU clock is read on this platform.
func threadCPU() time.Duration { return -1 }
