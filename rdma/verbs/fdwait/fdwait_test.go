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

func TestWaitSameContextAllocatesNothing(t *testing.T) {
	fd := eventfd(t)
	w, err := New(fd)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	one := [8]byte{1}
	if _, err := unix.Write(fd, one[:]); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var werr error
	allocs := testing.AllocsPerRun(200, func() {
		if err := w.Wait(ctx); err != nil {
			werr = err
		}
	})
	if werr != nil {
		t.Fatal(werr)
	}
	if allocs != 0 {
		t.Fatalf("Wait with a reused context: %v allocs/op; want 0", allocs)
	}
	// A context derived with WithValue shares the Done channel: still free.
	vctx := context.WithValue(ctx, struct{}{}, 1)
	allocs = testing.AllocsPerRun(200, func() {
		if err := w.Wait(vctx); err != nil {
			werr = err
		}
	})
	if werr != nil {
		t.Fatal(werr)
	}
	if allocs != 0 {
		t.Fatalf("Wait with a value context of the reused one: %v allocs/op; want 0", allocs)
	}
}

func TestWaitReusedContextCancelInterrupts(t *testing.T) {
	fd := eventfd(t)
	w, err := New(fd)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	one := [8]byte{1}
	if _, err := unix.Write(fd, one[:]); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := 0; i < 3; i++ {
		if err := w.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var buf [8]byte
	if _, err := unix.Read(fd, buf[:]); err != nil { // drain: no longer readable
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Wait(ctx) }()
	select {
	case err := <-done:
		t.Fatalf("Wait returned %v before cancel", err)
	case <-time.After(20 * time.Millisecond):
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Wait after cancel = %v; want Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("cancel of the reused context did not interrupt Wait")
	}
	// The fired registration is forgotten: a fresh context still works.
	if _, err := unix.Write(fd, one[:]); err != nil {
		t.Fatal(err)
	}
	if err := w.Wait(context.Background()); err != nil {
		t.Fatalf("Wait after the cancelled context = %v", err)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	if err := w.Wait(ctx2); err != nil {
		t.Fatalf("Wait with a new context = %v", err)
	}
}

func TestWaitLateCancelOfEarlierContext(t *testing.T) {
	fd := eventfd(t)
	w, err := New(fd)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	one := [8]byte{1}
	if _, err := unix.Write(fd, one[:]); err != nil {
		t.Fatal(err)
	}
	ctxA, cancelA := context.WithCancel(context.Background())
	defer cancelA()
	if err := w.Wait(ctxA); err != nil { // A stays remembered
		t.Fatal(err)
	}
	var buf [8]byte
	if _, err := unix.Read(fd, buf[:]); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"cancelable", "background"} {
		ctxB, cancelB := context.WithCancel(context.Background())
		if name == "background" {
			ctxB = context.Background()
		}
		done := make(chan error, 1)
		go func() { done <- w.Wait(ctxB) }()
		time.Sleep(10 * time.Millisecond)
		cancelA() // late cancel of the earlier context
		select {
		case err := <-done:
			t.Fatalf("%s: Wait returned %v after a cancel of an earlier context", name, err)
		case <-time.After(30 * time.Millisecond):
		}
		if _, err := unix.Write(fd, one[:]); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("%s: Wait = %v", name, err)
		}
		if _, err := unix.Read(fd, buf[:]); err != nil {
			t.Fatal(err)
		}
		cancelB()
		ctxA, cancelA = context.WithCancel(context.Background())
		if _, err := unix.Write(fd, one[:]); err != nil {
			t.Fatal(err)
		}
		if err := w.Wait(ctxA); err != nil {
			t.Fatal(err)
		}
		if _, err := unix.Read(fd, buf[:]); err != nil {
			t.Fatal(err)
		}
	}
	cancelA()
}

func TestWaitConcurrentContexts(t *testing.T) {
	fd := eventfd(t)
	w, err := New(fd)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctxA, cancelA := context.WithCancel(context.Background())
	ctxB, cancelB := context.WithCancel(context.Background())
	defer cancelB()
	doneA := make(chan error, 1)
	doneB := make(chan error, 1)
	go func() { doneA <- w.Wait(ctxA) }()
	time.Sleep(10 * time.Millisecond)
	go func() { doneB <- w.Wait(ctxB) }()
	time.Sleep(10 * time.Millisecond)
	// B did not take A's registration away: cancelling A still wakes A.
	cancelA()
	if err := <-doneA; !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait(A) = %v; want Canceled", err)
	}
	select {
	case err := <-doneB:
		t.Fatalf("Wait(B) returned %v on A's cancel", err)
	case <-time.After(30 * time.Millisecond):
	}
	cancelB()
	if err := <-doneB; !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait(B) = %v; want Canceled", err)
	}
}

func BenchmarkWaitReadable(b *testing.B) {
	fd, err := unix.Eventfd(1, unix.EFD_CLOEXEC) // stays readable: Wait returns at once
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Close(fd)
	w, err := New(fd)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.ReportAllocs()
	for b.Loop() {
		if err := w.Wait(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
