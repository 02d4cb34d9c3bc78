//go:build unix

package rdma

import "syscall"

// processCPU returns the user+system CPU time this process used, in ns,
// or -1 if it cannot be read.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
