package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ferrylabs/ferry/engine/metadata"
	"github.com/ferrylabs/ferry/transport"
)

// RegisterMemory registers mem for transfers: as local memory of requests
// and, when remoteAccessible, as memory peers may read and write. location
// is "cpu:N", "cuda:N" or "*" ("" means "*"). mem must stay valid and must
// not be moved (for RDMA: not Go heap memory; use the staging package)
// until UnregisterMemory returns. The region is registered with every
// installed transport; if one fails, the others are rolled back. Errors:
// ErrInvalidArgument (empty mem), ErrAddressOverlapped (overlaps a
// registered region), or the transport's error. With a central metadata
// store the new descriptor is published before RegisterMemory returns; if
// that fails the registration is undone and the error wraps ErrMetadata.
func (e *Engine) RegisterMemory(mem []byte, location string, remoteAccessible bool) error {
	if len(mem) == 0 {
		return fmt.Errorf("%w: RegisterMemory of zero length", ErrInvalidArgument)
	}
	if e.isClosed() {
		return ErrClosed
	}
	if location == "" {
		location = "*"
	}
	r := transport.Region{Mem: mem, Addr: Addr(mem), Location: location, RemoteAccessible: remoteAccessible}
	if r.End() < r.Addr {
		return fmt.Errorf("%w: region [%#x+%d] wraps the address space", ErrInvalidArgument, r.Addr, len(mem))
	}
	e.regMu.Lock()
	defer e.regMu.Unlock()
	if err := e.regions.Add(r); err != nil {
		return fmt.Errorf("%w: %w", ErrAddressOverlapped, err)
	}
	for i, t := range e.trs {
		if err := t.Register(r); err != nil {
			e.rollback(r.Addr, i)
			return fmt.Errorf("register [%#x+%d] with %s: %w", r.Addr, len(mem), e.trNames[i], err)
		}
	}
	e.updateLocalSegment()
	if e.central != nil {
		// Peers find the region through the store: a registration they
		// cannot see is rolled back rather than half done.
		if err := e.publishDesc(context.Background()); err != nil {
			e.rollback(r.Addr, len(e.trs))
			e.updateLocalSegment()
			return err
		}
	}
	return nil
}

// rollback undoes a registration at addr in the first n transports and in
// the region table. Needs regMu.
func (e *Engine) rollback(addr uint64, n int) {
	for j := n - 1; j >= 0; j-- {
		if err := e.trs[j].Unregister(addr); err != nil {
			e.log.Warn("rollback of memory registration failed", "transport", e.trNames[j], "addr", addr, "err", err)
		}
	}
	e.regions.Remove(addr)
}

// UnregisterMemory removes the region that starts at mem[0]. New requests
// on it are refused at once; each transport completes or fails its
// requests in flight on it before this returns. ErrAddressNotRegistered if
// no region starts there. With a central metadata store the new
// descriptor is published; a failure to do so is returned (wrapping
// ErrMetadata) but the region stays unregistered.
func (e *Engine) UnregisterMemory(mem []byte) error {
	if len(mem) == 0 {
		return fmt.Errorf("%w: UnregisterMemory of zero length", ErrInvalidArgument)
	}
	addr := Addr(mem)
	e.regMu.Lock()
	defer e.regMu.Unlock()
	if _, ok := e.regions.Remove(addr); !ok {
		return fmt.Errorf("%w: no region starts at %#x", ErrAddressNotRegistered, addr)
	}
	var errs []error
	for i, t := range e.trs {
		if err := t.Unregister(addr); err != nil {
			errs = append(errs, fmt.Errorf("unregister %#x from %s: %w", addr, e.trNames[i], err))
		}
	}
	e.updateLocalSegment()
	if e.central != nil {
		// The region is gone locally whatever the store says; a failed
		// publication leaves peers a stale descriptor, whose requests to
		// the region are refused.
		if err := e.publishDesc(context.Background()); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Serving reports whether a peer's request is moving bytes from or to
// any part of local memory [addr, addr+length) right now, as far as the
// installed transports can tell: TCP can; RDMA cannot (its peers' reads
// and writes are served by the NIC) and never reports. An owner uses it
// not to reuse staging memory a peer is still reading.
func (e *Engine) Serving(addr, length uint64) bool {
	for _, t := range e.trs {
		if r, ok := t.(transport.ServingReporter); ok && r.Serving(addr, length) {
			return true
		}
	}
	return false
}

// updateLocalSegment republishes the local descriptor to segment 0.
func (e *Engine) updateLocalSegment() {
	if p := e.segs.Load(); p != nil {
		(*p)[0].SetDesc(e.localDesc())
	}
}

// localDesc builds the local segment descriptor: one buffer per
// registered region (named after the segment, as Mooncake's TCP transport
// does), then each transport's fields. Protocol is the preferred
// transport's name.
func (e *Engine) localDesc() *metadata.SegmentDesc {
	regs := e.regions.All()
	d := &metadata.SegmentDesc{Name: e.name, Buffers: make([]metadata.BufferDesc, len(regs))}
	for i, r := range regs {
		d.Buffers[i] = metadata.BufferDesc{Addr: r.Addr, Length: r.Len(), Name: e.name}
	}
	if len(e.trs) > 0 {
		d.Protocol = e.trNames[0]
	}
	for _, t := range e.trs {
		t.Describe(d)
	}
	return d
}

// encodeLocalDesc is the daemon's Metadata reply: the local descriptor
// with a fresh timestamp.
func (e *Engine) encodeLocalDesc() []byte {
	if !e.started.Load() {
		return metadata.AppendDesc(nil, &metadata.SegmentDesc{Name: e.name}, time.Now())
	}
	return metadata.AppendDesc(nil, e.localDesc(), time.Now())
}

// LocalDesc returns a copy of the local segment descriptor as peers see it
// (without a timestamp).
func (e *Engine) LocalDesc() *metadata.SegmentDesc { return e.localDesc() }
