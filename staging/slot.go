package staging

// Slot is one allocation in an Arena: a block of PageSize << order bytes
// aligned to its size, of which the first Len bytes were requested. A Slot
// is a small value; copying it does not copy the memory. The zero Slot is
// invalid.
type Slot struct {
	a     *Arena
	page  int32
	order uint8
	gen   uint32
	n     uint64
}

// Bytes returns the requested bytes of the slot (length Len, capacity
// Len). The slice is valid until the slot is freed (or its lease ends);
// it must not be used afterwards. nil for the zero Slot.
func (s Slot) Bytes() []byte {
	if s.a == nil {
		return nil
	}
	off := uint64(s.page) << pageShift
	return s.a.mem[off : off+s.n : off+s.n]
}

// Block returns the whole block behind the slot (length Cap).
func (s Slot) Block() []byte {
	if s.a == nil {
		return nil
	}
	off := uint64(s.page) << pageShift
	end := off + s.Cap()
	return s.a.mem[off:end:end]
}

// Addr is the virtual address of the slot's first byte, the one a peer
// uses to read it over a transport.
func (s Slot) Addr() uint64 {
	if s.a == nil {
		return 0
	}
	return s.a.base + s.Offset()
}

// Offset is the slot's offset from the start of the arena.
func (s Slot) Offset() uint64 { return uint64(s.page) << pageShift }

// Len is the size that was requested.
func (s Slot) Len() uint64 { return s.n }

// Cap is the size of the block behind the slot (a power of two times
// PageSize, at least Len).
func (s Slot) Cap() uint64 { return PageSize << s.order }

// Valid reports whether s came from Alloc (it may have been freed since).
func (s Slot) Valid() bool { return s.a != nil }
