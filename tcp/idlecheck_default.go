//go:build !unix

package tcp

import "syscall"

// idleCheck is not available on this platform: a stale idle connection
// is found by the first request sent on it.
type idleCheck struct{}

func (*idleCheck) peerClosed(syscall.RawConn) bool { return false }
