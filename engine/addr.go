package engine

import "unsafe"

// Addr returns the virtual address of b[0], the form Request.Local and
// RegisterMemory use. It returns 0 for an empty slice. The address is only
// meaningful while b is kept alive and registered.
func Addr(b []byte) uint64 {
	if len(b) == 0 {
		return 0
	}
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
}
