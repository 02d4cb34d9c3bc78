package demo

import "errors"

// Sentinel errors. Run wraps them with %w and the values that were wrong;
// match them with errors.Is.
var (
	// ErrInvalidOptions means an Options field is out of range or
	// malformed (the message names the field).
	ErrInvalidOptions = errors.New("demo: invalid options")
	// ErrMismatch means at least one object read back differs from what
	// was written. The Report lists the first differences.
	ErrMismatch = errors.New("demo: bytes differ")
	// ErrFailed means at least one put or get returned an error. The
	// Report counts them and keeps the first error.
	ErrFailed = errors.New("demo: operations failed")
	// ErrSetup means a part of the cluster (object store, master, owner,
	// engines, buffers) could not be started.
	ErrSetup = errors.New("demo: setup failed")
)
