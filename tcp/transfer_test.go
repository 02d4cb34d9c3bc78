package tcp

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ferrylabs/ferry/transport"
)

func TestTransferSizesBothWays(t *testing.T) {
	const region = 20 << 20
	reg := prometheus.NewRegistry()
	a := newNode(t, region, WithRegisterer(reg), WithChunkSize(1<<20))
	b := newNode(t, region, WithRegisterer(reg))
	sizes := []int{0, 1, 4097, 64 << 10, 8 << 20}
	for _, dir := range []struct {
		name     string
		from, to *node
	}{{"a->b", a, b}, {"b->a", b, a}} {
		seg := dir.to.segment()
		for _, size := range sizes {
			for _, op := range []transport.Opcode{transport.Write, transport.Read} {
				t.Run(fmt.Sprintf("%s/%v/%d", dir.name, op, size), func(t *testing.T) {
					loff, toff := uint64(3), uint64(region/2+5)
					src, dst := dir.from.mem[loff:loff+uint64(size)], dir.to.mem[toff:toff+uint64(size)]
					if op == transport.Read {
						src, dst = dst, src
					}
					fill(src, byte(size))
					clear(dst)
					dir.to.fence()
					tk := newTask(dir.from, seg, op, loff, toff, size)
					if err := dir.from.t.Submit([]*transport.Task{tk}); err != nil {
						t.Fatal(err)
					}
					wait(t, 20*time.Second, tk)
					dir.to.fence()
					if tk.State() != transport.StateCompleted {
						t.Fatalf("state %d, err %v", tk.State(), tk.Err())
					}
					if tk.Transferred() != uint64(size) {
						t.Fatalf("transferred %d, want %d", tk.Transferred(), size)
					}
					if !bytes.Equal(src, dst) {
						t.Fatalf("%d bytes differ after %v", size, op)
					}
				})
			}
		}
	}
	// a wrote (and b served) 8 MiB + 64 KiB + 4097 + 1 bytes in each direction.
	want := float64(8<<20 + 64<<10 + 4097 + 1)
	if got := metricValue(t, reg, "ferry_tcp_bytes_total", "client", "write"); got != 2*want {
		t.Errorf("client write bytes %v, want %v", got, 2*want)
	}
	if got := metricValue(t, reg, "ferry_tcp_bytes_total", "server", "read"); got != 2*want {
		t.Errorf("server read bytes %v, want %v", got, 2*want)
	}
	if got := metricValue(t, reg, "ferry_tcp_requests_total", "client", "read"); got != 2*float64(len(sizes)) {
		t.Errorf("client read requests %v, want %d", got, 2*len(sizes))
	}
	if got := metricValue(t, reg, "ferry_tcp_task_duration_seconds", "", "write"); got != 2*float64(len(sizes)) {
		t.Errorf("latency samples %v, want %d", got, 2*len(sizes))
	}
}

// metricValue sums a counter (or a histogram's sample count) over the
// series whose role and op labels match ("" matches any).
func metricValue(t *testing.T, reg *prometheus.Registry, name, role, op string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if (lp.GetName() == "role" && role != "" && lp.GetValue() != role) ||
					(lp.GetName() == "op" && op != "" && lp.GetValue() != op) {
					continue series
				}
			}
			if h := m.GetHistogram(); h != nil {
				sum += float64(h.GetSampleCount())
			} else {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

func TestManyConcurrentRequests(t *testing.T) {
	const region = 8 << 20
	a := newNode(t, region, WithLanes(3), WithInflightPerLane(8), WithInflightBytesPerLane(32<<10), WithChunkSize(MinChunkSize*4))
	b := newNode(t, region)
	seg := b.segment()
	fill(a.mem, 1)
	fill(b.mem, 2)
	origA := append([]byte(nil), a.mem...)
	origB := append([]byte(nil), b.mem...)
	b.fence()

	// Each worker owns a disjoint stripe; odd workers read, even ones write.
	const workers, perWorker = 8, 60
	stripe := uint64(region / workers)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 9))
			base := uint64(w) * stripe
			var tasks []*transport.Task
			var off uint64
			for range perWorker {
				size := 1 + rng.IntN(40<<10)
				if off+uint64(size) > stripe {
					break
				}
				op := transport.Write
				if w%2 == 1 {
					op = transport.Read
				}
				tasks = append(tasks, newTask(a, seg, op, base+off, base+off, size))
				off += uint64(size)
			}
			// Submit in small batches to mix Submit calls from many goroutines.
			for i := 0; i < len(tasks); i += 7 {
				if err := a.t.Submit(tasks[i:min(i+7, len(tasks))]); err != nil {
					errs <- err
					return
				}
			}
			wait(t, 30*time.Second, tasks...)
			b.fence()
			for _, tk := range tasks {
				if tk.State() != transport.StateCompleted {
					errs <- fmt.Errorf("worker %d: task failed: %v", w, tk.Err())
					return
				}
			}
			lo, hi := base, base+off
			if w%2 == 0 {
				if !bytes.Equal(b.mem[lo:hi], origA[lo:hi]) {
					errs <- fmt.Errorf("worker %d: remote stripe differs after writes", w)
				}
			} else if !bytes.Equal(a.mem[lo:hi], origB[lo:hi]) {
				errs <- fmt.Errorf("worker %d: local stripe differs after reads", w)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	a.t.mu.RLock()
	defer a.t.mu.RUnlock()
	for _, p := range a.t.peers {
		if p.n < 2 {
			t.Errorf("only %d lane(s) opened under concurrent load", p.n)
		}
	}
}

func TestSplitAcrossLanes(t *testing.T) {
	a := newNode(t, 8<<20, WithLanes(4), WithChunkSize(256<<10))
	b := newNode(t, 8<<20)
	seg := b.segment()
	fill(a.mem, 5)
	tk := newTask(a, seg, transport.Write, 0, 0, 8<<20)
	if err := a.t.Submit([]*transport.Task{tk}); err != nil {
		t.Fatal(err)
	}
	wait(t, 20*time.Second, tk)
	b.fence()
	if tk.Err() != nil || !bytes.Equal(a.mem, b.mem) {
		t.Fatalf("split write failed: %v", tk.Err())
	}
	a.t.mu.RLock()
	defer a.t.mu.RUnlock()
	for _, p := range a.t.peers {
		if p.n != 4 {
			t.Errorf("one 8 MiB request in 256 KiB pieces opened %d lanes, want 4", p.n)
		}
	}
}

func TestErrorsIsPeerUnreachable(t *testing.T) {
	err := (&peer{addr: "x:1"}).unreachable("dial", errors.New("boom"))
	if !errors.Is(err, transport.ErrPeerUnreachable) {
		t.Fatal(err)
	}
}
