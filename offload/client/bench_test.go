package client

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
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
//	          transfer ceiling);
//	serial:   getbatch then tcp, one after the other: the cost without
//	          overlap. On a machine where the store, owner and requester
//	          share the same cores, e2e cannot beat this by much.
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

	fs, err := filestorage.New(c.ctx, filestorage.Options{Config: c.ownerConfig("bench"), Lookup: c.lookup(nil)})
	if err != nil {
		b.Fatal(err)
	}
	defer fs.Close()
	sks := make([][]byte, len(keys))
	for i, k := range keys {
		sks[i] = filestorage.StorageKey("default", k)
	}
	load := func(b *testing.B) {
		if err := fs.BatchLoad(c.ctx, sks, dst); err != nil {
			b.Fatal(err)
		}
	}

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
	seg, err := r.eng.OpenSegment(c.ctx, src.Name())
	if err != nil {
		b.Fatal(err)
	}
	reqs := make([]engine.Request, benchObjects)
	for i := range reqs {
		reqs[i] = engine.Request{Op: transport.Read, Local: engine.Addr(dst[i]), Target: seg,
			TargetAddr: a.Addr() + uint64(i*benchSize), Length: benchSize}
	}
	move := func(b *testing.B) {
		if err := r.eng.Transfer(context.Background(), reqs); err != nil {
			b.Fatal(err)
		}
	}

	b.Run("getbatch", func(b *testing.B) {
		b.SetBytes(benchObjects * benchSize)
		b.ReportAllocs()
		for b.Loop() {
			load(b)
		}
	})
	b.Run("tcp", func(b *testing.B) {
		b.SetBytes(benchObjects * benchSize)
		b.ReportAllocs()
		for b.Loop() {
			move(b)
		}
	})
	// interleaved: one round of each per iteration, in rotating order,
	// so load drift on a shared machine hits all three alike; reports
	// each one's MB/s, e2e as a percentage of the lower ceiling and,
	// where /proc/stat is readable, the machine's busy CPU seconds per GB
	// of each (the S3 server's included) and e2e as a percentage of the
	// rate those costs allow on this machine's cores: when the load and
	// the transfer each keep every core busy alone, e2e cannot exceed
	// cores / (load cost + transfer cost).
	b.Run("interleaved", func(b *testing.B) {
		var spent [3]time.Duration
		var busy [3]float64
		modes := [3]func(*testing.B){
			func(b *testing.B) {
				for i, res := range r.Get(c.ctx, keys, dst) {
					if res.Err != nil {
						b.Fatalf("get %d: %v", i, res.Err)
					}
				}
			},
			load, move,
		}
		n := 0
		for b.Loop() {
			for k := range 3 {
				m := (n + k) % 3
				c0, _ := busyCPUSeconds()
				t0 := time.Now()
				modes[m](b)
				spent[m] += time.Since(t0)
				c1, _ := busyCPUSeconds()
				busy[m] += c1 - c0
			}
			n++
		}
		gbytes := float64(n) * benchObjects * benchSize / 1e9
		mbps := func(d time.Duration) float64 { return gbytes * 1e3 / d.Seconds() }
		e2e, gb, tcp := mbps(spent[0]), mbps(spent[1]), mbps(spent[2])
		b.ReportMetric(e2e, "e2e-MB/s")
		b.ReportMetric(gb, "getbatch-MB/s")
		b.ReportMetric(tcp, "tcp-MB/s")
		b.ReportMetric(100*e2e/min(gb, tcp), "e2e-%-of-lower")
		if _, err := busyCPUSeconds(); err == nil && busy[1] > 0 && busy[2] > 0 {
			b.ReportMetric(busy[0]/gbytes, "e2e-cpu-s/GB")
			b.ReportMetric(busy[1]/gbytes, "getbatch-cpu-s/GB")
			b.ReportMetric(busy[2]/gbytes, "tcp-cpu-s/GB")
			bound := float64(runtime.NumCPU()) / ((busy[1] + busy[2]) / gbytes) * 1e3 // MB/s
			b.ReportMetric(100*e2e/bound, "e2e-%-of-cpu-bound")
		}
	})
	// serial: the load, then the transfer, with no overlap (what the
	// e2e path would cost without pipelining on this machine).
	b.Run("serial", func(b *testing.B) {
		b.SetBytes(benchObjects * benchSize)
		b.ReportAllocs()
		for b.Loop() {
			load(b)
			move(b)
		}
	})
}
