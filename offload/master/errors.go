package master

import "errors"

// Sentinel errors of the package's Go API. RPC answers use
// offloadv1.ErrorCode instead.
var (
	// ErrInvalidOptions means Options or Config hold a bad value; the
	// message names it.
	ErrInvalidOptions = errors.New("master: invalid options")
	// ErrClosed is returned by Start after Close.
	ErrClosed = errors.New("master: server closed")
	// ErrStarted is returned by a second Start.
	ErrStarted = errors.New("master: server already started")
)
