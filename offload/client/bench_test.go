package client

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/ferrylabs/ferry/engine"
	"github.com/ferrylabs/ferry/offload/filestorage"
	"github.com/ferrylabs/ferry/staging"
	"github.com/ferrylabs/ferry/transport"
)

const (
	benchObjects = 32
	benchSize    = 4 << 20
)

// BenchmarkReadPath compares, in one run and against the same storage
// (the real S3 server when FERRY_TEST_S3_ENDPOINT is set, else posix):
//
//	e2e:      client.Get of 32 x 4 MiB objects: master query, owner load
//	          from the store into staging, TCP READ into the requester;
//	getbatch: filestorage.BatchLoad of the same objects into preallocated
//	          memory (the object-store ceiling);
//	tcp:      an engine READ of 32 x 4 MiB between two TCP engines (the
//	          transfer ceiling).
//
// Run: go test -run '^$' -bench ReadPath -benchtime 20x ./offload/client
func BenchmarkReadPath(b *testing.B) {
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	defer slog.SetDefault(prev)
	c := newCluster(b, 30*time.Second)
	c.cfg.StagingSize = benchObjects * benchSize
	w := c.mustOwner("bench")
	r := c.requester(2 * benchObjects * benchSize)
	keys := make([][]byte, benchObjects)
	srcs := make([][]byte, benchObjects)
	dst := make([][]byte, benchObjects)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("bench/%04d", i))
		srcs[i] = r.alloc(b, benchSize, uint64(i+1))
		dst[i] = r.alloc(b, benchSize, 0)
	}
	for i, res := range r.Put(c.ctx, keys, srcs) {
		if res.Err != nil {
			b.Fatalf("put %d: %v", i, res.Err)
		}
	}
	_ = w

	b.Run("e2e", func(b *testing.B) {
		b.SetBytes(benchObjects * benchSize)
		b.ReportAllocs()
		for b.Loop() {
			for i, res := range r.Get(c.ctx, keys, dst) {
				if res.Err != nil {
					b.Fatalf("get %d: %v", i, res.Err)
				}
			}
		}
	})

	b.Run("getbatch", func(b *testing.B) {
		fs, err := filestorage.New(c.ctx, filestorage.Options{Config: c.ownerConfig("bench"), Lookup: c.lookup(nil)})
		if err != nil {
			b.Fatal(err)
		}
		defer fs.Close()
		sks := make([][]byte, len(keys))
		for i, k := range keys {
			sks[i] = filestorage.StorageKey("default", k)
		}
		b.SetBytes(benchObjects * benchSize)
		b.ReportAllocs()
		for b.Loop() {
			if err := fs.BatchLoad(c.ctx, sks, dst); err != nil {
				b.Fatal(err)
			}
		}
	})

	b.Run("tcp", func(b *testing.B) {
		src := tcpEngine(b)
		a, err := staging.New(staging.Options{Size: benchObjects * benchSize, Unlocked: true})
		if err != nil {
			b.Fatal(err)
		}
		defer a.ForceClose()
		if err := src.RegisterMemory(a.Bytes(), "*", true); err != nil {
			b.Fatal(err)
		}
		defer src.UnregisterMemory(a.Bytes())
		ctx := context.Background()
		seg, err := r.eng.OpenSegment(ctx, src.Name())
		if err != nil {
			b.Fatal(err)
		}
		reqs := make([]engine.Request, benchObjects)
		for i := range reqs {
			reqs[i] = engine.Request{Op: transport.Read, Local: engine.Addr(dst[i]), Target: seg,
				TargetAddr: a.Addr() + uint64(i*benchSize), Length: benchSize}
		}
		b.SetBytes(benchObjects * benchSize)
		b.ReportAllocs()
		for b.Loop() {
			if err := r.eng.Transfer(ctx, reqs); err != nil {
				b.Fatal(err)
			}
		}
	})
}
