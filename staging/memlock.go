package staging

import (
	"fmt"
	"strings"
)

// MemlockError reports that the arena could not be locked in RAM. Its
// message says how much was needed, the current RLIMIT_MEMLOCK and how to
// raise it. It matches ErrMemlock and the underlying errno with errors.Is.
type MemlockError struct {
	// Need is the number of bytes that had to be locked.
	Need uint64
	// Soft and Hard are RLIMIT_MEMLOCK; Unlimited for RLIM_INFINITY.
	Soft, Hard uint64
	// Privileged is true when the process had CAP_IPC_LOCK (then the
	// limit does not apply and the failure means RAM is short).
	Privileged bool
	// Err is the errno from mlock (EPERM, ENOMEM, EAGAIN).
	Err error
}

// Unlimited is the RLIMIT_MEMLOCK value meaning "no limit".
const Unlimited = ^uint64(0)

func (e *MemlockError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "staging: cannot lock %s of staging memory in RAM (mlock: %v)", human(e.Need), e.Err)
	if e.Privileged {
		fmt.Fprintf(&b, "; the process has CAP_IPC_LOCK, so RLIMIT_MEMLOCK (%s) does not apply: the machine is short of free RAM; use a smaller arena or free memory", limitString(e.Soft))
		return b.String()
	}
	fmt.Fprintf(&b, "; RLIMIT_MEMLOCK is %s (hard limit %s) and at least %s is needed", limitString(e.Soft), limitString(e.Hard), human(e.Need))
	kib := (e.Need + 1023) / 1024
	fmt.Fprintf(&b, "; raise it with `ulimit -l %d` (KiB) or `ulimit -l unlimited` in the shell that starts the process", kib)
	if e.Hard != Unlimited && e.Hard < e.Need {
		b.WriteString(" (the hard limit is also too low: set it as root or in /etc/security/limits.conf: `* - memlock unlimited`)")
	}
	b.WriteString(", LimitMEMLOCK=infinity in the systemd unit, or `--ulimit memlock=-1:-1` for docker/podman containers")
	b.WriteString("; granting CAP_IPC_LOCK (IPC_LOCK in a Kubernetes securityContext) also lifts the limit; for small test setups Options.Unlocked runs without locking")
	return b.String()
}

// Unwrap returns ErrMemlock and the errno.
func (e *MemlockError) Unwrap() []error { return []error{ErrMemlock, e.Err} }

func limitString(v uint64) string {
	if v == Unlimited {
		return "unlimited"
	}
	return human(v)
}

func human(n uint64) string {
	const (
		kib = 1 << 10
		mib = 1 << 20
		gib = 1 << 30
	)
	switch {
	case n >= gib:
		return fmt.Sprintf("%.1f GiB (%d bytes)", float64(n)/gib, n)
	case n >= mib:
		return fmt.Sprintf("%.1f MiB (%d bytes)", float64(n)/mib, n)
	case n >= kib:
		return fmt.Sprintf("%.1f KiB (%d bytes)", float64(n)/kib, n)
	}
	return fmt.Sprintf("%d bytes", n)
}
