package rdma

import (
	"sync"
	"sync/atomic"

	"github.com/ferrylabs/ferry/rdma/verbs"
)

// Slice states, held in slice.state.
const (
	sliceFree     int32 = iota
	sliceQueued         // owned by an endpoint queue or a redispatch list
	slicePosted         // handed to a QP; a completion will come back
	sliceOrphaned       // timed out: its QP was sent to ERR; the completion or flush settles it
	sliceExpiring       // being timed out by the janitor
	sliceLate           // completed while expiring: the janitor settles it
)

// slice is one work request's worth of a task. Slices live in the slab;
// the slab index is the WRID, so the completion path finds a slice
// without a pointer ever reaching the provider.
type slice struct {
	task     *taskState
	ep       *endpoint
	reg      *region
	local    uint64
	remote   uint64
	rkey     uint32
	length   uint32
	op       verbs.Op
	qp       int16
	nic      int16
	peerDev  int16
	retries  int16
	avoid    int16 // local NIC to avoid on the next dispatch, -1 none
	next     int32
	state    atomic.Int32
	postedAt atomic.Int64
}

const chunkBits = 12
const chunkSize = 1 << chunkBits

type chunk [chunkSize]slice

// slab is a growable array of slices addressed by int32 index, with a
// free list. It grows by whole chunks and never shrinks, so steady-state
// allocation and release do not allocate.
type slab struct {
	chunks atomic.Pointer[[]*chunk]
	mu     sync.Mutex
	free   []int32
	max    int
	inUse  atomic.Int64
}

func newSlab(max int) *slab {
	s := &slab{max: max}
	empty := []*chunk{}
	s.chunks.Store(&empty)
	return s
}

// get returns slice i; i must come from alloc.
func (s *slab) get(i int32) *slice {
	cs := *s.chunks.Load()
	return &cs[i>>chunkBits][i&(chunkSize-1)]
}

// valid reports whether i is an index the slab has handed out.
func (s *slab) valid(i uint64) bool {
	return i < uint64(len(*s.chunks.Load()))*chunkSize
}

// alloc returns a free slice index, or false when the slab is at max.
func (s *slab) alloc() (int32, bool) {
	s.mu.Lock()
	if len(s.free) == 0 && !s.grow() {
		s.mu.Unlock()
		return 0, false
	}
	i := s.free[len(s.free)-1]
	s.free = s.free[:len(s.free)-1]
	s.mu.Unlock()
	s.inUse.Add(1)
	return i, true
}

func (s *slab) grow() bool {
	cs := *s.chunks.Load()
	if (len(cs)+1)*chunkSize > s.max && len(cs) > 0 {
		return false
	}
	next := make([]*chunk, len(cs)+1)
	copy(next, cs)
	next[len(cs)] = new(chunk)
	base := int32(len(cs) * chunkSize)
	if cap(s.free) < (len(cs)+1)*chunkSize {
		nf := make([]int32, len(s.free), (len(cs)+1)*chunkSize)
		copy(nf, s.free)
		s.free = nf
	}
	for i := int32(chunkSize - 1); i >= 0; i-- {
		s.free = append(s.free, base+i)
	}
	s.chunks.Store(&next)
	return true
}

// release clears slice i and returns it to the free list.
func (s *slab) release(i int32) {
	sl := s.get(i)
	sl.task, sl.ep, sl.reg = nil, nil, nil
	sl.next = -1
	sl.state.Store(sliceFree)
	s.mu.Lock()
	s.free = append(s.free, i)
	s.mu.Unlock()
	s.inUse.Add(-1)
}

// each calls f for every slice index handed out so far.
func (s *slab) each(f func(i int32, sl *slice)) {
	cs := *s.chunks.Load()
	for ci, c := range cs {
		for j := range c {
			f(int32(ci*chunkSize+j), &c[j])
		}
	}
}

// sliceList is a FIFO of slab indices linked through slice.next.
type sliceList struct {
	head, tail int32
	n          int
}

func newList() sliceList { return sliceList{head: -1, tail: -1} }

func (l *sliceList) push(sb *slab, i int32) {
	sb.get(i).next = -1
	if l.tail < 0 {
		l.head = i
	} else {
		sb.get(l.tail).next = i
	}
	l.tail = i
	l.n++
}

func (l *sliceList) pushFront(sb *slab, i int32) {
	sb.get(i).next = l.head
	l.head = i
	if l.tail < 0 {
		l.tail = i
	}
	l.n++
}

func (l *sliceList) pop(sb *slab) (int32, bool) {
	if l.head < 0 {
		return -1, false
	}
	i := l.head
	l.head = sb.get(i).next
	if l.head < 0 {
		l.tail = -1
	}
	l.n--
	return i, true
}

// extractCanceled removes the slices of cancelled tasks from l, keeping
// the others in order, and appends the removed indices to out.
func (l *sliceList) extractCanceled(sb *slab, out []int32) []int32 {
	kept := newList()
	for {
		i, ok := l.pop(sb)
		if !ok {
			break
		}
		if sb.get(i).task.canceled.Load() {
			out = append(out, i)
		} else {
			kept.push(sb, i)
		}
	}
	*l = kept
	return out
}

// take moves every element out of l.
func (l *sliceList) take() sliceList {
	out := *l
	*l = newList()
	return out
}
