package fakeverbs

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/ferrylabs/ferry/rdma/verbs"
	"github.com/ferrylabs/ferry/rdma/verbs/fdwait"
)

// eventQueue is a queue of events behind a wakeup fd that is readable
// while the queue holds any: the shape of a completion channel and of a
// device's async event queue.
type eventQueue[T any] struct {
	not  notifier
	wait *fdwait.Waiter

	mu     sync.Mutex
	items  []T // oldest first
	closed bool
}

func newEventQueue[T any]() (*eventQueue[T], error) {
	not, err := newNotifier()
	if err != nil {
		return nil, err
	}
	w, err := fdwait.New(not.fd)
	if err != nil {
		not.close()
		return nil, fmt.Errorf("fakeverbs: %w", err)
	}
	return &eventQueue[T]{not: not, wait: w}, nil
}

// fd is readable while the queue holds an event.
func (q *eventQueue[T]) fd() int { return q.not.fd }

// push appends v and makes the fd readable; after close it drops v.
func (q *eventQueue[T]) push(v T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	q.items = append(q.items, v)
	q.not.set()
}

// take moves up to len(out) events, oldest first, into out and returns
// how many; the fd stops being readable once the queue is empty.
func (q *eventQueue[T]) take(out []T) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := copy(out, q.items)
	if n == 0 {
		return 0
	}
	left := copy(q.items, q.items[n:])
	clear(q.items[left:])
	q.items = q.items[:left]
	if len(q.items) == 0 {
		q.not.clear()
	}
	return n
}

// drop removes the events match reports true for; the fd stops being
// readable if none is left.
func (q *eventQueue[T]) drop(match func(T) bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	kept := q.items[:0]
	for _, e := range q.items {
		if !match(e) {
			kept = append(kept, e)
		}
	}
	clear(q.items[len(kept):])
	q.items = kept
	if len(kept) == 0 && !q.closed {
		q.not.clear()
	}
}

// await blocks until the fd is readable or ctx ends; a closed queue is
// verbs.ErrClosed.
func (q *eventQueue[T]) await(ctx context.Context) error {
	if err := q.wait.Wait(ctx); err != nil {
		if errors.Is(err, fdwait.ErrClosed) {
			return verbs.ErrClosed
		}
		return err
	}
	return nil
}

// close wakes waiters with verbs.ErrClosed, drops pending events and
// closes the fd. It is called once, by the owner's Close.
func (q *eventQueue[T]) close() {
	q.wait.Close()
	q.mu.Lock()
	q.closed = true
	q.not.close()
	q.items = nil
	q.mu.Unlock()
}
