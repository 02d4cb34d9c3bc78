package rdma

import (
	"fmt"
	"sync"
	"time"

	"github.com/ferrylabs/ferry/transport"
)

// errCanceled is the error of slices and tasks ended by Cancel.
var errCanceled = fmt.Errorf("rdma: %w", transport.ErrCanceled)

var _ transport.Canceler = (*Transport)(nil)

// liveSet tracks the tasks the transport holds, for Cancel. A task maps
// to its taskState, or to nil while it waits for a descriptor refetch
// before it is sliced.
type liveSet struct {
	mu   sync.Mutex
	cond sync.Cond // broadcast when a cancelled task leaves the set
	m    map[*transport.Task]*taskState
}

func (l *liveSet) init() {
	l.cond.L = &l.mu
	l.m = make(map[*transport.Task]*taskState)
}

// start records that task is sliced under ts. A task coming back from a
// descriptor refetch (resumed) is started only if Cancel did not take it
// out meanwhile.
func (l *liveSet) start(task *transport.Task, ts *taskState, resumed bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.m[task]; resumed && !ok {
		return false
	}
	l.m[task] = ts
	return true
}

// park records that task waits for a descriptor refetch.
func (l *liveSet) park(task *transport.Task) {
	l.mu.Lock()
	l.m[task] = nil
	l.mu.Unlock()
}

// claim takes a parked task back; false means Cancel already finished it.
func (l *liveSet) claim(task *transport.Task) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.m[task]; !ok {
		return false
	}
	delete(l.m, task)
	return true
}

// finished removes task, whose last slice is done.
func (l *liveSet) finished(task *transport.Task, ts *taskState) {
	l.mu.Lock()
	if l.m[task] == ts {
		delete(l.m, task)
	}
	if ts.canceled.Load() {
		l.cond.Broadcast()
	}
	l.mu.Unlock()
}

// cancelGrace is how long Cancel waits for the posted slices of the
// cancelled tasks to complete before it moves the QPs towards their peers
// to ERR, which flushes the work requests back.
func (t *Transport) cancelGrace() time.Duration { return min(t.cfg.SliceTimeout/2, time.Second) }

// Cancel implements transport.Canceler. No further slice of a cancelled
// task is posted: queued and parked slices are dropped, and slices on
// their way to an endpoint are dropped when they arrive. Posted work
// requests cannot be recalled, so Cancel waits for their completions; if
// they have not all come back within min(SliceTimeout/2, 1s), the
// endpoints towards the tasks' peers are closed (their QPs go to ERR and
// flush), which makes the other tasks on them retry elsewhere. Cancel
// returns when every cancelled task is finished; work requests that
// neither complete nor flush are ended by the slice timeout, which
// destroys their QPs if the device never returns them (see
// Config.SliceTimeout). The tasks fail with an error wrapping transport.ErrCanceled
// unless all their slices had completed.
func (t *Transport) Cancel(tasks []*transport.Task) {
	var parked []*transport.Task
	var peers []*peer
	held := 0
	l := &t.live
	l.mu.Lock()
	for _, task := range tasks {
		ts, ok := l.m[task]
		switch {
		case !ok:
		case ts == nil:
			delete(l.m, task)
			parked = append(parked, task)
		default:
			ts.canceled.Store(true)
			held++
			if p := ts.peer; p != nil && !containsPeer(peers, p) {
				peers = append(peers, p)
			}
		}
	}
	l.mu.Unlock()
	for _, task := range parked {
		task.Finish(errCanceled)
	}
	if held == 0 {
		return
	}
	t.dropQueued(peers)

	timedOut := false
	tm := time.AfterFunc(t.cancelGrace(), func() {
		l.mu.Lock()
		timedOut = true
		l.cond.Broadcast()
		l.mu.Unlock()
	})
	defer tm.Stop()
	flushed := false
	l.mu.Lock()
	for l.holdsAny(tasks) {
		if timedOut && !flushed {
			flushed = true
			l.mu.Unlock()
			t.log.Debug("rdma: cancelled work still posted; closing the endpoints to flush it", "peers", len(peers))
			for _, p := range peers {
				for _, ep := range p.endpoints() {
					ep.kill(errCanceled)
				}
			}
			l.mu.Lock()
			continue
		}
		l.cond.Wait()
	}
	l.mu.Unlock()
}

// holdsAny reports whether any of tasks is still held. l.mu is held.
func (l *liveSet) holdsAny(tasks []*transport.Task) bool {
	for _, task := range tasks {
		if ts, ok := l.m[task]; ok && ts != nil && ts.canceled.Load() {
			return true
		}
	}
	return false
}

func containsPeer(ps []*peer, p *peer) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}

// endpoints returns the cached endpoints towards p.
func (p *peer) endpoints() []*endpoint {
	p.mu.Lock()
	defer p.mu.Unlock()
	var eps []*endpoint
	for _, row := range p.eps {
		for _, ep := range row {
			if ep != nil {
				eps = append(eps, ep)
			}
		}
	}
	return eps
}

// dropQueued finishes the slices of cancelled tasks that wait in an
// endpoint's queue or in the parked lists of peers.
func (t *Transport) dropQueued(peers []*peer) {
	sb := t.slab
	var drop []int32
	for _, n := range t.nics {
		n.mu.Lock()
		eps := make([]*endpoint, 0, len(n.eps))
		for _, ep := range n.eps {
			eps = append(eps, ep)
		}
		n.mu.Unlock()
		for _, ep := range eps {
			ep.mu.Lock()
			drop = ep.pending.extractCanceled(sb, drop)
			ep.mu.Unlock()
		}
	}
	for _, i := range drop {
		s := sb.get(i)
		t.nics[s.nic].inflightB.Add(-int64(s.length))
		s.ep = nil
		t.finishSlice(i, s, errCanceled)
	}
	drop = drop[:0]
	for _, p := range peers {
		p.mu.Lock()
		drop = p.parked.extractCanceled(sb, drop)
		p.mu.Unlock()
	}
	for _, i := range drop {
		t.finishSlice(i, sb.get(i), errCanceled)
	}
}
