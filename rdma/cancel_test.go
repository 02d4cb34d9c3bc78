package rdma

import (
	"bytes"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ferrylabs/ferry/transport"
)

// startTask submits task and returns a channel closed when it finishes.
func startTask(t *testing.T, tr *Transport, task *transport.Task) <-chan struct{} {
	t.Helper()
	done := make(chan struct{})
	var once sync.Once
	task.Reset(func(tk *transport.Task) {
		if tk.Err() != nil {
			tk.SetState(transport.StateFailed)
		} else {
			tk.SetState(transport.StateCompleted)
		}
		once.Do(func() { close(done) })
	})
	if err := tr.Submit([]*transport.Task{task}); err != nil {
		t.Fatal(err)
	}
	return done
}

func workRequests(h *testHost) uint64 {
	var n uint64
	for _, nic := range h.prov.NICs() {
		n += nic.Stats().WorkRequests
	}
	return n
}

func cancelConfig() Config {
	cfg := testConfig()
	cfg.SliceSize = 4096
	cfg.Verbs.MaxWR = 4 // most slices wait in the endpoint queues
	return cfg
}

// Cancel waits for the posted slices' (delayed) completions, drops the
// queued ones, and nothing is posted or written after it returns.
func TestCancelWaitsForPostedSlices(t *testing.T) {
	c := newCluster(t)
	a := c.addHost(t, 1<<20, "cpu:0", cancelConfig())
	b := c.addHost(t, 1<<20, "cpu:0", cancelConfig())
	fill(b.mem, 7)
	const sentinel = 0x5A
	for i := range a.mem {
		a.mem[i] = sentinel
	}
	const delay = 100 * time.Millisecond
	for _, n := range a.prov.NICs() {
		n.SetCompletionDelay(delay)
	}
	task := &transport.Task{Op: transport.Read, Local: a.mem, LocalAddr: a.region.Addr, Target: segmentOf(b), TargetAddr: b.region.Addr}
	done := startTask(t, a.tr, task)
	time.Sleep(delay / 2) // connected, first slices posted and not completed
	a.tr.Cancel([]*transport.Task{task})
	select {
	case <-done:
	default:
		t.Fatal("Cancel returned before the task finished")
	}
	if task.State() != transport.StateFailed || !errors.Is(task.Err(), transport.ErrCanceled) {
		t.Fatalf("state %d err %v", task.State(), task.Err())
	}
	executed := workRequests(a)
	if executed == 0 || executed >= uint64(len(a.mem))/4096 {
		t.Fatalf("%d work requests executed; want some, not all %d", executed, len(a.mem)/4096)
	}
	for i := range a.mem {
		a.mem[i] = sentinel
	}
	time.Sleep(3 * delay)
	if got := workRequests(a); got != executed {
		t.Fatalf("%d work requests executed after Cancel returned", got-executed)
	}
	if !bytes.Equal(a.mem, bytes.Repeat([]byte{sentinel}, len(a.mem))) {
		t.Fatal("local memory written after Cancel returned")
	}
	// The transport still works.
	for _, n := range a.prov.NICs() {
		n.SetCompletionDelay(0)
	}
	again := &transport.Task{Op: transport.Read, Local: a.mem[:64<<10], LocalAddr: a.region.Addr, Target: segmentOf(b), TargetAddr: b.region.Addr}
	run(t, a.tr, again)
	if again.Err() != nil || !bytes.Equal(a.mem[:64<<10], b.mem[:64<<10]) {
		t.Fatalf("read after cancel: %v", again.Err())
	}
}

// Completions that do not come within the grace period are flushed by
// moving the QPs to ERR; an unrelated task on the same endpoints is
// retried, not failed.
func TestCancelFlushesStuckWork(t *testing.T) {
	c := newCluster(t)
	a := c.addHost(t, 1<<20, "cpu:0", cancelConfig())
	b := c.addHost(t, 1<<20, "cpu:0", cancelConfig())
	fill(a.mem, 3)
	for _, n := range a.prov.NICs() {
		n.SetCompletionDelay(time.Hour)
	}
	seg := segmentOf(b)
	stuck := &transport.Task{Op: transport.Write, Local: a.mem[:512<<10], LocalAddr: a.region.Addr, Target: seg, TargetAddr: b.region.Addr}
	other := &transport.Task{Op: transport.Write, Local: a.mem[512<<10:], LocalAddr: a.region.Addr + 512<<10, Target: seg, TargetAddr: b.region.Addr + 512<<10}
	stuckDone := startTask(t, a.tr, stuck)
	otherDone := startTask(t, a.tr, other)
	time.Sleep(50 * time.Millisecond)
	for _, n := range a.prov.NICs() {
		n.SetCompletionDelay(0) // work posted from now on completes
	}
	start := time.Now()
	a.tr.Cancel([]*transport.Task{stuck})
	if d := time.Since(start); d > a.tr.cancelGrace()+2*time.Second {
		t.Fatalf("Cancel took %v", d)
	}
	<-stuckDone
	if !errors.Is(stuck.Err(), transport.ErrCanceled) {
		t.Fatalf("stuck task: %v", stuck.Err())
	}
	select {
	case <-otherDone:
	case <-time.After(10 * time.Second):
		t.Fatal("unrelated task never finished")
	}
	if other.Err() != nil || !bytes.Equal(a.mem[512<<10:], b.mem[512<<10:]) {
		t.Fatalf("unrelated task: %v", other.Err())
	}
}
