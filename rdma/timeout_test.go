package rdma

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/ferrylabs/ferry/transport"
)

// timeoutRead reads 64 KiB (one slice) from b into a while every NIC of
// a holds its next work request for hold, past the 300 ms slice timeout.
// It returns the task and how long it took to finish.
func timeoutRead(t *testing.T, hold time.Duration) (*testHost, *testHost, *transport.Task, time.Duration) {
	t.Helper()
	c := newCluster(t)
	cfg := testConfig()
	cfg.SliceTimeout = 300 * time.Millisecond
	a := c.addHost(t, 1<<20, "cpu:0", cfg)
	b := c.addHost(t, 1<<20, "cpu:0", cfg)
	fill(b.mem, 9)
	clear(a.mem)
	for _, n := range a.prov.NICs() {
		n.HoldNext(1, hold)
	}
	task := &transport.Task{Op: transport.Read, Local: a.mem[:64<<10], LocalAddr: a.region.Addr,
		Target: segmentOf(b), TargetAddr: b.region.Addr}
	start := time.Now()
	run(t, a.tr, task)
	took := time.Since(start)
	for _, n := range a.prov.NICs() {
		n.HoldNext(0, 0)
	}
	if task.State() != transport.StateFailed || !errors.Is(task.Err(), ErrTimeout) {
		t.Fatalf("state %d err %v; want ErrTimeout", task.State(), task.Err())
	}
	return a, b, task, took
}

// checkQuiet overwrites a's memory with a sentinel and checks that no
// work request of a executes and nothing writes the memory for wait.
func checkQuiet(t *testing.T, a *testHost, wait time.Duration) {
	t.Helper()
	const sentinel = 0xA5
	for i := range a.mem {
		a.mem[i] = sentinel
	}
	executed := workRequests(a)
	time.Sleep(wait)
	if got := workRequests(a); got != executed {
		t.Fatalf("%d work requests executed after the task finished", got-executed)
	}
	if !bytes.Equal(a.mem, bytes.Repeat([]byte{sentinel}, len(a.mem))) {
		t.Fatal("local memory written after the task finished")
	}
}

// A timed-out slice whose transfer the device had started (it survives
// the QP entering ERR) keeps the task unfinished until the late
// completion comes back; afterwards nothing touches the task's memory.
func TestSliceTimeoutWaitsForLateCompletion(t *testing.T) {
	const hold = 900 * time.Millisecond
	a, b, _, took := timeoutRead(t, hold)
	if took < hold {
		t.Fatalf("task finished after %v, before the device returned its work request (%v)", took, hold)
	}
	if workRequests(a) == 0 {
		t.Fatal("the held work request never executed")
	}
	checkQuiet(t, a, hold)
	// The transport still works.
	fill(b.mem, 4)
	again := &transport.Task{Op: transport.Read, Local: a.mem[:256<<10], LocalAddr: a.region.Addr,
		Target: segmentOf(b), TargetAddr: b.region.Addr}
	run(t, a.tr, again)
	if again.Err() != nil || !bytes.Equal(a.mem[:256<<10], b.mem[:256<<10]) {
		t.Fatalf("read after timeout: %v", again.Err())
	}
}

// A device that never returns the work request, not even as a flush:
// the task still finishes (bounded), because the QPs are destroyed, and
// the work request never executes.
func TestSliceTimeoutBoundedWhenDeviceNeverReturns(t *testing.T) {
	a, _, _, took := timeoutRead(t, time.Hour)
	if limit := 2*300*time.Millisecond + time.Second + 2*time.Second; took > limit {
		t.Fatalf("task finished after %v; bound %v", took, limit)
	}
	if n := workRequests(a); n != 0 {
		t.Fatalf("%d work requests executed; the held one must have been discarded", n)
	}
	checkQuiet(t, a, 300*time.Millisecond)
}
