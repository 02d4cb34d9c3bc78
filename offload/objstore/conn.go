package objstore

import (
	"context"
	"io"
	"net"
)

// vecConn wraps a plain TCP connection so that net/http's body copy
// (io.Copy of an io.LimitedReader over a *VecReader) writes the caller's
// slices straight to the socket: no 32 KiB copy buffer is allocated per
// request and no byte is copied through it. Other readers fall through to
// the TCP connection's own ReadFrom.
type vecConn struct {
	*net.TCPConn
}

// ReadFrom implements io.ReaderFrom.
func (c vecConn) ReadFrom(r io.Reader) (int64, error) {
	if lr, ok := r.(*io.LimitedReader); ok {
		if vr, ok := lr.R.(*VecReader); ok {
			n, err := vr.writeToLimit(c.TCPConn, lr.N)
			lr.N -= n
			return n, err
		}
	}
	return c.TCPConn.ReadFrom(r)
}

// WrapConn returns c wrapped so that request bodies streamed from a
// *VecReader go from the caller's slices straight to the socket (see the
// Executor). Only a *net.TCPConn is wrapped; any other connection (TLS
// included) is returned unchanged. Use it in a custom DialContext.
func WrapConn(c net.Conn) net.Conn {
	if tc, ok := c.(*net.TCPConn); ok {
		return vecConn{tc}
	}
	return c
}

// dialer returns a DialContext that wraps plain TCP connections in vecConn.
func dialer(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return WrapConn(c), nil
	}
}
