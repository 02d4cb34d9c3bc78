// Package faketransport is an in-process transport for tests: engines in
// the same process that share a Network copy bytes between each other's
// registered regions, with the bounds checks a real transport does, and
// with injectable failures and delays (in the spirit of wireguard-go's
// conn/bindtest).
package faketransport

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrylabs/ferry/engine/metadata"
	"github.com/ferrylabs/ferry/transport"
)

var (
	_ transport.Transport = (*Transport)(nil)
	_ transport.Canceler  = (*Transport)(nil)
)

// ErrInjected is the error of an injected failure (it also wraps
// transport.ErrPeerUnreachable).
var ErrInjected = errors.New("injected failure")

// Network connects fake transports by protocol name and segment name.
type Network struct {
	mu    sync.RWMutex
	nodes map[string]map[string]*Transport // protocol -> segment -> transport
}

// NewNetwork returns an empty network.
func NewNetwork() *Network { return &Network{nodes: make(map[string]map[string]*Transport)} }

// Options configure a fake transport.
type Options struct {
	// Name is the protocol name (default "fake"). Transports reach only
	// peers of the same name.
	Name string
	// Workers is the number of copying goroutines (default 2).
	Workers int
	// QueueLen is the submit queue length (default 1024).
	QueueLen int
}

// Factory returns a transport factory that joins n under opts.Name.
func (n *Network) Factory(opts Options) transport.Factory {
	return func(h transport.Host) (transport.Transport, error) { return n.New(h, opts) }
}

// Lookup returns the transport of protocol name for segment seg, or nil.
func (n *Network) Lookup(name, seg string) *Transport {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.nodes[name][seg]
}

// New creates a transport for host h and joins it to n.
func (n *Network) New(h transport.Host, opts Options) (*Transport, error) {
	if opts.Name == "" {
		opts.Name = "fake"
	}
	if opts.Workers <= 0 {
		opts.Workers = 2
	}
	if opts.QueueLen <= 0 {
		opts.QueueLen = 1024
	}
	t := &Transport{
		net:      n,
		name:     opts.Name,
		seg:      h.LocalName(),
		queueLen: opts.QueueLen,
		quit:     make(chan struct{}),
	}
	t.qcond.L = &t.qmu
	t.workers = make([]*worker, opts.Workers)
	for i := range t.workers {
		t.workers[i] = &worker{wake: make(chan struct{}, 1)}
	}
	n.mu.Lock()
	m := n.nodes[t.name]
	if m == nil {
		m = make(map[string]*Transport)
		n.nodes[t.name] = m
	}
	if m[t.seg] != nil {
		n.mu.Unlock()
		return nil, fmt.Errorf("faketransport: %s already joined as %s", t.seg, t.name)
	}
	m[t.seg] = t
	n.mu.Unlock()
	for _, w := range t.workers {
		t.wg.Add(1)
		go t.work(w)
	}
	return t, nil
}

// Transport is a fake data path. Safe for concurrent use.
type Transport struct {
	net     *Network
	name    string
	seg     string
	regions transport.Regions
	quit    chan struct{}
	wg      sync.WaitGroup

	// qmu guards the queue, the workers' current tasks and qclosed; qcond
	// signals queue changes and the end of a copy.
	qmu      sync.Mutex
	qcond    sync.Cond
	queue    []*transport.Task
	queueLen int
	qclosed  bool
	workers  []*worker

	mu     sync.RWMutex
	closed bool
	once   sync.Once

	failAll     atomic.Bool
	failNext    atomic.Int64
	unreachable atomic.Bool
	delay       atomic.Int64
	submitted   atomic.Int64
}

// FailAll makes every task fail (with ErrInjected) while on is true.
func (t *Transport) FailAll(on bool) { t.failAll.Store(on) }

// FailNext makes the next n tasks fail with ErrInjected.
func (t *Transport) FailNext(n int) { t.failNext.Store(int64(n)) }

// SetUnreachable makes Reaches report false for every peer.
func (t *Transport) SetUnreachable(on bool) { t.unreachable.Store(on) }

// SetDelay delays every task by d before it is copied.
func (t *Transport) SetDelay(d time.Duration) { t.delay.Store(int64(d)) }

// Submitted counts the tasks this transport has accepted.
func (t *Transport) Submitted() int64 { return t.submitted.Load() }

// Name implements transport.Transport.
func (t *Transport) Name() string { return t.name }

// Register implements transport.Transport.
func (t *Transport) Register(r transport.Region) error { return t.regions.Add(r) }

// Unregister implements transport.Transport. The fake does not wait for
// copies in flight; tests must not unregister memory that is in use.
func (t *Transport) Unregister(addr uint64) error {
	if _, ok := t.regions.Remove(addr); !ok {
		return fmt.Errorf("%w: no region at %#x", transport.ErrAddressNotRegistered, addr)
	}
	return nil
}

// Describe implements transport.Transport; the fake adds nothing.
func (t *Transport) Describe(*metadata.SegmentDesc) {}

// Reaches implements transport.Transport: true when a transport of the
// same name joined the network as segment d.Name.
func (t *Transport) Reaches(d *metadata.SegmentDesc) bool {
	return !t.unreachable.Load() && t.net.Lookup(t.name, d.Name) != nil
}

