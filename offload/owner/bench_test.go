package owner_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ferrylabs/ferry/engine"
	"github.com/ferrylabs/ferry/offload/owner"
	"github.com/ferrylabs/ferry/tcp"
	"github.com/ferrylabs/ferry/transport"
)

// BenchmarkGetObjectsRelease is the owner's per-batch work without RPC:
// allocate 8 slots, load 8 x 64 KiB objects from the posix store into
// them, start the lease, release. allocs/op counts the owner, filestorage
// and staging together.
//
// Run: go test -run '^$' -bench GetObjectsRelease ./offload/owner
func BenchmarkGetObjectsRelease(b *testing.B) {
	ctx := context.Background()
	m := newRecMaster()
	cfg := testConfig(b.TempDir(), 8<<20)
	objs := map[string][]byte{}
	keys := make([][]byte, 8)
	sizes := make([]int64, 8)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("obj-%d", i))
		objs[string(keys[i])] = make([]byte, 64<<10)
		sizes[i] = 64 << 10
	}
	f := &fixture{ctx: ctx, m: m, cfg: cfg}
	f.seedB(b, "default", objs)
	eng, err := engine.New(engine.Config{LocalServerName: "127.0.0.1",
		Transports: []transport.Factory{func(h transport.Host) (transport.Transport, error) { return tcp.New(h) }}})
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close()
	w, err := owner.New(ctx, owner.Options{Config: cfg, Engine: eng, Master: m, UnlockedStaging: true, PingInterval: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close(ctx)
	b.SetBytes(8 * 64 << 10)
	b.ReportAllocs()
	for b.Loop() {
		bt, err := w.GetObjects(ctx, "default", keys, sizes)
		if err != nil {
			b.Fatal(err)
		}
		w.Release(bt.ID)
	}
}
