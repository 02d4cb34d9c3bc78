package transport

// Region is a range of local memory registered with the engine.
//
// Mem is the memory itself; it must stay valid (not unmapped, not
// collected) until the region is unregistered. For RDMA it must not be Go
// heap memory: use the staging package, or other memory from mmap.
type Region struct {
	// Mem is the registered memory. Addr is the address of Mem[0].
	Mem []byte
	// Addr is the region's virtual address, the one peers use.
	Addr uint64
	// Location is the NUMA or device location: "cpu:N", "cuda:N" or "*".
	Location string
	// RemoteAccessible allows peers to read and write the region.
	RemoteAccessible bool
}

// Len is the region's length in bytes.
func (r Region) Len() uint64 { return uint64(len(r.Mem)) }

// End is the first address past the region.
func (r Region) End() uint64 { return r.Addr + uint64(len(r.Mem)) }

// Contains reports whether [addr, addr+n) lies inside r.
func (r Region) Contains(addr, n uint64) bool {
	return addr >= r.Addr && n <= r.Len() && addr-r.Addr <= r.Len()-n
}

// Slice returns the bytes [addr, addr+n) of r. The caller has checked
// Contains.
func (r Region) Slice(addr, n uint64) []byte {
	off := addr - r.Addr
	return r.Mem[off : off+n : off+n]
}
