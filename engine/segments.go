package engine

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/ferrylabs/ferry/engine/metadata"
	"github.com/ferrylabs/ferry/transport"
)

// refreshTimeout bounds a descriptor refetch that has no caller deadline.
const refreshTimeout = 5 * time.Second

// OpenSegment resolves a segment name ("host:port"; a leading "/" is
// ignored) to a handle, fetching the peer's descriptor from its handshake
// daemon the first time (every time with DisableMetaCache). The engine's
// own name gives LocalSegmentID. Errors wrap metadata's ErrInvalidName,
// ErrUnreachable, ErrMalformedJSON or ErrInvalidDescriptor.
func (e *Engine) OpenSegment(ctx context.Context, name string) (SegmentID, error) {
	if e.isClosed() {
		return InvalidSegmentID, ErrClosed
	}
	name = strings.TrimLeft(name, "/")
	if name == e.name {
		return LocalSegmentID, nil
	}
	e.segMu.Lock()
	s := e.segByName[name]
	e.segMu.Unlock()
	if s != nil && !e.cfg.DisableMetaCache {
		return SegmentID(s.ID), nil
	}
	d, host, err := e.fetch(ctx, name)
	if err != nil {
		return InvalidSegmentID, err
	}
	e.segMu.Lock()
	defer e.segMu.Unlock()
	if s := e.segByName[name]; s != nil {
		s.SetHost(host)
		s.SetDesc(d)
		return SegmentID(s.ID), nil
	}
	old := *e.segs.Load()
	next := make([]*transport.Segment, len(old), len(old)+1)
	copy(next, old)
	s = transport.NewSegment(uint64(len(old)), name, d)
	s.SetHost(host)
	next = append(next, s)
	e.segs.Store(&next)
	e.segByName[name] = s
	return SegmentID(s.ID), nil
}

// CloseSegment is a no-op kept for API parity with Mooncake: segments stay
// cached for the engine's lifetime.
func (e *Engine) CloseSegment(SegmentID) error { return nil }

// fetch gets and validates the descriptor of the segment name, from the
// peer's handshake daemon or from the central store, and returns it with
// the host the peer's data connections dial.
func (e *Engine) fetch(ctx context.Context, name string) (*metadata.SegmentDesc, string, error) {
	if e.central != nil {
		d, host, err := e.fetchCentral(ctx, name)
		if err != nil {
			return nil, "", fmt.Errorf("open segment %q: %w", name, err)
		}
		return d, host, nil
	}
	host, _, err := metadata.SplitSegmentName(name)
	if err != nil {
		return nil, "", fmt.Errorf("open segment %q: %w", name, err)
	}
	d, err := e.client.FetchDesc(ctx, name, e.encodeLocalDesc())
	if err != nil {
		return nil, "", fmt.Errorf("open segment %q: %w", name, err)
	}
	if d.Name != name {
		e.log.Debug("peer names itself differently", "dialed", name, "peer", d.Name)
	}
	return d, host, nil
}

// segment returns the segment with handle id, or nil.
func (e *Engine) segment(id SegmentID) *transport.Segment {
	p := e.segs.Load()
	if p == nil || uint64(id) >= uint64(len(*p)) {
		return nil
	}
	return (*p)[id]
}

// SegmentDesc returns the cached descriptor of segment id (not to be
// modified), or ErrInvalidArgument for an unknown handle.
func (e *Engine) SegmentDesc(id SegmentID) (*metadata.SegmentDesc, error) {
	s := e.segment(id)
	if s == nil {
		return nil, fmt.Errorf("%w: unknown segment id %d", ErrInvalidArgument, id)
	}
	return s.Desc(), nil
}

// refresh refetches seg's descriptor and replaces the cached one.
func (e *Engine) refresh(ctx context.Context, seg *transport.Segment) error {
	if seg.ID == uint64(LocalSegmentID) {
		seg.SetDesc(e.localDesc())
		return nil
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, refreshTimeout)
		defer cancel()
	}
	d, host, err := e.fetch(ctx, seg.Name)
	if err != nil {
		return err
	}
	seg.SetHost(host)
	if !sameDesc(seg.Desc(), d) {
		seg.SetDesc(d)
	}
	return nil
}

// sameDesc compares descriptors ignoring their timestamps.
func sameDesc(a, b *metadata.SegmentDesc) bool {
	if a == nil || b == nil {
		return a == b
	}
	x, y := *a, *b
	x.Timestamp, y.Timestamp = "", ""
	return reflect.DeepEqual(x, y)
}

// refreshLoop refetches every open remote segment each interval
// (MC_TE_METADATA_REFRESH_INTERVAL_SECONDS) until the engine closes.
func (e *Engine) refreshLoop(every time.Duration) {
	tk := time.NewTicker(every)
	defer tk.Stop()
	for {
		select {
		case <-e.ctx.Done():
			return
		case <-tk.C:
		}
		for _, s := range (*e.segs.Load())[1:] {
			if err := e.refresh(e.ctx, s); err != nil && e.ctx.Err() == nil {
				e.log.Debug("periodic descriptor refresh failed", "segment", s.Name, "err", err)
			}
		}
	}
}

// missBackoff is how long requests to a segment whose refetch failed fail
// without another refetch (Mooncake's worker pool uses 100 ms).
const missBackoff = 100 * time.Millisecond

// refreshMiss refetches seg after an address miss, unless a refetch of it
// failed less than missBackoff ago.
func (e *Engine) refreshMiss(seg *transport.Segment) error {
	now := time.Now()
	e.segMu.Lock()
	until := e.failUntil[seg.ID]
	e.segMu.Unlock()
	if now.Before(until) {
		return fmt.Errorf("%w: refetch of %s failed recently", ErrMetadata, seg.Name)
	}
	err := e.refresh(e.ctx, seg)
	e.segMu.Lock()
	if err != nil {
		e.failUntil[seg.ID] = time.Now().Add(missBackoff)
	} else {
		delete(e.failUntil, seg.ID)
	}
	e.segMu.Unlock()
	return err
}

// SyncSegmentCache refetches the descriptor of every open segment and
// returns the errors of those that failed (their old descriptors stay).
func (e *Engine) SyncSegmentCache(ctx context.Context) error {
	var errs []error
	for _, s := range *e.segs.Load() {
		if err := e.refresh(ctx, s); err != nil {
			errs = append(errs, err)
		}
	}
	return joinErrs(errs)
}

func joinErrs(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	if len(errs) == 1 {
		return errs[0]
	}
	return fmt.Errorf("%d segments failed to refresh; first: %w", len(errs), errs[0])
}

// pick returns the index of the transport for a segment described by d:
// the installed transport named by d.Protocol if it reaches d, else the
// first that does, skipping exclude. -1 if none.
func (e *Engine) pick(d *metadata.SegmentDesc, exclude int) int {
	for i, t := range e.trs {
		if i != exclude && e.trNames[i] == d.Protocol && t.Reaches(d) {
			return i
		}
	}
	for i, t := range e.trs {
		if i != exclude && e.trNames[i] != d.Protocol && t.Reaches(d) {
			return i
		}
	}
	return -1
}
