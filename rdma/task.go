package rdma

import (
	"sync"
	"sync/atomic"

	"github.com/ferrylabs/ferry/transport"
)

// taskState tracks one submitted task until its last slice is done.
type taskState struct {
	t        *transport.Task
	peer     *peer
	live     *liveSet
	pending  atomic.Int32
	canceled atomic.Bool // set by Cancel or abort: post no further slice
	mu       sync.Mutex
	err      error
}

var taskPool = sync.Pool{New: func() any { return new(taskState) }}

func newTaskState(t *transport.Task, live *liveSet) *taskState {
	ts := taskPool.Get().(*taskState)
	ts.t = t
	ts.live = live
	ts.err = nil
	ts.canceled.Store(false)
	ts.pending.Store(1) // guard released by the submitter
	return ts
}

// abort records err as the task's error (unless one is recorded already)
// and stops its remaining slices from being posted; slices already posted
// still count until they complete or flush. The caller holds a pending
// slice of the task, so ts cannot finish under it.
func (ts *taskState) abort(err error) {
	ts.mu.Lock()
	if ts.err == nil {
		ts.err = err
	}
	ts.mu.Unlock()
	ts.canceled.Store(true)
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
	t, live := ts.t, ts.live
	// Finish before leaving the live set: Cancel returns once the task
	// left it, and by then the task must be finished. A task resubmitted
	// from its finish hook gets another taskState, which finished leaves
	// alone.
	t.Finish(err)
	if live != nil {
		live.finished(t, ts)
	}
	ts.t, ts.err, ts.peer, ts.live = nil, nil, nil, nil
	taskPool.Put(ts)
}
