package oss

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"

	"github.com/ferrylabs/ferry/offload/objstore"
)

// rawRangeServer is a minimal keep-alive HTTP/1.1 server on loopback that
// answers every request with the same 206 reply of size bytes. It keeps
// its own allocations out of the benchmark's figures.
func rawRangeServer(b *testing.B, size int) string {
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i*17 + 29)
	}
	head := fmt.Sprintf("HTTP/1.1 206 Partial Content\r\nContent-Length: %d\r\nContent-Range: bytes 0-%d/%d\r\n\r\n", size, size-1, size)
	reply := append([]byte(head), data...)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[c] = true
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				br := bufio.NewReaderSize(c, 16<<10)
				for {
					// Read the head, then a Content-Length body if any.
					n := 0
					for {
						line, err := br.ReadSlice('\n')
						if err != nil {
							return
						}
						if bytes.Equal(line, []byte("\r\n")) {
							break
						}
						if v, ok := bytes.CutPrefix(line, []byte("Content-Length: ")); ok {
							n, _ = strconv.Atoi(string(bytes.TrimSpace(v)))
						}
					}
					if _, err := br.Discard(n); err != nil {
						return
					}
					if _, err := c.Write(reply); err != nil {
						return
					}
				}
			}()
		}
	}()
	b.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return "http://" + ln.Addr().String()
}

// benchAdapter is a started adapter for the server at url with up to 64
// connections, signing every request; it is closed when b ends.
func benchAdapter(b *testing.B, url string) *Adapter {
	b.Helper()
	env := map[string]string{EnvEndpoint: url, EnvBucket: "bench", EnvRegion: "cn-bench", EnvPathStyle: "1",
		EnvAccessKeyID: "ak", EnvAccessSecret: "sk", "MOONCAKE_OSS_MAX_CONNECTIONS": "64"}
	a := New(Options{Lookup: objstore.MapLookup(env), Prefix: "bench"})
	if err := a.Init(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { a.Close() })
	return a
}

// BenchmarkGetBatch reads a batch of 64 objects into preallocated memory
// (one slot per request) over loopback with up to 64 connections, each
// request signed with OSS V4. allocs/op are per batch of 64.
func BenchmarkGetBatch(b *testing.B) {
	for _, size := range []int{4 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("obj=%dKiB", size>>10), func(b *testing.B) {
			url := rawRangeServer(b, size)
			a := benchAdapter(b, url)
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

// BenchmarkPutBatch uploads a batch of 64 objects, each streamed from two
// caller slices, over loopback with up to 64 connections, signed.
func BenchmarkPutBatch(b *testing.B) {
	const size = 1 << 20
	url := rawRangeServer(b, 0)
	a := benchAdapter(b, url)
	const depth = 64
	src := make([]byte, size)
	reqs := make([]objstore.PutRequest, depth)
	for i := range reqs {
		reqs[i] = objstore.PutRequest{Key: "object-" + strconv.Itoa(i), Bufs: [][]byte{src[:size/2], src[size/2:]}}
	}
	a.PutBatch(ctx, reqs)
	b.SetBytes(depth * size)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, err := range a.PutBatch(ctx, reqs) {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
}
