//go:build unix

package tcp

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// idleCheck tells whether a connection with no request outstanding is
// still usable. A peer that restarted or closed the connection has
// left an EOF (FIN) or an error (RST) in the socket, and a healthy peer
// never sends anything unasked, so one non-blocking MSG_PEEK tells them
// apart without consuming a byte. A lane owns one idleCheck and reuses
// it, so a check allocates nothing.
type idleCheck struct {
	buf    [1]byte
	closed bool
	fn     func(fd uintptr) bool // c.peek, bound once
}

// peerClosed reports whether conn (through its raw form rc) was closed
// or reset by the peer, or holds unsolicited bytes. rc nil means the
// check is not available and reports false. The caller guarantees no
// goroutine reads conn meanwhile.
func (c *idleCheck) peerClosed(rc syscall.RawConn) bool {
	if rc == nil {
		return false
	}
	if c.fn == nil {
		c.fn = c.peek
	}
	c.closed = false
	if err := rc.Read(c.fn); err != nil {
		return true
	}
	return c.closed
}

// peek runs with the socket's fd; it never waits for readiness.
func (c *idleCheck) peek(fd uintptr) bool {
	_, _, err := unix.Recvfrom(int(fd), c.buf[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
	// EAGAIN: nothing to read, the connection is open and idle. No
	// error: EOF, or a byte nobody asked for. Any other error: reset or
	// otherwise broken.
	c.closed = err != unix.EAGAIN && err != unix.EWOULDBLOCK && err != unix.EINTR
	return true
}
