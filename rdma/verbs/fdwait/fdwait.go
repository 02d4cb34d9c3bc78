// Package fdwait parks a goroutine in the Go netpoller until a
// non-blocking fd (a completion channel, an async-event fd, an eventfd)
// becomes readable, with context cancellation. It never reads the fd: the
// caller drains it with its own call (ibv_get_cq_event, read).
package fdwait

import "errors"

// ErrClosed is returned by Wait after Close.
var ErrClosed = errors.New("fdwait: closed")
