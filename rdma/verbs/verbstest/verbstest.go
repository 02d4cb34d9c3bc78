// Package verbstest holds test helpers for code built on rdma/verbs.
package verbstest

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/ferrylabs/ferry/rdma/verbs"
)

// SkipIfNotSupported skips the test when err says RDMA is not available
// here (it matches verbs.ErrNotSupported, which includes ErrNoDevice), and
// fails it for any other non-nil error.
func SkipIfNotSupported(tb testing.TB, err error) {
	tb.Helper()
	if err == nil {
		return
	}
	if errors.Is(err, verbs.ErrNotSupported) {
		tb.Skipf("RDMA not available: %v", err)
	}
	tb.Fatal(err)
}

// RunChecked runs m's tests and, when they pass, checks for leaks: live
// (the count of verbs handles still open, e.g. fakeverbs.LiveHandles)
// must be 0, else the exit code is 99; no goroutine may be left (goleak),
// else it is 1. Leaks are reported on stderr prefixed by name. It returns
// the exit code for os.Exit.
func RunChecked(m *testing.M, name string, live func() int) int {
	code := m.Run()
	if code == 0 {
		if n := live(); n != 0 {
			fmt.Fprintf(os.Stderr, "%s: %d verbs handles leaked\n", name, n)
			code = 99
		}
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	return code
}
