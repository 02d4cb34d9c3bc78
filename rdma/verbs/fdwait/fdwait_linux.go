//go:build linux

package fdwait

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Waiter waits for readability of an fd it does not own: it polls a
// duplicate, so closing the Waiter never closes the original fd.
type Waiter struct {
	f      *os.File
	rc     syscall.RawConn
	closed atomic.Bool
}

// New returns a Waiter for fd, which it sets non-blocking. The caller
// keeps ownership of fd and must Close the Waiter before closing fd.
func New(fd int) (*Waiter, error) {
	if err := unix.SetNonblock(fd, true); err != nil {
		return nil, fmt.Errorf("fdwait: set fd %d non-blocking: %w", fd, err)
	}
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("fdwait: dup fd %d: %w", fd, err)
	}
	f := os.NewFile(uintptr(dup), "fdwait")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("fdwait: fd %d: %w", fd, err)
	}
	return &Waiter{f: f, rc: rc}, nil
}

// Wait blocks until the fd is readable. It returns ctx.Err() when ctx ends
// first and ErrClosed once the Waiter is closed. Wait may return with the
// fd readable by the time another reader drained it; callers loop.
func (w *Waiter) Wait(ctx context.Context) error {
	if w.closed.Load() {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	var stop func() bool
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, func() { _ = w.f.SetReadDeadline(time.Unix(1, 0)) })
	}
	for {
		err := w.rc.Read(func(fd uintptr) bool {
			fds := [1]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			n, err := unix.Poll(fds[:], 0)
			return err == nil && n > 0
		})
		if errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() == nil {
			// A late cancel of an earlier Wait's context set the deadline.
			_ = w.f.SetReadDeadline(time.Time{})
			continue
		}
		if stop != nil && !stop() {
			// The deadline was (or is being) set: clear it for the next Wait.
			_ = w.f.SetReadDeadline(time.Time{})
		}
		switch {
		case err == nil:
			return nil
		case w.closed.Load() || errors.Is(err, os.ErrClosed):
			return ErrClosed
		case errors.Is(err, os.ErrDeadlineExceeded):
			return ctx.Err()
		}
		return fmt.Errorf("fdwait: %w", err)
	}
}

// Close releases the duplicate fd and wakes any Wait with ErrClosed.
// Idempotent.
func (w *Waiter) Close() error {
	w.closed.Store(true)
	if err := w.f.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("fdwait: %w", err)
	}
	return nil
}
