package faketransport

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"
	"unsafe"

	"github.com/ferrylabs/ferry/engine/metadata"
	"github.com/ferrylabs/ferry/transport"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type host string

func (h host) LocalName() string    { return string(h) }
func (h host) LocalHost() string    { return "127.0.0.1" }
func (h host) Logger() *slog.Logger { return slog.New(slog.DiscardHandler) }
func (h host) Call(context.Context, string, metadata.FrameType, []byte) ([]byte, error) {
	return nil, errors.New("no daemon")
}
func (h host) Refresh(context.Context, *transport.Segment) error { return nil }

func region(b []byte, remote bool) transport.Region {
	return transport.Region{Mem: b, Addr: uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b)))), RemoteAccessible: remote}
}

func run(t *testing.T, tr *Transport, task *transport.Task) error {
	t.Helper()
	done := make(chan struct{})
	task.Reset(func(*transport.Task) { close(done) })
	if err := tr.Submit([]*transport.Task{task}); err != nil {
		return err
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("task never finished")
	}
	return task.Err()
}

func TestFakeCopyBoundsAndFaults(t *testing.T) {
	n := NewNetwork()
	a, err := n.New(host("a:1"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := n.New(host("b:1"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := n.New(host("b:1"), Options{}); err == nil {
		t.Fatal("duplicate join accepted")
	}
	local, remote, private := []byte("hello fake"), make([]byte, 10), make([]byte, 10)
	a.Register(region(local, false))
	b.Register(region(remote, true))
	b.Register(region(private, false))
	seg := transport.NewSegment(1, "b:1", &metadata.SegmentDesc{Name: "b:1", Protocol: "fake"})
	if !a.Reaches(seg.Desc()) || a.Reaches(&metadata.SegmentDesc{Name: "c:1"}) {
		t.Fatal("Reaches wrong")
	}
	task := &transport.Task{Op: transport.Write, Local: local, Target: seg, TargetAddr: region(remote, true).Addr}
	if err := run(t, a, task); err != nil || !bytes.Equal(remote, local) || task.Transferred() != 10 {
		t.Fatalf("write: %v %q", err, remote)
	}
	task.TargetAddr++ // one byte past the end
	if err := run(t, a, task); !errors.Is(err, transport.ErrAddressNotRegistered) {
		t.Fatalf("out of bounds: %v", err)
	}
	task.TargetAddr = region(private, false).Addr
	if err := run(t, a, task); !errors.Is(err, transport.ErrAddressNotRegistered) {
		t.Fatalf("not remote-accessible: %v", err)
	}
	task.TargetAddr = region(remote, true).Addr
	a.FailNext(1)
	if err := run(t, a, task); !errors.Is(err, ErrInjected) || !errors.Is(err, transport.ErrPeerUnreachable) {
		t.Fatalf("injected: %v", err)
	}
	if err := run(t, a, task); err != nil {
		t.Fatalf("after FailNext(1): %v", err)
	}
	// Close fails a delayed task and later submits.
	a.SetDelay(time.Hour)
	done := make(chan struct{})
	task.Reset(func(*transport.Task) { close(done) })
	a.Submit([]*transport.Task{task})
	a.Close()
	<-done
	if !errors.Is(task.Err(), transport.ErrClosed) {
		t.Fatalf("delayed task after Close: %v", task.Err())
	}
	if err := a.Submit([]*transport.Task{task}); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("Submit after Close: %v", err)
	}
	if b.Reaches(&metadata.SegmentDesc{Name: "a:1"}) {
		t.Fatal("closed transport still on the network")
	}
}

func TestFakeCancel(t *testing.T) {
	n := NewNetwork()
	a, err := n.New(host("a:1"), Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := n.New(host("b:1"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	local, other, remote := make([]byte, 8), make([]byte, 8), []byte("remote!!")
	a.Register(region(local, false))
	a.Register(region(other, false))
	b.Register(region(remote, true))
	seg := transport.NewSegment(1, "b:1", &metadata.SegmentDesc{Name: "b:1", Protocol: "fake"})
	raddr := region(remote, true).Addr
	delayed := &transport.Task{Op: transport.Read, Local: local, Target: seg, TargetAddr: raddr}
	queued := &transport.Task{Op: transport.Read, Local: local, Target: seg, TargetAddr: raddr}
	unrelated := &transport.Task{Op: transport.Read, Local: other, Target: seg, TargetAddr: raddr}
	done := make(chan *transport.Task, 3)
	for _, task := range []*transport.Task{delayed, queued, unrelated} {
		task.Reset(func(x *transport.Task) { done <- x })
	}
	a.SetDelay(time.Hour)
	if err := a.Submit([]*transport.Task{delayed, queued, unrelated}); err != nil {
		t.Fatal(err)
	}
	a.Cancel([]*transport.Task{delayed, queued})
	// The one worker took delayed; queued was dropped at once. delayed
	// finishes after Cancel woke it, without copying.
	for range 2 {
		select {
		case x := <-done:
			if x == unrelated {
				t.Fatal("unrelated task finished while delayed by an hour")
			}
			if !errors.Is(x.Err(), transport.ErrCanceled) {
				t.Fatalf("cancelled task: %v", x.Err())
			}
		case <-time.After(10 * time.Second):
			t.Fatal("cancelled tasks never finished")
		}
	}
	if !bytes.Equal(local, make([]byte, 8)) {
		t.Fatalf("cancelled read wrote %q", local)
	}
	a.SetDelay(0)
	a.Cancel([]*transport.Task{unrelated}) // unrelated is delayed: woken and cancelled too
	x := <-done
	if x != unrelated || !errors.Is(x.Err(), transport.ErrCanceled) {
		t.Fatalf("third task: %v", x.Err())
	}
	// A task that is no longer held is ignored, and the transport still works.
	a.Cancel([]*transport.Task{unrelated})
	if err := run(t, a, unrelated); err != nil || !bytes.Equal(other, remote) {
		t.Fatalf("read after cancels: %v %q", err, other)
	}
}
