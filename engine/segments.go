package engine

import (
	"context"
	"fmt"
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
	d, err := e.fetch(ctx, name)
	if err != nil {
		return InvalidSegmentID, err
	}
	e.segMu.Lock()
	defer e.segMu.Unlock()
	if s := e.segByName[name]; s != nil {
		s.SetDesc(d)
		return SegmentID(s.ID), nil
	}
	old := *e.segs.Load()
	next := make([]*transport.Segment, len(old), len(old)+1)
	copy(next, old)
	s = transport.NewSegment(uint64(len(old)), name, d)
	next = append(next, s)
	e.segs.Store(&next)
	e.segByName[name] = s
	return SegmentID(s.ID), nil
}

// CloseSegment is a no-op kept for API parity with Mooncake: segments stay
// cached for the engine's lifetime.
func (e *Engine) CloseSegment(SegmentID) error { return nil }

// fetch gets and validates the descriptor of the segment name.
func (e *Engine) fetch(ctx context.Context, name string) (*metadata.SegmentDesc, error) {
	d, err := e.client.FetchDesc(ctx, name, e.encodeLocalDesc())
	if err != nil {
		return nil, fmt.Errorf("open segment %q: %w", name, err)
	}
	if d.Name != name {
		e.log.Debug("peer names itself differently", "dialed", name, "peer", d.Name)
	}
	return d, nil
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
	d, err := e.fetch(ctx, seg.Name)
	if err != nil {
		return err
	}
	seg.SetDesc(d)
	return nil
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
