//go:build linux && cgo

package verbs

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"github.com/ferrylabs/ferry/rdma/verbs/fdwait"
)

// System returns the libibverbs provider.
func System() Provider { return systemProvider{} }

type systemProvider struct{}

// deviceList calls ibv_get_device_list. ENOSYS (no RDMA in the kernel),
// ENODEV and an empty list all mean "no devices".
func deviceList() (**C.struct_ibv_device, int, error) {
	var n C.int
	list, err := C.ibv_get_device_list(&n)
	if list == nil {
		if err == nil || errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.ENODEV) || errors.Is(err, syscall.ENOENT) {
			return nil, 0, fmt.Errorf("%w: ibv_get_device_list: %w (kernel without RDMA support?)", ErrNoDevice, errOr(err, syscall.ENODEV))
		}
		return nil, 0, verbsErr("ibv_get_device_list", err)
	}
	if n <= 0 {
		C.ibv_free_device_list(list)
		return nil, 0, fmt.Errorf("%w: ibv_get_device_list found none", ErrNoDevice)
	}
	return list, int(n), nil
}

func errOr(err, def error) error {
	if err == nil {
		return def
	}
	return err
}

func infoAt(list **C.struct_ibv_device, i int) DeviceInfo {
	name := C.GoString(C.ferry_dev_name(list, C.int(i)))
	guid := be64ToHost(uint64(C.ibv_get_device_guid(C.ferry_dev_at(list, C.int(i)))))
	return DeviceInfo{Name: name, NodeGUID: guid, NumaNode: numaNode(C.GoString(C.ferry_dev_ibdev_path(list, C.int(i))))}
}

// be64ToHost converts a __be64 value as C stores it to host order.
func be64ToHost(v uint64) uint64 {
	var b [8]byte
	*(*uint64)(unsafe.Pointer(&b[0])) = v
	return binary.BigEndian.Uint64(b[:])
}

