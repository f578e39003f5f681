//go:build !unix

package model

import "os"

// mapFile reads the whole file where memory mapping is not available.
func mapFile(path string) ([]byte, func() error, error) {
	data, err := os.ReadFile(path)
	return data, nil, err
}
