//go:build linux

package verbs

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// checkUverbs requires /dev/infiniband/uverbs* character devices, which a
// container needs passed in to use RDMA.
func checkUverbs() error {
	ents, err := os.ReadDir("/dev/infiniband")
	if err != nil {
		return fmt.Errorf("no uverbs devices: %w", err)
	}
	for _, e := range ents {
		if len(e.Name()) > 6 && e.Name()[:6] == "uverbs" {
			return nil
		}
	}
	return fmt.Errorf("no uverbs devices in /dev/infiniband")
}

// memlockLimit returns the RLIMIT_MEMLOCK soft limit and whether the
// process can lock without limit (root, approximating CAP_IPC_LOCK).
func memlockLimit() (uint64, bool, error) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl); err != nil {
		return 0, false, fmt.Errorf("getrlimit(RLIMIT_MEMLOCK): %w", err)
	}
	return rl.Cur, os.Geteuid() == 0, nil
}
