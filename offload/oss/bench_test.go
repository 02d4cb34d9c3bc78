package oss

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/ferrylabs/ferry/offload/objstore"
)

// rangeServer answers every ranged GET with 206 and the requested number
// of bytes from a fixed pattern, so the benchmark measures the client.
func rangeServer(b *testing.B, size int) *httptest.Server {
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i*17 + 29)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(size))
		w.Header().Set("Content-Range", fmt.Sprintf("bytes 0-%d/%d", size-1, size))
		w.WriteHeader(http.StatusPartialContent)
		w.Write(data)
	}))
	b.Cleanup(srv.Close)
	return srv
}

// BenchmarkGetBatch reads a batch of 64 objects into preallocated memory
// (one slot per request) over loopback with 64 connections, signed.
func BenchmarkGetBatch(b *testing.B) {
	for _, size := range []int{4 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("obj=%dKiB", size>>10), func(b *testing.B) {
			srv := rangeServer(b, size)
			env := map[string]string{EnvEndpoint: srv.URL, EnvBucket: "bench", EnvRegion: "cn-bench", EnvPathStyle: "1",
				EnvAccessKeyID: "ak", EnvAccessSecret: "sk", "MOONCAKE_OSS_MAX_CONNECTIONS": "64"}
			a := New(Options{Lookup: objstore.MapLookup(env), Prefix: "bench"})
			if err := a.Init(ctx); err != nil {
				b.Fatal(err)
			}
			defer a.Close()
			const depth = 64
			mem := make([]byte, depth*size)
			reqs := make([]objstore.GetRequest, depth)
			for i := range reqs {
				reqs[i] = objstore.GetRequest{Key: "object-" + strconv.Itoa(i), Buf: mem[i*size : (i+1)*size]}
			}
			a.GetBatch(ctx, reqs) // warm the keep-alive pool
			b.SetBytes(int64(depth * size))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for _, r := range a.GetBatch(ctx, reqs) {
					if r.Err != nil {
						b.Fatal(r.Err)
					}
				}
			}
		})
	}
}
