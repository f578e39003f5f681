//go:build unix && !linux

package model

import "syscall"

const mmapFlags = syscall.MAP_SHARED
