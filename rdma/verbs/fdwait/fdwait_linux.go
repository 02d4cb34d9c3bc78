//go:build linux

package fdwait

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Waiter waits for readability of an fd it does not own: it polls a
// duplicate, so closing the Waiter never closes the original fd.
//
// A Waiter remembers the context of its last Wait together with the
// context.AfterFunc registration that interrupts a Wait when that context
// ends, so a caller that waits again and again with the same context (or
// contexts sharing one Done channel) allocates nothing per Wait. The
// registration is replaced when a Wait brings a context with another Done
// channel and no other Wait is using the remembered one, dropped once its
// context ends, and stopped by Close.
type Waiter struct {
	f        *os.File
	rc       syscall.RawConn
	closed   atomic.Bool
	onCancel func() // sets a past read deadline: wakes the blocked Read

	mu     sync.Mutex
	done   <-chan struct{} // Done channel of the remembered context; nil if none
	stop   func() bool     // its AfterFunc registration
	active int             // Waits in progress relying on that registration
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
	w := &Waiter{f: f, rc: rc}
	w.onCancel = func() { _ = w.f.SetReadDeadline(time.Unix(1, 0)) }
	return w, nil
}

// readable reports whether fd has input; it never reads.
func readable(fd uintptr) bool {
	fds := [1]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds[:], 0)
	return err == nil && n > 0
}

// arm makes sure a cancel of ctx interrupts the caller's Wait. It returns
// shared=true when the Wait relies on the remembered registration (and must
// call disarm), or a private stop function to call when the Wait ends.
func (w *Waiter) arm(ctx context.Context, done <-chan struct{}) (shared bool, private func() bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stop != nil && w.done == done {
		w.active++
		return true, nil
	}
	if w.active > 0 || w.closed.Load() {
		// Another Wait relies on the remembered context (or the Waiter is
		// closing): leave it armed and give this Wait its own registration.
		return false, context.AfterFunc(ctx, w.onCancel)
	}
	if w.stop != nil && !w.stop() {
		// The old context ended between Waits: its deadline is (being) set.
		// Clear it; a callback still running is caught by Wait's loop.
		_ = w.f.SetReadDeadline(time.Time{})
	}
	w.done, w.stop, w.active = done, context.AfterFunc(ctx, w.onCancel), 1
	return true, nil
}

// disarm ends a Wait that relied on the remembered registration. When its
// context has ended the registration has fired: forget it, and clear the
// deadline once no other Wait still needs it to wake.
func (w *Waiter) disarm(ctx context.Context) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.active--
	if ctx.Err() == nil {
		return
	}
	if w.stop != nil {
		w.stop()
		w.done, w.stop = nil, nil
	}
	if w.active == 0 {
		_ = w.f.SetReadDeadline(time.Time{})
	}
}

// Wait blocks until the fd is readable. It returns ctx.Err() when ctx ends
// first and ErrClosed once the Waiter is closed. Wait may return with the
// fd readable by the time another reader drained it; callers loop. Waits
// may run concurrently; repeated Waits with the same context allocate
// nothing.
func (w *Waiter) Wait(ctx context.Context) error {
	if w.closed.Load() {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	var (
		shared  bool
		private func() bool
	)
	if done := ctx.Done(); done != nil {
		shared, private = w.arm(ctx, done)
	}
	for {
		err := w.rc.Read(readable)
		if errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() == nil {
			// A late cancel of an earlier Wait's context set the deadline.
			_ = w.f.SetReadDeadline(time.Time{})
			continue
		}
		if shared {
			w.disarm(ctx)
		} else if private != nil && !private() {
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

// Close releases the duplicate fd, stops the remembered context
// registration and wakes any Wait with ErrClosed. Idempotent.
func (w *Waiter) Close() error {
	w.closed.Store(true)
	w.mu.Lock()
	if w.stop != nil {
		w.stop()
		w.done, w.stop = nil, nil
	}
	w.mu.Unlock()
	if err := w.f.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("fdwait: %w", err)
	}
	return nil
}