func numaNode(ibdevPath string) int {
	b, err := os.ReadFile(filepath.Join(ibdevPath, "device", "numa_node"))
	if err != nil {
		return -1
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n < 0 {
		return -1
	}
	return n
}

func (systemProvider) Devices() ([]DeviceInfo, error) {
	list, n, err := deviceList()
	if err != nil {
		return nil, err
	}
	defer C.ibv_free_device_list(list)
	out := make([]DeviceInfo, n)
	for i := range out {
		out[i] = infoAt(list, i)
	}
	return out, nil
}

func (systemProvider) Open(name string) (Device, error) {
	if name == "" {
		return nil, fmt.Errorf("%w: empty device name", ErrInvalidArgument)
	}
	list, n, err := deviceList()
	if err != nil {
		return nil, err
	}
	defer C.ibv_free_device_list(list)
	for i := 0; i < n; i++ {
		info := infoAt(list, i)
		if info.Name != name {
			continue
		}
		ctx, err := C.ibv_open_device(C.ferry_dev_at(list, C.int(i)))
		if ctx == nil {
			return nil, verbsErr("ibv_open_device("+name+")", err)
		}
		w, err := fdwait.New(int(C.ferry_async_fd(ctx)))
		if err != nil {
			C.ibv_close_device(ctx)
			return nil, fmt.Errorf("verbs: %s async fd: %w", name, err)
		}
		d := &device{info: info, ctx: ctx, async: w}
		track(&d.h, d, "device", ctx, func(c *C.struct_ibv_context) { C.ibv_close_device(c) })
		return d, nil
	}
	return nil, fmt.Errorf("%w: %q", ErrDeviceNotFound, name)
}

type device struct {
	h    handle
	info DeviceInfo
	ctx  *C.struct_ibv_context

	asyncMu sync.Mutex     // serialises AsyncEvents
	async   *fdwait.Waiter // waits on ctx.async_fd
}

func (d *device) Info() DeviceInfo { return d.info }

// use read-locks d and fails if it is closed; call the returned unlock.
func (h *handle) use() error {
	h.mu.RLock()
	if h.closed {
		h.mu.RUnlock()
		return ErrClosed
	}
	return nil
}

func (h *handle) done() { h.mu.RUnlock() }

func (d *device) Query() (DeviceAttr, error) {
	if err := d.h.use(); err != nil {
		return DeviceAttr{}, err
	}
	defer d.h.done()
	var a C.struct_ibv_device_attr
	if rc := C.ibv_query_device(d.ctx, &a); rc != 0 {
		return DeviceAttr{}, errnoErr("ibv_query_device", rc)
	}
	return DeviceAttr{
		FirmwareVersion: C.GoString(&a.fw_ver[0]),
		NodeGUID:        be64ToHost(uint64(a.node_guid)),
		VendorID:        uint32(a.vendor_id),
		VendorPartID:    uint32(a.vendor_part_id),
		MaxMRSize:       uint64(a.max_mr_size),
		MaxQP:           int(a.max_qp),
		MaxQPWR:         int(a.max_qp_wr),
		MaxSGE:          int(a.max_sge),
		MaxCQ:           int(a.max_cq),
		MaxCQE:          int(a.max_cqe),
		MaxMR:           int(a.max_mr),
		MaxPD:           int(a.max_pd),
		MaxQPRdAtom:     int(a.max_qp_rd_atom),
		MaxQPInitRdAtom: int(a.max_qp_init_rd_atom),
		PhysPortCount:   int(a.phys_port_cnt),
	}, nil
}

func (d *device) QueryPort(port uint8) (PortAttr, error) {
	if port == 0 {
		return PortAttr{}, fmt.Errorf("%w: port 0 (ports are 1-based)", ErrInvalidArgument)
	}
	if err := d.h.use(); err != nil {
		return PortAttr{}, err
	}
	defer d.h.done()
	var p C.struct_ferry_port
	if rc, err := C.ferry_query_port(d.ctx, C.uint8_t(port), &p); rc != 0 {
		return PortAttr{}, verbsErr(fmt.Sprintf("ibv_query_port(%d)", port), err)
	}
	return PortAttr{
		State: PortState(p.state), MaxMTU: MTU(p.max_mtu), ActiveMTU: MTU(p.active_mtu),
		LID: uint16(p.lid), SMLID: uint16(p.sm_lid), GIDTableLen: int(p.gid_tbl_len),
		PKeyTableLen: int(p.pkey_tbl_len), LinkLayer: LinkLayer(p.link_layer),
		ActiveWidth: uint8(p.active_width), ActiveSpeed: uint8(p.active_speed),
	}, nil
}

func (d *device) QueryGID(port uint8, index int) (GIDEntry, error) {
	if port == 0 || index < 0 {
		return GIDEntry{}, fmt.Errorf("%w: GID port %d index %d", ErrInvalidArgument, port, index)
	}
	if err := d.h.use(); err != nil {
		return GIDEntry{}, err
	}
	defer d.h.done()
	var g C.struct_ferry_gid
	rc, err := C.ferry_query_gid(d.ctx, C.uint32_t(port), C.uint32_t(index), &g)
	switch {
	case rc == 1:
		return GIDEntry{Index: index, Port: port}, nil
	case rc < 0:
		if errors.Is(err, syscall.EINVAL) {
			return GIDEntry{}, fmt.Errorf("%w: GID index %d of port %d: %w", ErrInvalidArgument, index, port, err)
		}
		return GIDEntry{}, verbsErr("ibv_query_gid_ex", err)
	}
	e := GIDEntry{Index: int(g.index), Port: uint8(g.port), Type: GIDType(g._type), NetdevIndex: int(g.ifindex)}
	for i := range e.GID {
		e.GID[i] = byte(g.raw[i])
	}
	return e, nil
}

func (d *device) AllocPD() (PD, error) {
	if err := d.h.use(); err != nil {
		return nil, err
	}
	defer d.h.done()
	p, err := C.ibv_alloc_pd(d.ctx)
	if p == nil {
		return nil, verbsErr("ibv_alloc_pd", err)
	}
	pd := &pd{dev: d, pd: p}
	d.h.children.Add(1)
	track(&pd.h, pd, "pd", p, func(p *C.struct_ibv_pd) { C.ibv_dealloc_pd(p) })
	return pd, nil
}

func (d *device) AsyncEvents(ctx context.Context, out []AsyncEvent) (int, error) {
	if len(out) == 0 {
		return 0, fmt.Errorf("%w: empty async event buffer", ErrInvalidArgument)
	}
	d.asyncMu.Lock()
	defer d.asyncMu.Unlock()
	for {
		n, err := d.readAsync(out)
		if n > 0 || err != nil {
			return n, err
		}
		if err := d.async.Wait(ctx); err != nil {
			if errors.Is(err, fdwait.ErrClosed) {
				return 0, ErrClosed
			}
			return 0, err
		}
	}
}

// readAsync drains up to len(out) pending events without blocking.
func (d *device) readAsync(out []AsyncEvent) (int, error) {
	if err := d.h.use(); err != nil {
		return 0, err
	}
	defer d.h.done()
	n := 0
	for n < len(out) {
		var typ, port, qpn C.uint32_t
		rc, err := C.ferry_get_async(d.ctx, &typ, &port, &qpn)
		if rc != 0 {
			if errors.Is(err, syscall.EAGAIN) {
				break
			}
			return n, verbsErr("ibv_get_async_event", err)
		}
		out[n] = AsyncEvent{Type: AsyncEventType(typ), Port: uint8(port), QPNum: uint32(qpn)}
		n++
	}
	return n, nil
}

func (d *device) Close() error {
	if done, err := d.h.beginClose(); done {
		return err
	}
	// Wake a blocked AsyncEvents; it sees ErrClosed.
	d.async.Close()
	var err error
	if rc, cerr := C.ibv_close_device(d.ctx); rc != 0 {
		err = verbsErr("ibv_close_device", cerr)
	}
	d.h.endClose(err)
	return err
}