// Submit implements transport.Transport. It blocks while QueueLen tasks
// are queued.
func (t *Transport) Submit(tasks []*transport.Task) error {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.closed {
		return transport.ErrClosed
	}
	for _, task := range tasks {
		t.submitted.Add(1)
		t.qmu.Lock()
		for len(t.queue) >= t.queueLen && !t.qclosed {
			t.qcond.Wait()
		}
		if t.qclosed {
			t.qmu.Unlock()
			task.Finish(transport.ErrClosed)
			continue
		}
		t.queue = append(t.queue, task)
		t.qcond.Broadcast()
		t.qmu.Unlock()
	}
	return nil
}

// Close implements transport.Transport: queued and delayed tasks fail
// with ErrClosed.
func (t *Transport) Close() error {
	t.once.Do(func() {
		t.mu.Lock()
		t.closed = true
		t.mu.Unlock()
		t.qmu.Lock()
		t.qclosed = true
		t.qcond.Broadcast()
		t.qmu.Unlock()
		close(t.quit)
		t.wg.Wait()
		t.qmu.Lock()
		left := t.queue
		t.queue = nil
		t.qmu.Unlock()
		for _, task := range left {
			task.Finish(transport.ErrClosed)
		}
		t.net.mu.Lock()
		if t.net.nodes[t.name][t.seg] == t {
			delete(t.net.nodes[t.name], t.seg)
		}
		t.net.mu.Unlock()
	})
	return nil
}

// worker is one copying goroutine's state, guarded by Transport.qmu.
type worker struct {
	task     *transport.Task // the task being processed, nil when idle
	canceled bool            // Cancel asked to drop task
	copying  bool            // task's Local is being read or written
	wake     chan struct{}   // Cancel interrupts the delay through it
}

func (t *Transport) work(w *worker) {
	defer t.wg.Done()
	for {
		t.qmu.Lock()
		for len(t.queue) == 0 && !t.qclosed {
			t.qcond.Wait()
		}
		if t.qclosed {
			t.qmu.Unlock()
			return
		}
		task := t.queue[0]
		n := copy(t.queue, t.queue[1:])
		t.queue[n] = nil
		t.queue = t.queue[:n]
		w.task, w.canceled = task, false
		select { // a stale wake-up from an earlier task
		case <-w.wake:
		default:
		}
		t.qcond.Broadcast()
		t.qmu.Unlock()
		err := t.process(task, w)
		t.qmu.Lock()
		w.task = nil
		t.qmu.Unlock()
		task.Finish(err)
	}
}

// Cancel implements transport.Canceler: queued tasks of tasks are
// finished at once with an error wrapping transport.ErrCanceled, a
// delayed one is interrupted, and a copy in progress is waited for (that
// task then completes normally).
func (t *Transport) Cancel(tasks []*transport.Task) {
	if len(tasks) == 0 {
		return
	}
	set := make(map[*transport.Task]struct{}, len(tasks))
	for _, task := range tasks {
		set[task] = struct{}{}
	}
	var dropped []*transport.Task
	t.qmu.Lock()
	kept := t.queue[:0]
	for _, task := range t.queue {
		if _, ok := set[task]; ok {
			dropped = append(dropped, task)
		} else {
			kept = append(kept, task)
		}
	}
	clear(t.queue[len(kept):])
	t.queue = kept
	for _, w := range t.workers {
		if _, ok := set[w.task]; ok && w.task != nil {
			w.canceled = true
			select {
			case w.wake <- struct{}{}:
			default:
			}
		}
	}
	for {
		busy := false
		for _, w := range t.workers {
			if _, ok := set[w.task]; ok && w.task != nil && w.copying {
				busy = true
			}
		}
		if !busy {
			break
		}
		t.qcond.Wait()
	}
	t.qcond.Broadcast()
	t.qmu.Unlock()
	for _, task := range dropped {
		task.Finish(errCanceled)
	}
}

var (
	errInjected = fmt.Errorf("%w: %w", transport.ErrPeerUnreachable, ErrInjected)
	errNoPeer   = fmt.Errorf("%w: fake peer not on the network", transport.ErrPeerUnreachable)
	errBounds   = fmt.Errorf("%w: fake peer has no remote-accessible region holding the range", transport.ErrAddressNotRegistered)
	errCanceled = fmt.Errorf("faketransport: %w", transport.ErrCanceled)
)

// process runs one task on worker w and returns its outcome.
func (t *Transport) process(task *transport.Task, w *worker) error {
	if d := time.Duration(t.delay.Load()); d > 0 {
		tm := time.NewTimer(d)
		select {
		case <-tm.C:
		case <-w.wake:
			tm.Stop()
		case <-t.quit:
			tm.Stop()
			return transport.ErrClosed
		}
	}
	if t.failAll.Load() {
		return errInjected
	}
	for {
		n := t.failNext.Load()
		if n <= 0 {
			break
		}
		if t.failNext.CompareAndSwap(n, n-1) {
			return errInjected
		}
	}
	peer := t.net.Lookup(t.name, task.Target.Name)
	if peer == nil {
		return errNoPeer
	}
	n := task.Length()
	r, ok := peer.regions.Find(task.TargetAddr, n)
	if !ok || !r.RemoteAccessible {
		return errBounds
	}
	remote := r.Slice(task.TargetAddr, n)
	t.qmu.Lock()
	if w.canceled {
		t.qmu.Unlock()
		return errCanceled
	}
	w.copying = true
	t.qmu.Unlock()
	if task.Op == transport.Read {
		copy(task.Local, remote)
	} else {
		copy(remote, task.Local)
	}
	t.qmu.Lock()
	w.copying = false
	t.qcond.Broadcast()
	t.qmu.Unlock()
	task.AddTransferred(n)
	return nil
}
