// Package verbstest holds test helpers for code built on rdma/verbs.
package verbstest

import (
	"errors"
	"testing"

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
