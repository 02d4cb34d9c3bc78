package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// RawTCP measures plain Go TCP over loopback as a ceiling for the TCP
// transport: streams connections each move block-sized buffers with
// Write / io.ReadFull for d (write: the initiator sends; read: it
// receives). Each side of a stream cycles through blocks distinct blocks
// (the benchmark's batch), so the memory footprint, and with it the cache
// behaviour, matches the engine run. It returns the bytes per second that
// arrived.
func RawTCP(ctx context.Context, write bool, block uint64, streams, blocks int, d time.Duration) (float64, error) {
	if block == 0 || streams < 1 || blocks < 1 {
		return 0, fmt.Errorf("%w: raw baseline needs a block size and at least one stream", ErrConfig)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	var received atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var conns []net.Conn
	var mu sync.Mutex
	defer func() {
		close(stop)
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	}()
	// Fault every page in before the clock starts, as the engine's pinned
	// buffers are.
	mems := make(chan []byte, 2*streams)
	for range 2 * streams {
		mem := make([]byte, block*uint64(blocks))
		for i := 0; i < len(mem); i += 4096 {
			mem[i] = 1
		}
		mems <- mem
	}
	// pump moves blocks on c until stop: sends when send, else receives.
	pump := func(c net.Conn, send bool) {
		defer wg.Done()
		mem := <-mems
		for i := 0; ; i = (i + 1) % blocks {
			select {
			case <-stop:
				return
			default:
			}
			buf := mem[uint64(i)*block : uint64(i+1)*block]
			if send {
				if _, err := c.Write(buf); err != nil {
					return
				}
			} else {
				if _, err := io.ReadFull(c, buf); err != nil {
					return
				}
				received.Add(block)
			}
		}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range streams {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go pump(c, !write)
		}
	}()
	dialed := make([]net.Conn, 0, streams)
	for range streams {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			return 0, err
		}
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
		dialed = append(dialed, c)
	}
	start := time.Now()
	for _, c := range dialed {
		wg.Add(1)
		go pump(c, write)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return 0, errors.Join(errors.New("bench: raw baseline interrupted"), ctx.Err())
	}
	return float64(received.Load()) / time.Since(start).Seconds(), nil
}
