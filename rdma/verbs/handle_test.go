//go:build linux && cgo

package verbs

import (
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

type tracked struct {
	h   handle
	pad [64]byte
}

func TestLeakedHandleIsReleased(t *testing.T) {
	var released atomic.Int32
	before := LiveHandles()
	func() {
		o := &tracked{}
		track(&o.h, o, "test", 42, func(v int) {
			if v == 42 {
				released.Add(1)
			}
		})
		if LiveHandles() != before+1 {
			t.Fatalf("LiveHandles %d after track; want %d", LiveHandles(), before+1)
		}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for released.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("cleanup never ran for an unreachable handle")
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	for LiveHandles() != before {
		if time.Now().After(deadline) {
			t.Fatalf("LiveHandles %d; want %d", LiveHandles(), before)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestCloseStopsCleanupAndIsIdempotent(t *testing.T) {
	var released atomic.Int32
	o := &tracked{}
	track(&o.h, o, "test", 0, func(int) { released.Add(1) })
	o.h.children.Add(1)
	if done, err := o.h.beginClose(); !done || !errors.Is(err, ErrBusy) {
		t.Fatalf("beginClose with a child = %v, %v", done, err)
	}
	o.h.children.Add(-1)
	if done, err := o.h.beginClose(); done || err != nil {
		t.Fatalf("beginClose = %v, %v", done, err)
	}
	o.h.endClose(nil)
	if done, err := o.h.beginClose(); !done || err != nil {
		t.Fatalf("second beginClose = %v, %v; want done, nil", done, err)
	}
	if err := o.h.use(); !errors.Is(err, ErrClosed) {
		t.Fatalf("use after close = %v", err)
	}
	o = nil
	runtime.GC()
	runtime.GC()
	time.Sleep(10 * time.Millisecond)
	if released.Load() != 0 {
		t.Fatal("cleanup ran after Close")
	}
}

func TestOpenRejectsEmptyName(t *testing.T) {
	if _, err := System().Open(""); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Open(\"\") = %v", err)
	}
}

func TestBE64ToHost(t *testing.T) {
	// The bytes 00 11 22 ... 77 in memory, as C stores a __be64 GUID.
	b := [8]byte{0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77}
	v := *(*uint64)(unsafe.Pointer(&b[0]))
	if got := be64ToHost(v); got != 0x0011223344556677 {
		t.Fatalf("be64ToHost = %#x", got)
	}
}
