//go:build unix

package model

import (
	"fmt"
	"os"
	"syscall"
)

// mapFile memory-maps a file read-only; an empty file or a failed mapping falls back
// to reading it.
func mapFile(path string) ([]byte, func() error, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	size := fi.Size()
	if size == 0 || size != int64(int(size)) {
		data, err := os.ReadFile(path)
		return data, nil, err
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, mmapFlags)
	if err != nil {
		data, rerr := os.ReadFile(path)
		if rerr != nil {
			return nil, nil, fmt.Errorf("%s: mmap: %v; read: %v", path, err, rerr)
		}
		return data, nil, nil
	}
	return data, func() error { return syscall.Munmap(data) }, nil
}
