package httpstore

import "errors"

// Errors of the HTTP store. Every error a Store returns other than one
// wrapping metadata.ErrNotFound also wraps metadata.ErrStore; these
// sentinels tell the causes apart.
var (
	// ErrClosed means the Store was used after Close.
	ErrClosed = errors.New("http metadata store closed")
	// ErrStatus means the server answered with a status the protocol
	// does not allow for the request (anything but 200 for GET, 404 for
	// GET of a missing key, or 2xx for PUT and DELETE).
	ErrStatus = errors.New("unexpected http status")
	// ErrTooLarge means a value is larger than MaxValueSize.
	ErrTooLarge = errors.New("metadata value too large")
	// ErrBadKey means the key is empty, which the protocol cannot carry.
	ErrBadKey = errors.New("invalid metadata key")
)
