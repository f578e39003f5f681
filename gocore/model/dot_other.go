//go:build !amd64

package model

// dot returns Σ a[i]·b[i] over len(a) elements (len(b) >= len(a)).
func dot(a, b []float32) float32 { return dotGo(a, b[:len(a)]) }
