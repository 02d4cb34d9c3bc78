//go:build linux && cgo

package verbs

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"syscall"
	"unsafe"
)

type pd struct {
	h   handle
	dev *device
	pd  *C.struct_ibv_pd
}

func (p *pd) RegMR(mem []byte, access Access) (MR, error) {
	if len(mem) == 0 {
		return nil, fmt.Errorf("%w: RegMR of an empty slice", ErrInvalidArgument)
	}
	if access.Has(AccessRemoteWrite) && !access.Has(AccessLocalWrite) {
		return nil, fmt.Errorf("%w: access %#x has REMOTE_WRITE without LOCAL_WRITE", ErrInvalidArgument, uint32(access))
	}
	if err := p.h.use(); err != nil {
		return nil, err
	}
	defer p.h.done()
	// The address crosses as an integer: the memory is not Go heap memory
	// (package contract), so there is no Go pointer to pass.
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(mem)))
	m, err := C.ferry_reg_mr(p.pd, C.uintptr_t(addr), C.size_t(len(mem)), C.int(access))
	if m == nil {
		return nil, verbsErr(fmt.Sprintf("ibv_reg_mr(len %d, access %#x)", len(mem), uint32(access)), err)
	}
	r := &mr{pd: p, mr: m, addr: uint64(addr), n: uint64(len(mem)), access: access,
		lkey: uint32(C.ferry_mr_lkey(m)), rkey: uint32(C.ferry_mr_rkey(m))}
	p.h.children.Add(1)
	track(&r.h, r, "mr", m, func(m *C.struct_ibv_mr) { C.ibv_dereg_mr(m) })
	return r, nil
}

func (p *pd) Close() error {
	if done, err := p.h.beginClose(); done {
		return err
	}
	var err error
	if rc := C.ibv_dealloc_pd(p.pd); rc != 0 {
		err = verbsErr("ibv_dealloc_pd", syscall.Errno(rc))
	}
	p.h.endClose(err)
	if err == nil {
		p.dev.h.children.Add(-1)
	}
	return err
}

type mr struct {
	h          handle
	pd         *pd
	mr         *C.struct_ibv_mr
	addr, n    uint64
	access     Access
	lkey, rkey uint32
}

func (m *mr) LKey() uint32   { return m.lkey }
func (m *mr) RKey() uint32   { return m.rkey }
func (m *mr) Addr() uint64   { return m.addr }
func (m *mr) Len() uint64    { return m.n }
func (m *mr) Access() Access { return m.access }

func (m *mr) Close() error {
	if done, err := m.h.beginClose(); done {
		return err
	}
	var err error
	if rc := C.ibv_dereg_mr(m.mr); rc != 0 {
		err = verbsErr("ibv_dereg_mr", syscall.Errno(rc))
	}
	m.h.endClose(err)
	if err == nil {
		m.pd.h.children.Add(-1)
	}
	return err
}
