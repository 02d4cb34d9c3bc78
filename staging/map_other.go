//go:build !linux

package staging

import (
	"log/slog"
	"unsafe"
)

type mapping struct {
	mem    []byte
	pinned bool
	huge   bool
}

// mapArena falls back to Go heap memory aligned to PageSize. It is never
// pinned: RDMA is not available on this platform, and the TCP transport
// does not need pinned memory.
func mapArena(size uint64, opts Options, log *slog.Logger) (mapping, error) {
	buf := make([]byte, size+PageSize)
	off := (PageSize - uintptr(unsafe.Pointer(unsafe.SliceData(buf)))%PageSize) % PageSize
	log.Warn("staging: memory locking is not supported on this platform; arena is unpinned heap memory", "size", size)
	return mapping{mem: buf[off : off+uintptr(size) : off+uintptr(size)]}, nil
}

func unmapArena([]byte) error { return nil }
