package client

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ferrylabs/ferry/offload/owner"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestCoreGetPutDirect(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	m := newMemMaster()
	var owners []*owner.Owner
	for i := range 2 {
		eng := tcpEngine(t)
		o, err := owner.New(ctx, owner.Options{Config: ownerConfig(t, 32<<20), Engine: eng, Master: m,
			OwnerID: fmt.Sprintf("owner-%d", i), UnlockedStaging: true})
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close(ctx)
		owners = append(owners, o)
	}
	byEP := map[string]*owner.Owner{}
	for _, o := range owners {
		byEP[o.Endpoint()] = o
	}
	reng := tcpEngine(t)
	buf, err := NewBuffer(reng, 64<<20, true)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Close()
	c, err := New(Options{Config: ownerConfig(t, 32<<20), Engine: reng, Master: m, MaxBatchBytes: 8 << 20,
		Dial: func(ep string) (Owner, error) { return directOwner{byEP[ep]}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	sizes := []int{0, 1, 4095, 4097, 100000, 3 << 20}
	var keys, srcs [][]byte
	for i, n := range sizes {
		keys = append(keys, []byte(fmt.Sprintf("key-%d\x00/%%", i)))
		s, err := buf.Alloc(int64(n))
		if err != nil {
			t.Fatal(err)
		}
		b := s.Bytes()[:n]
		for j := range b {
			b[j] = byte(i*31 + j*7)
		}
		srcs = append(srcs, b)
	}
	for i, r := range c.Put(ctx, keys, srcs) {
		if r.Err != nil {
			t.Fatalf("put %d: %v", i, r.Err)
		}
	}
	var dst [][]byte
	for _, n := range sizes {
		s, _ := buf.Alloc(int64(n))
		dst = append(dst, s.Bytes())
	}
	res := c.Get(ctx, append(keys, []byte("missing")), append(dst, dst[0]))
	for i := range keys {
		if res[i].Err != nil {
			t.Fatalf("get %d: %v", i, res[i].Err)
		}
		if res[i].Size != int64(sizes[i]) || !bytes.Equal(dst[i][:sizes[i]], srcs[i]) {
			t.Fatalf("key %d: size %d, bytes differ", i, res[i].Size)
		}
	}
	if last := res[len(keys)]; last.Err == nil {
		t.Fatal("missing key succeeded")
	}
}
