package s3

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/ferrylabs/ferry/offload/objstore"
)

// Benchmark shape: 256 objects of 4 MiB read 64 at a time into
// preallocated memory (1 GiB per round), against the S3 server from
// FERRY_TEST_S3_ENDPOINT. Run with:
//
//	go test -run '^$' -bench BenchmarkLiveGet -benchtime 3x ./offload/s3
const (
	benchObjects = 256
	benchSize    = 4 << 20
	benchConns   = 64
)

type benchFixture struct {
	env  map[string]string
	keys []string // logical keys
	phys []string // physical keys
	bufs [][]byte // preallocated, touched destination buffers
}

// setupBench uploads the objects into a fresh bucket that is removed when
// the benchmark ends.
func setupBench(b *testing.B) *benchFixture {
	b.Helper()
	env := liveBucket(b, "bench")
	f := &benchFixture{env: env}
	a := liveAdapter(b, env, "bench", nil)
	puts := make([]objstore.PutRequest, benchObjects)
	src := pattern(benchSize, 0)
	for i := range puts {
		k := fmt.Sprintf("object-%d", i)
		f.keys = append(f.keys, k)
		f.phys = append(f.phys, "bench/"+objstore.URIEncode(k, false))
		puts[i] = objstore.PutRequest{Key: k, Bufs: [][]byte{src}}
	}
	for i, err := range a.PutBatch(context.Background(), puts) {
		if err != nil {
			b.Fatalf("upload %d: %v", i, err)
		}
	}
	f.bufs = make([][]byte, benchObjects)
	for i := range f.bufs {
		f.bufs[i] = make([]byte, benchSize)
		for j := 0; j < benchSize; j += 4096 {
			f.bufs[i][j] = 1
		}
	}
	return f
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}

// measure runs round b.N times and reports GB/s, CPU seconds per GB and
// heap allocations per object.
func measure(b *testing.B, round func() error) {
	b.Helper()
	if err := round(); err != nil { // warm connections
		b.Fatal(err)
	}
	runtime.GC()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	cpu0 := cpuSeconds()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if err := round(); err != nil {
			b.Fatal(err)
		}
	}
	el := time.Since(start)
	b.StopTimer()
	cpu := cpuSeconds() - cpu0
	runtime.ReadMemStats(&ms1)
	gb := float64(b.N) * benchObjects * benchSize / 1e9
	b.SetBytes(benchObjects * benchSize)
	b.ReportMetric(gb/el.Seconds(), "GB/s")
	b.ReportMetric(cpu/gb, "cpu-s/GB")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(b.N*benchObjects), "allocs/object")
}

// parallel runs fn(i) for every object with benchConns workers.
func parallel(fn func(i int) error) error {
	var next atomic.Int64
	var first atomic.Pointer[error]
	var wg sync.WaitGroup
	for w := 0; w < benchConns; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= benchObjects {
					return
				}
				if err := fn(i); err != nil {
					first.CompareAndSwap(nil, &err)
				}
			}
		}()
	}
	wg.Wait()
	if p := first.Load(); p != nil {
		return *p
	}
	return nil
}

func BenchmarkLiveGet(b *testing.B) {
	if testing.Short() {
		b.Skip("live benchmark")
	}
	f := setupBench(b)
	ctx := context.Background()
	cfg, err := LoadConfig(objstore.NewEnv(objstore.MapLookup(f.env), quiet))
	if err != nil {
		b.Fatal(err)
	}

	for _, variant := range []struct {
		name string
		opts Options
	}{{"ferry-GetBatch", Options{}}, {"ferry-GetBatch-verifycrc", Options{VerifyGetChecksum: true}}} {
		b.Run(variant.name, func(b *testing.B) {
			env := map[string]string{}
			for k, v := range f.env {
				env[k] = v
			}
			env["MOONCAKE_S3_MAX_CONNECTIONS"] = fmt.Sprint(benchConns)
			o := variant.opts
			o.Prefix, o.Lookup, o.Logger = "bench", objstore.MapLookup(env), quiet
			a := New(o)
			if err := a.Init(ctx); err != nil {
				b.Fatal(err)
			}
			defer a.Close()
			reqs := make([]objstore.GetRequest, benchObjects)
			for i := range reqs {
				reqs[i] = objstore.GetRequest{Key: f.keys[i], Buf: f.bufs[i]}
			}
			measure(b, func() error {
				for i, r := range a.GetBatch(ctx, reqs) {
					if r.Err != nil {
						return fmt.Errorf("object %d: %w", i, r.Err)
					}
				}
				return nil
			})
		})
	}

	b.Run("minio-go-GetObject", func(b *testing.B) {
		u, _ := url.Parse(cfg.Endpoint)
		tr := &http.Transport{MaxIdleConnsPerHost: benchConns, DisableCompression: true}
		defer tr.CloseIdleConnections()
		mc, err := minio.New(u.Host, &minio.Options{Creds: credentials.NewStaticV4(cfg.AccessKeyID, cfg.SecretAccessKey, ""),
			Secure: cfg.Scheme == "https", Region: cfg.Region, Transport: tr})
		if err != nil {
			b.Fatal(err)
		}
		measure(b, func() error {
			return parallel(func(i int) error {
				obj, err := mc.GetObject(ctx, cfg.Bucket, f.phys[i], minio.GetObjectOptions{})
				if err != nil {
					return err
				}
				defer obj.Close()
				_, err = io.ReadFull(obj, f.bufs[i])
				return err
			})
		})
	})

	b.Run("net-http-signed-GET", func(b *testing.B) {
		tr := &http.Transport{MaxIdleConnsPerHost: benchConns, DisableCompression: true}
		defer tr.CloseIdleConnections()
		client := &http.Client{Transport: tr}
		s := newSigner(objstore.StaticCredentials{AccessKeyID: cfg.AccessKeyID, SecretAccessKey: cfg.SecretAccessKey}, cfg.Region, false)
		measure(b, func() error {
			return parallel(func(i int) error {
				path := "/" + cfg.Bucket + "/" + objstore.URIEncode(f.phys[i], true)
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Scheme+"://"+cfg.Host+path, nil)
				if err != nil {
					return err
				}
				s.apply(req.Header, time.Now(), http.MethodGet, cfg.Host, path, "")
				resp, err := client.Do(req)
				if err != nil {
					return err
				}
				defer resp.Body.Close()
				if resp.StatusCode != 200 {
					return fmt.Errorf("status %d", resp.StatusCode)
				}
				_, err = io.ReadFull(resp.Body, f.bufs[i])
				return err
			})
		})
	})
}
