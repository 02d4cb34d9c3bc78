package engine

import (
	"context"
	"fmt"
)

// SendNotify sends n now to the handshake daemon of segment target.
func (e *Engine) SendNotify(ctx context.Context, target SegmentID, n Notify) error {
	s := e.segment(target)
	if s == nil {
		return fmt.Errorf("%w: unknown segment id %d", ErrInvalidArgument, target)
	}
	return e.SendNotifyByName(ctx, s.Name, n)
}

// SendNotifyByName sends n now to the handshake daemon of the segment
// named name ("host:port" in P2PHANDSHAKE mode; with a central store,
// the daemon its rpc_meta entry names).
func (e *Engine) SendNotifyByName(ctx context.Context, name string, n Notify) error {
	if e.isClosed() {
		return ErrClosed
	}
	if err := e.withRPCAddr(ctx, name, func(addr string) error { return e.client.SendNotify(ctx, addr, n) }); err != nil {
		return fmt.Errorf("notify %s: %w", name, err)
	}
	return nil
}

// Notifies drains and returns the notifications received so far, oldest
// first (nil when there are none).
func (e *Engine) Notifies() []Notify {
	e.notifyMu.Lock()
	defer e.notifyMu.Unlock()
	out := e.notifies
	e.notifies = nil
	return out
}

// maxQueuedNotifies bounds the receive queue; older entries are dropped.
const maxQueuedNotifies = 1 << 16

func (e *Engine) pushNotify(n Notify) {
	e.notifyMu.Lock()
	defer e.notifyMu.Unlock()
	if len(e.notifies) >= maxQueuedNotifies {
		e.log.Warn("notify queue full, dropping the oldest entry")
		e.notifies = e.notifies[1:]
	}
	e.notifies = append(e.notifies, n)
}

// Probe checks that the handshake daemon of segment name answers.
func (e *Engine) Probe(ctx context.Context, name string) error {
	if e.isClosed() {
		return ErrClosed
	}
	if err := e.withRPCAddr(ctx, name, func(addr string) error { return e.client.Probe(ctx, addr) }); err != nil {
		return fmt.Errorf("probe %s: %w", name, err)
	}
	return nil
}
