package rdma

import (
	"bytes"
	"errors"
	"testing"

	"github.com/ferrylabs/ferry/transport"
)

func TestReadWriteSizes(t *testing.T) {
	c := newCluster(t)
	const mem = 8 << 20
	a := c.addHost(t, mem, "cpu:0", testConfig())
	b := c.addHost(t, mem, "cpu:1", testConfig())
	seg := segmentOf(b)
	sizes := []uint64{0, 1, 7, 4095, 65535, 65536, 65537, 65536 + 16384, 65536 + 16385, 3*65536 + 123, 5 << 20}
	for _, op := range []transport.Opcode{transport.Write, transport.Read} {
		for _, n := range sizes {
			loff, roff := uint64(3), uint64(1000)
			fill(a.mem[loff:loff+n], byte(n)+1)
			fill(b.mem[roff:roff+n], byte(n)+100)
			task := &transport.Task{Op: op, Local: a.mem[loff : loff+n], LocalAddr: a.region.Addr + loff,
				Target: seg, TargetAddr: b.region.Addr + roff}
			run(t, a.tr, task)
			if task.State() != transport.StateCompleted || task.Transferred() != n {
				t.Fatalf("%v %d: state %d transferred %d err %v", op, n, task.State(), task.Transferred(), task.Err())
			}
			src, dst := a.mem[loff:loff+n], b.mem[roff:roff+n]
			if !bytes.Equal(src, dst) {
				t.Fatalf("%v %d: data differs", op, n)
			}
		}
	}
}

func TestManyConcurrentTasksAndSpraying(t *testing.T) {
	c := newCluster(t)
	const mem = 4 << 20
	a := c.addHost(t, mem, "cpu:0", testConfig())
	b := c.addHost(t, mem, "cpu:0", testConfig())
	seg := segmentOf(b)
	fill(a.mem, 9)
	var tasks []*transport.Task
	const chunk = 256 << 10
	for off := uint64(0); off < mem; off += chunk {
		tasks = append(tasks, &transport.Task{Op: transport.Write, Local: a.mem[off : off+chunk],
			LocalAddr: a.region.Addr + off, Target: seg, TargetAddr: b.region.Addr + off})
	}
	run(t, a.tr, tasks...)
	for i, task := range tasks {
		if task.State() != transport.StateCompleted {
			t.Fatalf("task %d: %v", i, task.Err())
		}
	}
	if !bytes.Equal(a.mem, b.mem) {
		t.Fatal("data differs")
	}
	var total uint64
	for _, n := range a.prov.NICs() {
		st := n.Stats()
		if st.BytesWritten == 0 {
			t.Errorf("NIC %s carried no bytes: slices were not sprayed", n.Info().Name)
		}
		total += st.BytesWritten
	}
	if total != mem {
		t.Errorf("NICs wrote %d bytes, want %d", total, mem)
	}
}

func TestUnregisteredAddresses(t *testing.T) {
	c := newCluster(t)
	a := c.addHost(t, 1<<20, "cpu:0", testConfig())
	b := c.addHost(t, 1<<20, "cpu:0", testConfig())
	seg := segmentOf(b)
	other := make([]byte, 64)
	bad := []*transport.Task{
		{Op: transport.Read, Local: other, LocalAddr: 0x10, Target: seg, TargetAddr: b.region.Addr},
		{Op: transport.Read, Local: a.mem[:64], LocalAddr: a.region.Addr, Target: seg, TargetAddr: b.region.End() - 10},
	}
	run(t, a.tr, bad...)
	for i, task := range bad {
		if task.State() != transport.StateFailed || !errors.Is(task.Err(), transport.ErrAddressNotRegistered) {
			t.Errorf("task %d: state %d err %v", i, task.State(), task.Err())
		}
	}
}

func TestCloseIdempotentAndSubmitAfterClose(t *testing.T) {
	c := newCluster(t)
	a := c.addHost(t, 1<<16, "cpu:0", testConfig())
	if err := a.tr.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.tr.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.tr.Submit([]*transport.Task{{}}); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("submit after close: %v", err)
	}
}
