//go:build linux

package demo

import (
	"os"

	"golang.org/x/sys/unix"
)

// canLock reports whether n more bytes can probably be locked in RAM:
// root (or CAP_IPC_LOCK, which root has) is not bound by RLIMIT_MEMLOCK;
// others need the soft limit to cover n on top of what is already locked
// (not known here, so a quarter of the limit is kept as headroom).
func canLock(n uint64) bool {
	if os.Geteuid() == 0 {
		return true
	}
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl); err != nil {
		return false
	}
	if rl.Cur == unix.RLIM_INFINITY {
		return true
	}
	return n <= rl.Cur-rl.Cur/4
}

// memlockLimit describes RLIMIT_MEMLOCK for the fallback log line.
func memlockLimit() string {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl); err != nil {
		return "unknown"
	}
	if rl.Cur == unix.RLIM_INFINITY {
		return "unlimited"
	}
	return human(int64(rl.Cur))
}
