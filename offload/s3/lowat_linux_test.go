package s3

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ferrylabs/ferry/offload/objstore"
)

// dribbleServer answers each GET with a 206 of body, written in 32 KiB
// pieces with pauses; when cut > 0 it closes the connection after cut
// bytes instead (a truncated body).
func dribbleServer(t *testing.T, body []byte, cut int) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					req.Body.Close()
					fmt.Fprintf(c, "HTTP/1.1 206 Partial Content\r\nContent-Length: %d\r\nContent-Range: bytes 0-%d/%d\r\n\r\n",
						len(body), len(body)-1, len(body))
					end := len(body)
					if cut > 0 {
						end = cut
					}
					for off := 0; off < end; off += 32 << 10 {
						if _, err := c.Write(body[off:min(off+32<<10, end)]); err != nil {
							return
						}
						time.Sleep(time.Millisecond)
					}
					if cut > 0 {
						return
					}
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

func TestLowWaterMarkReadsCompleteAndTruncationEnds(t *testing.T) {
	body := pattern(3<<20+77, 3)
	for _, cut := range []int{0, 1<<20 + 5} {
		ep := dribbleServer(t, body, cut)
		a, err := NewFromConfig(Config{Endpoint: ep, Bucket: "b", Region: "r", Anonymous: true}, Options{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, len(body))
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		start := time.Now()
		_, err = a.Get(ctx, "k", buf)
		cancel()
		a.Close()
		if time.Since(start) > 15*time.Second {
			t.Fatalf("cut %d: read took %v", cut, time.Since(start))
		}
		if cut == 0 {
			if err != nil || !bytes.Equal(buf, body) {
				t.Fatalf("dribbled body: %v", err)
			}
			continue
		}
		wantCode(t, err, objstore.CodeDFSServiceUnavailable)
	}
}

func TestLowatConnSetsMarkPerRead(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan struct{})
	stop := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		go c.Write(make([]byte, 8<<20)) // ends with an error when the client closes
		<-stop
	}()
	c, err := dialLowat(&net.Dialer{})(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	lc, ok := c.(*lowatConn)
	if !ok {
		t.Fatalf("dialLowat returned %T", c)
	}
	mark := func() int {
		var v int
		lc.rc.Control(func(fd uintptr) { v, _ = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT) })
		return v
	}
	big := make([]byte, 3<<20)
	if _, err := c.Read(big); err != nil {
		t.Fatal(err)
	}
	if m := mark(); m != lowatMax {
		t.Fatalf("mark after a 3 MiB read %d, want %d", m, lowatMax)
	}
	if _, err := c.Read(big[:300<<10]); err != nil {
		t.Fatal(err)
	}
	if m := mark(); m != 300<<10 {
		t.Fatalf("mark after a 300 KiB read %d", m)
	}
	if _, err := c.Read(big[:10]); err != nil {
		t.Fatal(err)
	}
	if m := mark(); m != 1 {
		t.Fatalf("mark after a small read %d, want 1", m)
	}
	c.Close()
	close(stop)
	<-done
}
