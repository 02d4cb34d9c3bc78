package tcp

import (
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferrylabs/ferry/transport"
)

// Benchmark shapes shared by the transport and the raw baseline, so that
// `go test -bench .` prints both side by side.
var benchShapes = []struct {
	block   int
	streams int
}{{64 << 10, 1}, {64 << 10, 2}, {1 << 20, 1}, {1 << 20, 2}}

const benchWindow = 16 << 20 // bytes in flight per stream

func benchName(op string, block, streams int) string {
	return fmt.Sprintf("%s/block=%dKiB/streams=%d", op, block>>10, streams)
}

// BenchmarkTransport moves block-sized requests with the transport: each
// stream keeps a batch of benchWindow bytes in flight, waits for it and
// submits the next one (the transfer_engine_bench workload). One op is one
// request; allocs/op is the data path's per-request allocation count.
func BenchmarkTransport(b *testing.B) {
	for _, op := range []transport.Opcode{transport.Write, transport.Read} {
		for _, s := range benchShapes {
			b.Run(benchName(op.String(), s.block, s.streams), func(b *testing.B) {
				benchTransport(b, op, s.block, s.streams)
			})
		}
	}
}

func benchTransport(b *testing.B, op transport.Opcode, block, streams int) {
	depth := max(benchWindow/block, 4)
	size := streams * depth * block
	a := newNode(b, size)
	t := newNode(b, size)
	seg := t.segment()

	type stream struct {
		tasks   []*transport.Task
		pending atomic.Int32
		done    chan struct{}
		failed  atomic.Pointer[transport.Task]
		hook    func(*transport.Task)
	}
	ss := make([]*stream, streams)
	for i := range ss {
		st := &stream{done: make(chan struct{}, 1)}
		st.hook = func(tk *transport.Task) {
			if tk.Err() != nil {
				st.failed.Store(tk)
				tk.SetState(transport.StateFailed)
			} else {
				tk.SetState(transport.StateCompleted)
			}
			if st.pending.Add(-1) == 0 {
				st.done <- struct{}{}
			}
		}
		for j := range depth {
			off := uint64((j*streams + i) * block) // request j of thread i, as the bench lays it out
			tk := newTask(a, seg, op, off, off, block)
			tk.Reset(st.hook)
			st.tasks = append(st.tasks, tk)
		}
		ss[i] = st
	}
	run := func(st *stream, n int) error {
		for n > 0 {
			batch := st.tasks[:min(n, len(st.tasks))]
			st.pending.Store(int32(len(batch)))
			for _, tk := range batch {
				tk.Reset(st.hook)
			}
			if err := a.t.Submit(batch); err != nil {
				return err
			}
			<-st.done
			if tk := st.failed.Load(); tk != nil {
				return tk.Err()
			}
			n -= len(batch)
		}
		return nil
	}
	// Warm up: open the lanes, grow the rings and the op free list.
	for _, st := range ss {
		if err := run(st, 2*depth); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(block))
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	errs := make([]error, streams)
	for i, st := range ss {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = run(st, b.N/streams+1)
		}()
	}
	wg.Wait()
	b.StopTimer()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRawTCP is the baseline: the same blocks and stream count moved
// with io.ReadFull / Write over plain loopback TCP connections, with no
// framing and no bookkeeping. Each side of a stream cycles through the same
// benchWindow of pre-faulted memory as BenchmarkTransport, so both touch as
// much memory.
func BenchmarkRawTCP(b *testing.B) {
	for _, op := range []string{"write", "read"} {
		for _, s := range benchShapes {
			b.Run(benchName(op, s.block, s.streams), func(b *testing.B) {
				benchRaw(b, op == "write", s.block, s.streams)
			})
		}
	}
}

func benchRaw(b *testing.B, write bool, block, streams int) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	per := b.N/streams + 1
	var srv sync.WaitGroup
	srv.Add(streams)
	go func() {
		for range streams {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer srv.Done()
				defer c.Close()
				win := window(block)
				for i := range per {
					buf := win[(i%(len(win)/block))*block:][:block]
					if write {
						if _, err := io.ReadFull(c, buf); err != nil {
							return
						}
					} else if _, err := c.Write(buf); err != nil {
						return
					}
				}
				if write {
					c.Write([]byte{1}) // the last block has landed
				}
			}()
		}
	}()
	conns := make([]net.Conn, streams)
	for i := range conns {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Minute))
		conns[i] = c
	}
	b.SetBytes(int64(block))
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			win := window(block)
			buf := win[:block]
			for i := range per {
				buf = win[(i%(len(win)/block))*block:][:block]
				if write {
					if _, err := c.Write(buf); err != nil {
						return
					}
				} else if _, err := io.ReadFull(c, buf); err != nil {
					return
				}
			}
			if write {
				io.ReadFull(c, buf[:1])
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	srv.Wait()
}

// window returns benchWindow bytes (at least 4 blocks) with every page
// faulted in.
func window(block int) []byte {
	w := make([]byte, max(benchWindow, 4*block))
	for i := 0; i < len(w); i += 4096 {
		w[i] = 1
	}
	return w
}
