//go:build unix

package main

import (
	"os"
	"runtime"
	"syscall"
)

// maxRSS is the peak resident set of an ended child from its rusage, in
// bytes (0 when unknown): where /proc cannot say. On Linux it may be the
// parent's peak at the child's start.
func maxRSS(ps *os.ProcessState) int64 {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	if runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		return int64(ru.Maxrss) // bytes there, kilobytes elsewhere
	}
	return int64(ru.Maxrss) << 10
}
