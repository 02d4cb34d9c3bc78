package tcp

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrylabs/ferry/transport"
)

// op follows one task through its pieces. ops are recycled through a free
// list so that a steady stream of tasks allocates nothing.
type op struct {
	t         *Transport
	task      *transport.Task
	remaining atomic.Int32
	err       atomic.Pointer[error]
	start     time.Time
	write     bool
}

// piece is one session header's worth of a task: a contiguous range that
// travels on one lane.
//
// A piece whose task was cancelled while its request was on the wire
// stays in the lane's in-flight ring as a ghost (op, task and buf nil) so
// that the reader still consumes its response; n keeps its size.
type piece struct {
	op    *op
	task  *transport.Task // op's task, for Cancel to match without touching op
	buf   []byte          // local memory: source of a WRITE, destination of a READ
	n     uint64          // payload size (len(buf) until the piece is a ghost)
	addr  uint64          // remote address
	write bool
}

// done records the outcome of one piece; the last piece finishes the task.
func (o *op) done(n uint64, err error) {
	if err != nil {
		o.fail(err)
	} else if n > 0 {
		o.task.AddTransferred(n)
	}
	if o.remaining.Add(-1) == 0 {
		o.finish()
	}
}

// fail keeps the first error of the task. It is a separate function so
// that the successful path does not move an error to the heap.
//
//go:noinline
func (o *op) fail(err error) { o.err.CompareAndSwap(nil, &err) }

func (o *op) finish() {
	t, task := o.t, o.task
	var err error
	if p := o.err.Load(); p != nil {
		err = *p
	}
	oi := opIndex(o.write)
	n := task.Length()
	elapsed := time.Since(o.start)
	o.task = nil
	o.err.Store(nil)
	t.ops.put(o)
	m := t.m
	m.inflight.Dec()
	if err != nil {
		m.failures[roleClient][oi].Inc()
	} else {
		m.requests[roleClient][oi].Inc()
		m.bytes[roleClient][oi].Add(float64(n))
		m.latency[oi].Observe(elapsed.Seconds())
	}
	task.Finish(err)
}

// opPool is a free list of ops that never shrinks.
type opPool struct {
	mu   sync.Mutex
	free []*op
}

func (p *opPool) get(t *Transport) *op {
	p.mu.Lock()
	if n := len(p.free); n > 0 {
		o := p.free[n-1]
		p.free[n-1] = nil
		p.free = p.free[:n-1]
		p.mu.Unlock()
		return o
	}
	p.mu.Unlock()
	return &op{t: t}
}

func (p *opPool) put(o *op) {
	p.mu.Lock()
	p.free = append(p.free, o)
	p.mu.Unlock()
}
