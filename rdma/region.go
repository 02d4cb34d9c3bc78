package rdma

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ferrylabs/ferry/rdma/verbs"
	"github.com/ferrylabs/ferry/transport"
)

// region is a registered local region: one MR per NIC.
type region struct {
	r        transport.Region
	mrs      []verbs.MR // per NIC, nil where the NIC is inactive
	lkeys    []uint32
	rkeys    []uint32
	inflight atomic.Int64
}

func (rg *region) end() uint64 { return rg.r.End() }

// locationNUMA returns N for "cpu:N", else -1.
func locationNUMA(loc string) int {
	if s, ok := strings.CutPrefix(loc, "cpu:"); ok {
		if n, err := strconv.Atoi(s); err == nil {
			return n
		}
	}
	return -1
}

// findRegion returns the registered region holding [addr, addr+n).
func (t *Transport) findRegion(addr, n uint64) *region {
	regs := *t.regs.Load()
	i := sort.Search(len(regs), func(i int) bool { return regs[i].r.Addr > addr }) - 1
	if i < 0 || !regs[i].r.Contains(addr, n) {
		return nil
	}
	return regs[i]
}

// Register registers r.Mem on every active NIC. Remote-accessible regions
// get REMOTE_READ|REMOTE_WRITE. The memory must not be Go heap memory
// (see transport.Region); it stays the caller's.
func (t *Transport) Register(r transport.Region) error {
	if t.closed.Load() {
		return transport.ErrClosed
	}
	if len(r.Mem) == 0 {
		return fmt.Errorf("rdma: register: empty region at %#x", r.Addr)
	}
	if strings.HasPrefix(r.Location, "cuda:") {
		return fmt.Errorf("rdma: register %s: GPU memory: %w", r.Location, ErrNotSupported)
	}
	access := verbs.AccessLocalWrite
	if r.RemoteAccessible {
		access |= verbs.AccessRemoteRead | verbs.AccessRemoteWrite
	}
	rg := &region{r: r, mrs: make([]verbs.MR, len(t.nics)), lkeys: make([]uint32, len(t.nics)), rkeys: make([]uint32, len(t.nics))}
	for i, n := range t.nics {
		if !n.open {
			continue
		}
		mr, err := n.pd.RegMR(r.Mem, access)
		if err != nil {
			rg.close()
			return fmt.Errorf("rdma: register [%#x,+%d) on %s: %w", r.Addr, len(r.Mem), n.name, err)
		}
		rg.mrs[i], rg.lkeys[i] = mr, mr.LKey()
		if r.RemoteAccessible {
			rg.rkeys[i] = mr.RKey()
		}
	}
	t.regMu.Lock()
	defer t.regMu.Unlock()
	cur := *t.regs.Load()
	for _, o := range cur {
		if r.Addr < o.end() && o.r.Addr < r.End() {
			rg.close()
			return fmt.Errorf("rdma: register [%#x,%#x): %w", r.Addr, r.End(), transport.ErrOverlap)
		}
	}
	next := append(append(make([]*region, 0, len(cur)+1), cur...), rg)
	sort.Slice(next, func(i, j int) bool { return next[i].r.Addr < next[j].r.Addr })
	t.regs.Store(&next)
	return nil
}

func (rg *region) close() error {
	var errs []error
	for i, mr := range rg.mrs {
		if mr != nil {
			errs = append(errs, mr.Close())
			rg.mrs[i] = nil
		}
	}
	return errors.Join(errs...)
}

// Unregister removes the region starting at addr. New requests on it fail
// at once; Unregister waits (up to the slice timeout) for slices in flight
// on it to finish, then deregisters its MRs.
func (t *Transport) Unregister(addr uint64) error {
	t.regMu.Lock()
	cur := *t.regs.Load()
	var rg *region
	next := make([]*region, 0, len(cur))
	for _, o := range cur {
		if o.r.Addr == addr && rg == nil {
			rg = o
			continue
		}
		next = append(next, o)
	}
	if rg == nil {
		t.regMu.Unlock()
		return fmt.Errorf("rdma: unregister %#x: %w", addr, transport.ErrAddressNotRegistered)
	}
	t.regs.Store(&next)
	t.regMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), t.cfg.SliceTimeout+time.Second)
	defer cancel()
	for rg.inflight.Load() > 0 {
		select {
		case <-ctx.Done():
			return fmt.Errorf("rdma: unregister %#x: %d slices still in flight: %w", addr, rg.inflight.Load(), ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
	return rg.close()
}
