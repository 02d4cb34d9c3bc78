package demo

import (
	"encoding/binary"
	"fmt"
	"math"
)

// The content and sizes are a pure function of (seed, object index), so
// the reader regenerates what the writer wrote instead of keeping a copy.

const golden = 0x9e3779b97f4a7c15

// mix64 is SplitMix64's output function.
func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// objectState is the generator state for object i.
func objectState(seed uint64, i int) uint64 {
	return mix64(seed*golden ^ mix64(uint64(i)+1))
}

// objectSize draws object i's size log-uniformly in [lo, hi].
func objectSize(seed uint64, i int, lo, hi int64) int64 {
	if lo >= hi {
		return lo
	}
	u := float64(mix64(objectState(seed, i)^0x5151)>>11) / (1 << 53) // [0, 1)
	s := int64(math.Round(float64(lo) * math.Exp(u*math.Log(float64(hi)/float64(lo)))))
	return min(max(s, lo), hi)
}

// fill writes object i's content into b (len(b) is the object size).
// It does not allocate.
func fill(seed uint64, i int, b []byte) {
	x := objectState(seed, i)
	n := len(b) &^ 7
	for off := 0; off < n; off += 8 {
		x += golden
		binary.LittleEndian.PutUint64(b[off:], mix64(x))
	}
	if n < len(b) {
		x += golden
		w := mix64(x)
		for j := n; j < len(b); j++ {
			b[j] = byte(w)
			w >>= 8
		}
	}
}

// verify compares b with object i's content and returns the offset of
// the first differing byte, or -1 when they match. It does not allocate.
func verify(seed uint64, i int, b []byte) int64 {
	x := objectState(seed, i)
	n := len(b) &^ 7
	for off := 0; off < n; off += 8 {
		x += golden
		want := mix64(x)
		if got := binary.LittleEndian.Uint64(b[off:]); got != want {
			for j := 0; j < 8; j++ {
				if byte(got>>(8*j)) != byte(want>>(8*j)) {
					return int64(off + j)
				}
			}
		}
	}
	if n < len(b) {
		x += golden
		w := mix64(x)
		for j := n; j < len(b); j++ {
			if b[j] != byte(w) {
				return int64(j)
			}
			w >>= 8
		}
	}
	return -1
}

// objectKey is object i's key; run keeps runs in a real bucket apart.
func objectKey(run string, i int) []byte {
	return []byte(fmt.Sprintf("demo/%s/obj-%06d", run, i))
}
