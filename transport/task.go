package transport

import (
	"sync/atomic"

	"github.com/ferrylabs/ferry/engine/metadata"
)

// Segment is a remote segment as the engine caches it. Desc is replaced
// atomically when the descriptor is refetched; readers load it once per
// use.
type Segment struct {
	// ID is the engine's handle for the segment (remote ids count from 1).
	ID uint64
	// Name is the segment name, "host:port" in P2PHANDSHAKE mode.
	Name string
	desc atomic.Pointer[metadata.SegmentDesc]
	host atomic.Pointer[string]
}

// NewSegment returns a segment with its first descriptor.
func NewSegment(id uint64, name string, d *metadata.SegmentDesc) *Segment {
	s := &Segment{ID: id, Name: name}
	s.desc.Store(d)
	return s
}

// Desc returns the current descriptor. It is never nil for a segment made
// by NewSegment. The descriptor must not be modified.
func (s *Segment) Desc() *metadata.SegmentDesc { return s.desc.Load() }

// SetDesc replaces the descriptor.
func (s *Segment) SetDesc(d *metadata.SegmentDesc) { s.desc.Store(d) }

// Host is the address peers' data connections dial for this segment: the
// host its engine published in the central metadata store, or "" when
// none was set (P2PHANDSHAKE mode: the host part of Name).
func (s *Segment) Host() string {
	if h := s.host.Load(); h != nil {
		return *h
	}
	return ""
}

// SetHost sets the address Host returns.
func (s *Segment) SetHost(h string) { s.host.Store(&h) }

// Task states, with Mooncake's numbering (TransferStatusEnum).
const (
	StateWaiting   int32 = 0
	StatePending   int32 = 1
	StateInvalid   int32 = 2
	StateCanceled  int32 = 3
	StateCompleted int32 = 4
	StateTimeout   int32 = 5
	StateFailed    int32 = 6
)

// Task is one transfer request in flight. The engine fills the exported
// fields before Submit and does not change them until the task is
// finished.
type Task struct {
	// Op is the direction.
	Op Opcode
	// Local is the local memory of the request: exactly Length bytes
	// inside a registered region. Transports read it for a Write and fill
	// it for a Read.
	Local []byte
	// LocalAddr is the virtual address of Local[0].
	LocalAddr uint64
	// Target is the remote segment.
	Target *Segment
	// TargetAddr is the peer's virtual address.
	TargetAddr uint64
	// Attempt counts earlier attempts on other transports (failover).
	Attempt int
	// Index is the task's position in its batch, set by the engine.
	// Transports must not change it.
	Index int

	transferred atomic.Uint64
	state       atomic.Int32
	err         atomic.Pointer[error]
	onFinish    func(*Task)
}

// Length is the number of bytes the task moves.
func (t *Task) Length() uint64 { return uint64(len(t.Local)) }

// AddTransferred records n more bytes moved. The count is a lower bound
// of what has landed, as in Mooncake.
func (t *Task) AddTransferred(n uint64) { t.transferred.Add(n) }

// Transferred returns the bytes moved so far.
func (t *Task) Transferred() uint64 { return t.transferred.Load() }

// State returns the task's state (StateWaiting until finished).
func (t *Task) State() int32 { return t.state.Load() }

// Err returns the error the task failed with, or nil.
func (t *Task) Err() error {
	if p := t.err.Load(); p != nil {
		return *p
	}
	return nil
}

// Finish ends the task: completed when err is nil, failed otherwise. A
// transport calls it exactly once per submitted task. The engine's finish
// hook may resubmit a failed task on another transport; then the task is
// reset and Finish is called again by that transport.
func (t *Task) Finish(err error) {
	if err != nil {
		// Copy before taking the address, so err itself does not escape
		// and the success path allocates nothing.
		e := err
		t.err.Store(&e)
		if f := t.onFinish; f != nil {
			f(t)
			return
		}
		t.state.Store(StateFailed)
		return
	}
	t.transferred.Store(t.Length())
	if f := t.onFinish; f != nil {
		f(t)
		return
	}
	t.state.Store(StateCompleted)
}

// Reset prepares the task for (re)submission and installs the engine's
// finish hook. The hook runs in the transport's goroutine when the task
// finishes; it must call SetState to publish the outcome.
func (t *Task) Reset(onFinish func(*Task)) {
	t.transferred.Store(0)
	t.err.Store(nil)
	t.state.Store(StateWaiting)
	t.onFinish = onFinish
}

// SetState publishes a terminal (or waiting) state. Only the engine calls
// it, from its finish hook.
func (t *Task) SetState(s int32) { t.state.Store(s) }
