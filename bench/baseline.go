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
// receives). It returns the bytes per second that arrived.
func RawTCP(ctx context.Context, write bool, block uint64, streams int, d time.Duration) (float64, error) {
	if block == 0 || streams < 1 {
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
	// pump moves blocks on c until stop: sends when send, else receives.
	pump := func(c net.Conn, send bool) {
		defer wg.Done()
		buf := make([]byte, block)
		for {
			select {
			case <-stop:
				return
			default:
			}
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
