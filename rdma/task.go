package rdma

import (
	"sync"
	"sync/atomic"

	"github.com/ferrylabs/ferry/transport"
)

// taskState tracks one submitted task until its last slice is done.
type taskState struct {
	t       *transport.Task
	peer    *peer
	pending atomic.Int32
	mu      sync.Mutex
	err     error
}

var taskPool = sync.Pool{New: func() any { return new(taskState) }}

func newTaskState(t *transport.Task) *taskState {
	ts := taskPool.Get().(*taskState)
	ts.t = t
	ts.err = nil
	ts.pending.Store(1) // guard released by the submitter
	return ts
}

// done records the outcome of one slice (or of the submit guard). The
// last call finishes the task with the first error seen.
func (ts *taskState) done(err error) {
	if err != nil {
		ts.mu.Lock()
		if ts.err == nil {
			ts.err = err
		}
		ts.mu.Unlock()
	}
	if ts.pending.Add(-1) != 0 {
		return
	}
	ts.mu.Lock()
	err = ts.err
	ts.mu.Unlock()
	t := ts.t
	ts.t, ts.err, ts.peer = nil, nil, nil
	taskPool.Put(ts)
	t.Finish(err)
}
