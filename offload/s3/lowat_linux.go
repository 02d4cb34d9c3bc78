package s3

import (
	"context"
	"net"
	"syscall"
)

// Receive low-water marks for large body reads. A read of at least
// lowatMin bytes sets SO_RCVLOWAT to min(len(p), lowatMax) first, so the
// poller wakes the reader only once that much data is queued: a 4 MiB
// body then takes a handful of wake-ups and read calls instead of one per
// loopback segment burst. The mark never exceeds len(p), and len(p) never
// exceeds what the response still owes (the HTTP body reader limits it to
// Content-Length), so a wait can only end early (EOF, error), never hang
// on bytes that will not come.
const (
	lowatMin = 256 << 10
	lowatMax = 1 << 20
)

// lowatConn is a TCP connection that adjusts SO_RCVLOWAT per read.
type lowatConn struct {
	*net.TCPConn
	rc  syscall.RawConn
	cur int // current mark; 0 means the kernel default (1)
}

func (c *lowatConn) Read(p []byte) (int, error) {
	want := 1
	if len(p) >= lowatMin {
		want = min(len(p), lowatMax)
	}
	if want != max(c.cur, 1) {
		var serr error
		if err := c.rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT, want)
		}); err == nil && serr == nil {
			c.cur = want
		}
	}
	return c.TCPConn.Read(p)
}

// dialLowat wraps d so TCP connections use lowatConn.
func dialLowat(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		tc, ok := c.(*net.TCPConn)
		if !ok {
			return c, nil
		}
		rc, err := tc.SyscallConn()
		if err != nil {
			return c, nil
		}
		return &lowatConn{TCPConn: tc, rc: rc}, nil
	}
}
