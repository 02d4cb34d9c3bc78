//go:build linux

package staging

import (
	"errors"
	"fmt"
	"log/slog"

	"golang.org/x/sys/unix"
)

type mapping struct {
	mem    []byte
	pinned bool
	huge   bool
}

// mapArena maps size bytes of anonymous memory, marks it MADV_DONTFORK and
// locks it, as opts says.
func mapArena(size uint64, opts Options, log *slog.Logger) (mapping, error) {
	var m mapping
	const flags = unix.MAP_PRIVATE | unix.MAP_ANONYMOUS | unix.MAP_POPULATE
	prot := unix.PROT_READ | unix.PROT_WRITE
	if opts.HugePages {
		hsize := (size + hugePageSize - 1) &^ (hugePageSize - 1)
		mem, err := unix.Mmap(-1, 0, int(hsize), prot, flags|unix.MAP_HUGETLB)
		if err == nil {
			m.mem, m.huge = mem, true
		} else {
			log.Info("staging: explicit huge pages unavailable, using transparent huge pages", "size", hsize, "err", err)
		}
	}
	if m.mem == nil {
		mem, err := unix.Mmap(-1, 0, int(size), prot, flags)
		if err != nil {
			return m, fmt.Errorf("staging: mmap %d bytes: %w", size, err)
		}
		m.mem = mem
		if opts.HugePages {
			if err := unix.Madvise(mem, unix.MADV_HUGEPAGE); err != nil {
				log.Info("staging: transparent huge pages unavailable, using 4 KiB pages", "err", err)
			}
		}
	}
	if err := unix.Madvise(m.mem, unix.MADV_DONTFORK); err != nil {
		_ = unix.Munmap(m.mem)
		return mapping{}, fmt.Errorf("staging: madvise(MADV_DONTFORK): %w", err)
	}
	if opts.Unlocked {
		log.Warn("staging: arena is not locked in RAM (Options.Unlocked); RDMA registration may fail or pages may move", "size", len(m.mem))
		return m, nil
	}
	if err := unix.Mlock(m.mem); err != nil {
		_ = unix.Munmap(m.mem)
		return mapping{}, memlockError(uint64(len(m.mem)), err)
	}
	m.pinned = true
	return m, nil
}

func memlockError(need uint64, err error) error {
	e := &MemlockError{Need: need, Soft: Unlimited, Hard: Unlimited, Err: err}
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl) == nil {
		e.Soft, e.Hard = rl.Cur, rl.Max
	}
	e.Privileged = hasIPCLock()
	if !errors.Is(err, unix.EPERM) && !errors.Is(err, unix.ENOMEM) && !errors.Is(err, unix.EAGAIN) {
		return fmt.Errorf("staging: mlock %d bytes: %w", need, err)
	}
	return e
}

// hasIPCLock reports whether the calling thread has CAP_IPC_LOCK in its
// effective set.
func hasIPCLock() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	return data[unix.CAP_IPC_LOCK/32].Effective&(1<<(unix.CAP_IPC_LOCK%32)) != 0
}

func unmapArena(mem []byte) error { return unix.Munmap(mem) }
