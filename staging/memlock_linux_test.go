//go:build linux

package staging

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

const memlockChildEnv = "FERRY_STAGING_MEMLOCK_CHILD"

// TestMemlockLimit runs a child process with RLIMIT_MEMLOCK at 1 MiB and
// without CAP_IPC_LOCK on its thread, and checks that New fails with a
// MemlockError whose message names the need, the limit and the fixes.
func TestMemlockLimit(t *testing.T) {
	if os.Getenv(memlockChildEnv) == "1" {
		memlockChild()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestMemlockLimit$", "-test.count=1")
	cmd.Env = append(os.Environ(), memlockChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	s := string(out)
	if strings.Contains(s, "SKIP-CHILD") {
		t.Skipf("child could not set up: %s", s)
	}
	for _, want := range []string{"MEMLOCK-ERROR", "4.0 MiB", "RLIMIT_MEMLOCK is 1.0 MiB", "ulimit -l 4096", "LimitMEMLOCK", "--ulimit memlock", "is-ErrMemlock=true"} {
		if !strings.Contains(s, want) {
			t.Errorf("child output lacks %q:\n%s", want, s)
		}
	}
}

func memlockChild() {
	runtime.LockOSThread() // the capability change below is per thread
	lim := unix.Rlimit{Cur: 1 << 20, Max: 1 << 20}
	if err := unix.Setrlimit(unix.RLIMIT_MEMLOCK, &lim); err != nil {
		fmt.Println("SKIP-CHILD setrlimit:", err)
		return
	}
	if hasIPCLock() {
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capget(&hdr, &data[0]); err != nil {
			fmt.Println("SKIP-CHILD capget:", err)
			return
		}
		data[unix.CAP_IPC_LOCK/32].Effective &^= 1 << (unix.CAP_IPC_LOCK % 32)
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			fmt.Println("SKIP-CHILD capset:", err)
			return
		}
	}
	a, err := New(Options{Size: 4 << 20, Logger: quiet})
	if err == nil {
		_ = a.Close()
		fmt.Println("UNEXPECTED-SUCCESS")
		return
	}
	var me *MemlockError
	if errors.As(err, &me) {
		fmt.Println("MEMLOCK-ERROR", err)
	} else {
		fmt.Println("OTHER-ERROR", err)
	}
	fmt.Printf("is-ErrMemlock=%v\n", errors.Is(err, ErrMemlock))
}
