package engine

import (
	"bytes"
	"testing"

	"github.com/ferrylabs/ferry/transport"
)

func TestWriteReadSizes(t *testing.T) {
	a, b, seg, _ := pair(t)
	const size = 3<<20 + 13
	src := make([]byte, size)
	dst := make([]byte, size)
	remote := make([]byte, size+64)
	mustRegister(t, a, src)
	mustRegister(t, a, dst)
	// Open before b registers: the first transfer must refetch on a miss.
	mustRegister(t, b, remote)
	for _, n := range []int{0, 1, 7, 4093, 65536 + 3, size} {
		fill(src[:n], byte(n))
		clear(dst)
		off := uint64(n % 61)
		err := a.Transfer(ctxT(t), []Request{{Op: transport.Write, Local: Addr(src), Target: seg, TargetAddr: Addr(remote) + off, Length: uint64(n)}})
		if err != nil {
			t.Fatalf("write %d: %v", n, err)
		}
		if !bytes.Equal(remote[off:off+uint64(n)], src[:n]) {
			t.Fatalf("write %d: remote bytes differ", n)
		}
		err = a.Transfer(ctxT(t), []Request{{Op: transport.Read, Local: Addr(dst), Target: seg, TargetAddr: Addr(remote) + off, Length: uint64(n)}})
		if err != nil {
			t.Fatalf("read %d: %v", n, err)
		}
		if !bytes.Equal(dst[:n], src[:n]) {
			t.Fatalf("read %d: local bytes differ", n)
		}
	}
}
