package staging

import (
	"errors"
	"strings"
	"syscall"
	"testing"
)

func TestMemlockMessage(t *testing.T) {
	e := &MemlockError{Need: 64 << 20, Soft: 8 << 20, Hard: 8 << 20, Err: syscall.ENOMEM}
	msg := e.Error()
	for _, want := range []string{
		"64.0 MiB", "RLIMIT_MEMLOCK is 8.0 MiB", "hard limit 8.0 MiB", "ulimit -l 65536",
		"LimitMEMLOCK=infinity", "--ulimit memlock", "CAP_IPC_LOCK", "Unlocked", "cannot allocate memory",
		"limits.conf",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
	if !errors.Is(e, ErrMemlock) || !errors.Is(e, syscall.ENOMEM) {
		t.Error("MemlockError does not match ErrMemlock and its errno")
	}

	e = &MemlockError{Need: 1 << 30, Soft: 8 << 20, Hard: Unlimited, Err: syscall.EPERM}
	if msg := e.Error(); strings.Contains(msg, "limits.conf") || !strings.Contains(msg, "hard limit unlimited") {
		t.Errorf("unlimited hard limit rendered wrong:\n%s", msg)
	}

	e = &MemlockError{Need: 1 << 30, Soft: 8 << 20, Hard: 8 << 20, Privileged: true, Err: syscall.ENOMEM}
	if msg := e.Error(); !strings.Contains(msg, "short of free RAM") || strings.Contains(msg, "ulimit -l") {
		t.Errorf("privileged failure rendered wrong:\n%s", msg)
	}
}
