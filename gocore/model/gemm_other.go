//go:build !amd64

package model

// asmKernels reports that this architecture has no assembly kernels: the portable Go
// kernels run.
func asmKernels() (kernels, bool) { return kernels{}, false }
