package verbs

import (
	"errors"
	"fmt"
	"sync"
)

// MinMemlock is the RLIMIT_MEMLOCK below which Probe reports RDMA as not
// usable for a process without CAP_IPC_LOCK: registering staging memory
// pins it, and a small limit makes every large ibv_reg_mr fail.
const MinMemlock = 64 << 20

var probeOnce = sync.OnceValue(func() error { return probe(System()) })

// Probe reports whether RDMA through System can be used here, checking
// once and caching the answer (like cilium/ebpf's feature tests). A nil
// result means at least one device is present, /dev/infiniband exists and
// the memlock limit is large enough. Otherwise the error wraps
// ErrNotSupported and says which check failed: ErrNoDevice (no device or
// no kernel RDMA support), no uverbs character devices, or a memlock limit
// that is too small.
func Probe() error { return probeOnce() }

func probe(p Provider) error {
	devs, err := p.Devices()
	if err != nil {
		if errors.Is(err, ErrNotSupported) {
			return err
		}
		return fmt.Errorf("%w: listing devices: %w", ErrNotSupported, err)
	}
	if len(devs) == 0 {
		return ErrNoDevice
	}
	if err := checkUverbs(); err != nil {
		return fmt.Errorf("%w: %w", ErrNotSupported, err)
	}
	cur, privileged, err := memlockLimit()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNotSupported, err)
	}
	if err := checkMemlock(cur, privileged); err != nil {
		return fmt.Errorf("%w: %w", ErrNotSupported, err)
	}
	return nil
}

// checkMemlock fails when an unprivileged process may lock less than
// MinMemlock bytes. cur is the soft limit (^uint64(0) for unlimited).
func checkMemlock(cur uint64, privileged bool) error {
	if privileged || cur >= MinMemlock {
		return nil
	}
	return fmt.Errorf("RLIMIT_MEMLOCK is %d bytes, below %d: raise it (ulimit -l) or grant CAP_IPC_LOCK", cur, MinMemlock)
}
