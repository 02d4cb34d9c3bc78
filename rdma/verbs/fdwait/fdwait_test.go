//go:build linux

package fdwait

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func eventfd(t *testing.T) int {
	t.Helper()
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

func TestWaitWakesOnReadable(t *testing.T) {
	fd := eventfd(t)
	w, err := New(fd)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	done := make(chan error, 1)
	go func() { done <- w.Wait(context.Background()) }()
	select {
	case err := <-done:
		t.Fatalf("Wait returned %v before the fd was readable", err)
	case <-time.After(20 * time.Millisecond):
	}
	one := [8]byte{1}
	if _, err := unix.Write(fd, one[:]); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Wait = %v", err)
	}
	// Still readable: returns at once.
	if err := w.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestWaitContextAndClose(t *testing.T) {
	fd := eventfd(t)
	w, err := New(fd)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := w.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait = %v; want DeadlineExceeded", err)
	}
	// The next Wait is not poisoned by the old deadline.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel2()
	start := time.Now()
	if err := w.Wait(ctx2); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) < 20*time.Millisecond {
		t.Fatalf("second Wait = %v after %v", err, time.Since(start))
	}
	done := make(chan error, 1)
	go func() { done <- w.Wait(context.Background()) }()
	time.Sleep(10 * time.Millisecond)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("Wait after Close = %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	// The original fd is still open.
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
		t.Fatalf("original fd closed: %v", err)
	}
}
