package staging

import "math/bits"

// PageSize is the allocation unit and the alignment of every slot.
const PageSize = 4096

// hugePageSize is the explicit huge page size arenas are rounded to.
const hugePageSize = 2 << 20

const (
	pageShift = 12
	maxOrders = 32 // blocks of up to 2^31 pages (8 TiB)

	metaFree   = 0x80 // block head, on a free list
	metaUsed   = 0x40 // block head, allocated
	metaLeased = 0x20 // allocated block owned by a Lease
	metaMask   = 0x1f // order bits
)

// buddy is a binary buddy allocator over npages pages. Its state lives in
// preallocated slices indexed by page number, so alloc and free do not
// allocate. Not safe for concurrent use: Arena serializes calls.
type buddy struct {
	npages   int32
	maxOrder int
	head     [maxOrders]int32 // first free block of each order, -1 if none
	next     []int32          // free-list links, valid for free block heads
	prev     []int32
	meta     []uint8  // per page: 0 inside a block, else flag|order
	gen      []uint32 // per block head: bumped on every allocation
	used     int64    // pages in allocated blocks
	nused    int64    // allocated blocks
}

// orderFor returns the smallest order whose block holds n bytes (n==0 gets
// one page).
func orderFor(n uint64) int {
	if n <= PageSize {
		return 0
	}
	pages := (n + PageSize - 1) >> pageShift
	return bits.Len64(pages - 1)
}

// init seeds the free lists with the largest aligned blocks that tile the
// arena: blocks of maxOrder, then the remainder decomposed greedily (each
// smaller order at most once). Any block boundary is then aligned to its
// own size, which the buddy arithmetic needs.
func (b *buddy) init(npages int32, maxOrder int) {
	b.npages = npages
	b.maxOrder = maxOrder
	for i := range b.head {
		b.head[i] = -1
	}
	b.next = make([]int32, npages)
	b.prev = make([]int32, npages)
	b.meta = make([]uint8, npages)
	b.gen = make([]uint32, npages)
	var off int32
	for off < npages {
		rem := npages - off
		k := bits.Len32(uint32(rem)) - 1
		if k > maxOrder {
			k = maxOrder
		}
		b.push(off, k)
		off += 1 << k
	}
}

func (b *buddy) push(i int32, k int) {
	b.meta[i] = metaFree | uint8(k)
	h := b.head[k]
	b.next[i] = h
	b.prev[i] = -1
	if h >= 0 {
		b.prev[h] = i
	}
	b.head[k] = i
}

func (b *buddy) unlink(i int32, k int) {
	n, p := b.next[i], b.prev[i]
	if p >= 0 {
		b.next[p] = n
	} else {
		b.head[k] = n
	}
	if n >= 0 {
		b.prev[n] = p
	}
	b.meta[i] = 0
}

// alloc returns the first page of a free block of order k, or -1.
func (b *buddy) alloc(k int) int32 {
	if k > b.maxOrder {
		return -1
	}
	j := k
	for j <= b.maxOrder && b.head[j] < 0 {
		j++
	}
	if j > b.maxOrder {
		return -1
	}
	i := b.head[j]
	b.unlink(i, j)
	for j > k {
		j--
		b.push(i+1<<j, j)
	}
	b.meta[i] = metaUsed | uint8(k)
	b.gen[i]++
	b.used += 1 << k
	b.nused++
	return i
}

// owns reports whether page i heads an allocated block of order k and
// generation g, leased or not.
func (b *buddy) owns(i int32, k int, g uint32) bool {
	return i >= 0 && i < b.npages && b.meta[i]&^metaLeased == metaUsed|uint8(k) && b.gen[i] == g
}

// leased reports whether the allocated block at page i belongs to a lease.
func (b *buddy) leased(i int32) bool { return b.meta[i]&metaLeased != 0 }

// setLeased marks or unmarks the allocated block at page i as leased.
func (b *buddy) setLeased(i int32, on bool) {
	if on {
		b.meta[i] |= metaLeased
	} else {
		b.meta[i] &^= metaLeased
	}
}

// free returns the allocated block at page i (checked by owns) and merges
// it with free buddies.
func (b *buddy) free(i int32) {
	k := int(b.meta[i] & metaMask)
	b.meta[i] = 0
	b.used -= 1 << k
	b.nused--
	for k < b.maxOrder {
		bi := i ^ (1 << k)
		if bi >= b.npages || b.meta[bi] != metaFree|uint8(k) {
			break
		}
		b.unlink(bi, k)
		i &= bi
		k++
	}
	b.push(i, k)
}

// largestFree returns the order of the largest free block, or -1.
func (b *buddy) largestFree() int {
	for k := b.maxOrder; k >= 0; k-- {
		if b.head[k] >= 0 {
			return k
		}
	}
	return -1
}
