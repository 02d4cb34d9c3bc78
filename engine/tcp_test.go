package engine

import (
	"bytes"
	"testing"

	"github.com/ferrylabs/ferry/transport"
)

// TestDefaultTCP runs two engines with the default transports (TCP over
// loopback).
func TestDefaultTCP(t *testing.T) {
	a := newEngine(t, nil)
	b := newEngine(t, nil)
	if got := a.Transports(); len(got) != 1 || got[0] != "tcp" {
		t.Fatalf("default transports %v", got)
	}
	seg := openSeg(t, a, b)
	d, _ := a.SegmentDesc(seg)
	if d.Protocol != "tcp" || d.TCPDataPort == 0 || d.TCPProtoVersion != 2 {
		t.Fatalf("peer descriptor %+v", d)
	}
	const n = 1<<20 + 5
	src, dst, remote := make([]byte, n), make([]byte, n), make([]byte, n)
	mustRegister(t, a, src)
	mustRegister(t, a, dst)
	mustRegister(t, b, remote)
	fill(src, 42)
	reqs := []Request{
		{Op: transport.Write, Local: Addr(src), Target: seg, TargetAddr: Addr(remote), Length: n / 2},
		{Op: transport.Write, Local: Addr(src) + n/2, Target: seg, TargetAddr: Addr(remote) + n/2, Length: n - n/2},
	}
	if err := a.Transfer(ctxT(t), reqs); err != nil {
		t.Fatal(err)
	}
	if err := a.Transfer(ctxT(t), []Request{{Op: transport.Read, Local: Addr(dst), Target: seg, TargetAddr: Addr(remote), Length: n}}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(remote, src) || !bytes.Equal(dst, src) {
		t.Fatal("bytes differ over TCP")
	}
}
