package engine

import (
	"context"
	"errors"

	"github.com/ferrylabs/ferry/engine/metadata"
	"github.com/ferrylabs/ferry/transport"
)

// Error is an engine error with Mooncake's numeric code (include/error.h).
// The package's sentinels are *Error values; match them with errors.Is.
type Error struct {
	code int
	msg  string
}

func (e *Error) Error() string { return e.msg }

// Code is Mooncake's negative error code.
func (e *Error) Code() int { return e.code }

// Sentinel errors with Mooncake's codes.
var (
	ErrInvalidArgument      = &Error{-1, "invalid argument"}
	ErrTooManyRequests      = &Error{-2, "too many requests for the batch"}
	ErrAddressNotRegistered = &Error{-3, "address not registered"}
	ErrBatchBusy            = &Error{-4, "batch has transfers in flight"}
	ErrDeviceNotFound       = &Error{-6, "device not found"}
	ErrAddressOverlapped    = &Error{-7, "address range overlaps registered memory"}
	ErrDNS                  = &Error{-101, "name resolution failed"}
	ErrSocket               = &Error{-102, "socket error"}
	ErrMalformedJSON        = &Error{-103, "malformed JSON"}
	ErrRejectHandshake      = &Error{-104, "handshake rejected"}
	ErrMetadata             = &Error{-200, "metadata error"}
	ErrEndpoint             = &Error{-201, "endpoint error"}
	ErrContext              = &Error{-202, "context error"}
	ErrNUMA                 = &Error{-300, "NUMA error"}
	ErrClock                = &Error{-301, "clock error"}
	ErrMemory               = &Error{-302, "memory error"}
	ErrNotImplemented       = &Error{-303, "not implemented"}
)

// Further sentinels without a code of their own.
var (
	// ErrClosed is returned by calls on a closed engine (code -202).
	ErrClosed = errors.New("engine closed")
	// ErrBatchFreed is returned by calls on a freed batch (code -1).
	ErrBatchFreed = errors.New("batch already freed")
	// ErrNoTransport means no transport could be installed, or none of
	// the installed ones reaches a segment
	// (code -303, Mooncake's kNotSupportedTransport).
	ErrNoTransport = errors.New("no usable transport")
)

// Code maps err to Mooncake's numeric code: 0 for nil, the code of an
// *Error in the chain, a matching code for transport, metadata and context
// errors, and -1 (INVALID_ARGUMENT) otherwise.
func Code(err error) int {
	if err == nil {
		return 0
	}
	var e *Error
	if errors.As(err, &e) {
		return e.code
	}
	switch {
	case errors.Is(err, transport.ErrAddressNotRegistered):
		return ErrAddressNotRegistered.code
	case errors.Is(err, transport.ErrOverlap):
		return ErrAddressOverlapped.code
	case errors.Is(err, transport.ErrNotSupported), errors.Is(err, ErrNoTransport):
		return ErrNotImplemented.code
	case errors.Is(err, transport.ErrPeerUnreachable), errors.Is(err, metadata.ErrUnreachable):
		return ErrSocket.code
	case errors.Is(err, metadata.ErrMalformedJSON):
		return ErrMalformedJSON.code
	case errors.Is(err, metadata.ErrRejected):
		return ErrRejectHandshake.code
	case errors.Is(err, metadata.ErrInvalidDescriptor), errors.Is(err, metadata.ErrFrameTooLarge),
		errors.Is(err, metadata.ErrTruncated), errors.Is(err, metadata.ErrBadFrame):
		return ErrMetadata.code
	case errors.Is(err, ErrClosed), errors.Is(err, transport.ErrClosed), errors.Is(err, transport.ErrCanceled),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return ErrContext.code
	}
	return ErrInvalidArgument.code
}
