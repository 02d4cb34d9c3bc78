package etcdstore

import "errors"

// Errors of the etcd store. Each is returned wrapped together with
// metadata.ErrStore, so callers that only care whether the store failed
// can test for metadata.ErrStore alone.
var (
	// ErrClosed means the Store was used after Close.
	ErrClosed = errors.New("etcd store closed")
	// ErrEmptyKey means a Get, Put or Delete named the empty key, which
	// etcd does not accept.
	ErrEmptyKey = errors.New("empty metadata key")
	// ErrNoAnswer means the cluster gave no answer within the configured
	// timeout (DialTimeout for Open, RequestTimeout for a request).
	ErrNoAnswer = errors.New("etcd gave no answer in time")
)
