package model

import (
	"syscall"
	"unsafe"
)

// madvCollapse is MADV_COLLAPSE (Linux 6.1+), missing from package syscall.
const madvCollapse = 25

// hugePages asks the kernel to back the 2 MiB-aligned interior of the n bytes at p
// with transparent huge pages. Decode streams every weight once per token: with 4 KiB
// pages that is a TLB miss (a nested page walk in a virtual machine) every 64 cache
// lines, and the hardware prefetchers stop at each 4 KiB boundary. When fill is true
// the range has just been written: collapse it now rather than wait for khugepaged.
// Errors (THP disabled, an older kernel) are ignored: the pages stay as they were.
func hugePages(p unsafe.Pointer, n uintptr, filled bool) {
	const huge = 2 << 20
	start := (uintptr(p) + huge - 1) &^ (huge - 1)
	end := (uintptr(p) + n) &^ (huge - 1)
	if end <= start {
		return
	}
	advice := uintptr(syscall.MADV_HUGEPAGE)
	if filled {
		advice = madvCollapse
	}
	syscall.Syscall(syscall.SYS_MADVISE, start, end-start, advice)
}
