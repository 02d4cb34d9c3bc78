package oss

import "time"

// WithRequestTimeout shortens the per-request timeout for fault tests.
func withRequestTimeout(o Options, d time.Duration) Options { o.requestTimeout = d; return o }
