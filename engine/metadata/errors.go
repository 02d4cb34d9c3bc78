package metadata

import "errors"

// Sentinel errors of the metadata package. Functions wrap them with %w and
// add what was wrong; match them with errors.Is.
var (
	// ErrFrameTooLarge means a frame's length field exceeds the configured
	// maximum (MC_HANDSHAKE_MAX_LENGTH). Nothing of the body was read.
	ErrFrameTooLarge = errors.New("handshake frame too large")
	// ErrBadFrame means a frame is malformed: a zero length, or a type the
	// receiver did not expect.
	ErrBadFrame = errors.New("malformed handshake frame")
	// ErrTruncated means the stream ended (or the buffer ran out) before
	// the whole frame was read.
	ErrTruncated = errors.New("truncated handshake frame")
	// ErrMalformedJSON means a frame body is not the JSON it should be.
	ErrMalformedJSON = errors.New("malformed JSON")
	// ErrInvalidDescriptor means a segment descriptor is well-formed JSON
	// but fails validation (missing name, zero address or length, key
	// counts that do not match the device count, ...).
	ErrInvalidDescriptor = errors.New("invalid segment descriptor")
	// ErrInvalidName means a segment name is not "host:port".
	ErrInvalidName = errors.New("invalid segment name")
	// ErrRejected means the peer's daemon answered with a failure or
	// closed the connection without a reply.
	ErrRejected = errors.New("handshake request rejected")
	// ErrUnreachable means the peer's handshake daemon could not be
	// reached or did not answer in time.
	ErrUnreachable = errors.New("handshake peer unreachable")
	// ErrNoHandler means a Connection frame arrived and no connection
	// handler is installed.
	ErrNoHandler = errors.New("no handler for connection frames")
	// ErrClosed is returned by calls on a closed daemon.
	ErrClosed = errors.New("handshake daemon closed")
	// ErrNoPort means no free port was found in the configured range.
	ErrNoPort = errors.New("no free port in range")
)
