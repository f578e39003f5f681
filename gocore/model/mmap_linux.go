package model

import "syscall"

// mmapFlags pre-faults the mapping (MAP_POPULATE): the first forward pass then does not
// pay a page fault per 4 KiB of weights.
const mmapFlags = syscall.MAP_SHARED | syscall.MAP_POPULATE
