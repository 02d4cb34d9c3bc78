package fakeverbs

import (
	"fmt"
	"unsafe"

	"github.com/ferrylabs/ferry/rdma/verbs"
)

type pd struct {
	life
	dev          *device
	lkeys, rkeys map[uint32]*mr // guarded by fabric.mem
}

type mr struct {
	life
	pd         *pd
	mem        []byte
	addr       uint64
	access     verbs.Access
	lkey, rkey uint32
}

// RegMR registers mem. Unlike verbs, the fake accepts Go memory; callers
// under test should still pass what they would pass to verbs.
func (p *pd) RegMR(mem []byte, access verbs.Access) (verbs.MR, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	if len(mem) == 0 {
		return nil, fmt.Errorf("%w: RegMR of an empty slice", verbs.ErrInvalidArgument)
	}
	if access.Has(verbs.AccessRemoteWrite) && !access.Has(verbs.AccessLocalWrite) {
		return nil, fmt.Errorf("%w: access %#x has REMOTE_WRITE without LOCAL_WRITE", verbs.ErrInvalidArgument, uint32(access))
	}
	f := p.dev.nic.fabric
	lk, rk := f.newKeyPair()
	m := &mr{life: newLife(), pd: p, mem: mem, addr: uint64(uintptr(unsafe.Pointer(unsafe.SliceData(mem)))),
		access: access, lkey: lk, rkey: rk}
	f.mem.Lock()
	p.lkeys[lk] = m
	p.rkeys[rk] = m
	f.mem.Unlock()
	p.children.Add(1)
	return m, nil
}

func (p *pd) Close() error {
	if done, err := p.begin(); done {
		return err
	}
	p.dev.children.Add(-1)
	p.end()
	return nil
}

func (m *mr) LKey() uint32         { return m.lkey }
func (m *mr) RKey() uint32         { return m.rkey }
func (m *mr) Addr() uint64         { return m.addr }
func (m *mr) Len() uint64          { return uint64(len(m.mem)) }
func (m *mr) Access() verbs.Access { return m.access }

// Close deregisters the region; work requests executed afterwards with its
// keys fail with a protection or remote access error.
func (m *mr) Close() error {
	if done, err := m.begin(); done {
		return err
	}
	f := m.pd.dev.nic.fabric
	f.mem.Lock()
	delete(m.pd.lkeys, m.lkey)
	delete(m.pd.rkeys, m.rkey)
	f.mem.Unlock()
	m.pd.children.Add(-1)
	m.end()
	return nil
}

// span returns the bytes [addr, addr+n) of m, or nil if out of bounds.
func (m *mr) span(addr uint64, n uint32) []byte {
	if addr < m.addr {
		return nil
	}
	off := addr - m.addr
	if off > uint64(len(m.mem)) || uint64(n) > uint64(len(m.mem))-off {
		return nil
	}
	return m.mem[off : off+uint64(n)]
}
