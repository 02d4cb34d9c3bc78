//go:build linux && cgo

package verbs

/*
#cgo LDFLAGS: -libverbs
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
)

// cgoCalls counts data-path C calls (PostRW, Poll, ReqNotify), so a
// benchmark can report crossings per work request.
var cgoCalls atomic.Uint64

// DataPathCalls returns how many data-path cgo calls (PostRW, Poll,
// ReqNotify) the System provider has made; benchmarks divide it by the
// number of work requests.
func DataPathCalls() uint64 { return cgoCalls.Load() }

// handle is the lifetime state shared by every wrapper: a lock that data
// path calls hold for reading, a closed flag, a child count and the
// cleanup that releases a leaked handle.
type handle struct {
	mu       sync.RWMutex
	closed   bool
	children atomic.Int32
	cleanup  runtime.Cleanup
}

// track attaches a cleanup to obj that runs release if obj is collected
// without Close, and counts the handle as live. release must not refer to
// obj.
func track[T, A any](h *handle, obj *T, kind string, arg A, release func(A)) {
	liveHandles.Add(1)
	h.cleanup = runtime.AddCleanup(obj, func(a A) {
		slog.Warn("verbs: handle collected without Close", "kind", kind)
		release(a)
		liveHandles.Add(-1)
	}, arg)
}

// beginClose locks h for closing. It returns done=true when h is already
// closed (Close is idempotent) and ErrBusy while children remain; on
// (false, nil) the caller releases the object and calls endClose.
func (h *handle) beginClose() (done bool, err error) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return true, nil
	}
	if n := h.children.Load(); n > 0 {
		h.mu.Unlock()
		return true, fmt.Errorf("%w: %d children still open", ErrBusy, n)
	}
	return false, nil
}

// endClose finishes a close: on success it marks h closed and stops the
// cleanup; on failure h stays open.
func (h *handle) endClose(err error) {
	if err == nil {
		h.closed = true
		h.cleanup.Stop()
		liveHandles.Add(-1)
	}
	h.mu.Unlock()
}

// verbsErr wraps a libibverbs failure with the call that failed. An errno
// of 0 (a library that failed without setting it) becomes EIO.
func verbsErr(call string, err error) error {
	var en syscall.Errno
	if err == nil || (errors.As(err, &en) && en == 0) {
		err = syscall.EIO
	}
	return fmt.Errorf("verbs: %s: %w", call, err)
}

func errnoErr(call string, rc C.int) error {
	if rc == 0 {
		return nil
	}
	return verbsErr(call, syscall.Errno(rc))
}
