package fakeverbs

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/ferrylabs/ferry/rdma/verbs"
)

// life is the lifetime state of a fake handle.
type life struct {
	mu       sync.Mutex
	closed   atomic.Bool
	children atomic.Int32
}

func newLife() life { liveHandles.Add(1); return life{} }

// begin starts Close: done=true means already closed (nil) or busy (err).
func (l *life) begin() (done bool, err error) {
	l.mu.Lock()
	if l.closed.Load() {
		l.mu.Unlock()
		return true, nil
	}
	if n := l.children.Load(); n > 0 {
		l.mu.Unlock()
		return true, fmt.Errorf("%w: %d children still open", verbs.ErrBusy, n)
	}
	return false, nil
}

func (l *life) end() {
	l.closed.Store(true)
	liveHandles.Add(-1)
	l.mu.Unlock()
}

func (l *life) check() error {
	if l.closed.Load() {
		return verbs.ErrClosed
	}
	return nil
}
