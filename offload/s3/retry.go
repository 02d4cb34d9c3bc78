package s3

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"

	"github.com/ferrylabs/ferry/offload/objstore"
)

// maxAttempts is the REST engine's attempt limit (kMaxAttempts).
const maxAttempts = 3

// retryPolicy is Mooncake's REST engine policy: up to three attempts with
// objstore.DefaultBackoff (100-150 ms, then 200-300 ms) between passes.
func retryPolicy() objstore.RetryPolicy {
	return objstore.RetryPolicy{MaxAttempts: maxAttempts, Transient: transient, Backoff: objstore.DefaultBackoff}
}

// transientStatus reports whether an HTTP status is worth another attempt:
// 429, 500, 502, 503 and 504. Other 4xx statuses are final.
func transientStatus(s int) bool {
	switch s {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// transient classifies a failed attempt the way the REST engine does:
// resolve and connect failures, resets, connections that closed before or
// during the response, truncated bodies, and throttling or server errors
// are retried. A timeout is retried only when the request was never fully
// written (a timed-out PUT may still land, and resending could race it).
// A cancelled caller context, a local overflow and any other status are
// final.
func transient(c *objstore.Call, o *objstore.Outcome) bool {
	if o.Err == nil {
		if o.Overflow && !transientStatus(o.Status) {
			return false
		}
		return transientStatus(o.Status)
	}
	err := o.Err
	if errors.Is(err, context.Canceled) {
		return false
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
		return !o.Wrote
	}
	var dns *net.DNSError
	var op *net.OpError
	switch {
	case errors.As(err, &dns):
		return true
	case errors.As(err, &op) && op.Op == "dial":
		return true
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNABORTED):
		return true
	}
	return false
}
