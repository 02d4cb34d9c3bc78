package verbs

import (
	"errors"
	"fmt"
)

// Sentinel errors. Errors returned by this package wrap one of these (or a
// syscall.Errno from libibverbs) with %w; match them with errors.Is.
var (
	// ErrNotSupported means RDMA cannot be used here: the build has no cgo,
	// the OS is not Linux, or the machine has no usable RDMA device. Callers
	// fall back to TCP.
	ErrNotSupported = errors.New("verbs: RDMA not supported")

	// ErrNoDevice means the machine has no RDMA device (or the kernel has no
	// RDMA support at all). It wraps ErrNotSupported.
	ErrNoDevice error = &subError{msg: "verbs: no RDMA device", parent: ErrNotSupported}

	// ErrDeviceNotFound means Open was given a name no device has.
	ErrDeviceNotFound = errors.New("verbs: device not found")

	// ErrClosed means the handle (or one of its parents) was closed.
	ErrClosed = errors.New("verbs: handle closed")

	// ErrBusy means Close was called on a handle that still has children
	// (an MR or QP on a PD, a QP on a CQ, a CQ on a channel).
	ErrBusy = errors.New("verbs: handle still in use")

	// ErrInvalidArgument means a parameter was out of range or malformed;
	// the message names the parameter.
	ErrInvalidArgument = errors.New("verbs: invalid argument")

	// ErrQPState means the operation is not allowed in the QP's current
	// state (posting before RTS, an out-of-order transition).
	ErrQPState = errors.New("verbs: wrong QP state")

	// ErrQueueFull means the send queue has no room for the next work
	// request (more than max_send_wr outstanding). Work requests before it
	// were posted; retry the rest after polling completions.
	ErrQueueFull = errors.New("verbs: send queue full")

	// ErrCQOverrun means the completion queue overflowed: more completions
	// were produced than its depth. The CQ and its QPs are unusable.
	ErrCQOverrun = errors.New("verbs: completion queue overrun")

	// ErrWouldBlock means a non-blocking call found nothing to return (no
	// completion event pending on a channel).
	ErrWouldBlock = errors.New("verbs: would block")
)

// subError is a sentinel that also matches a broader one.
type subError struct {
	msg    string
	parent error
}

func (e *subError) Error() string { return e.msg }
func (e *subError) Unwrap() error { return e.parent }

// CompletionError describes a work completion that did not succeed. The
// RDMA transport builds it from a Completion when it gives up on a WR.
type CompletionError struct {
	WRID   uint64
	QPNum  uint32
	Status Status
	// VendorErr is the vendor syndrome, for diagnostics only.
	VendorErr uint32
}

// Error implements error.
func (e *CompletionError) Error() string {
	return fmt.Sprintf("verbs: work request %d on QP %d completed with %s (vendor 0x%x)",
		e.WRID, e.QPNum, e.Status, e.VendorErr)
}

// Err returns nil for a successful completion and a *CompletionError
// otherwise.
func (c *Completion) Err() error {
	if c.Status == StatusSuccess {
		return nil
	}
	return &CompletionError{WRID: c.WRID, QPNum: c.QPNum, Status: c.Status, VendorErr: c.VendorErr}
}
