// Package etcdstore is the etcd implementation of metadata.Store: the
// central metadata service Mooncake selects with an "etcd://h:p[,h:p]"
// (or bare "h:p") metadata server string.
//
// Values are stored exactly as Mooncake's etcd plugin stores them: the
// JSON text is the value of the key itself, with no lease, so a Mooncake
// engine and a Ferry engine sharing one etcd read each other's keys.
package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/ferrylabs/ferry/engine/metadata"
)

// Default timeouts of Options.
const (
	DefaultDialTimeout    = 5 * time.Second
	DefaultRequestTimeout = 5 * time.Second
)

// Options configures Open. The zero value gives the defaults.
type Options struct {
	// DialTimeout bounds Open's check that the cluster answers. Zero
	// means DefaultDialTimeout.
	DialTimeout time.Duration
	// RequestTimeout bounds each Get, Put and Delete when the caller's
	// context has no earlier deadline. Zero means DefaultRequestTimeout.
	RequestTimeout time.Duration
	// Logger receives connection events at debug level. Nil discards.
	Logger *slog.Logger
}

// Store is a metadata.Store backed by an etcd cluster, reached with the
// etcd v3 client over plain-text gRPC. It is safe for concurrent use.
type Store struct {
	cli       *clientv3.Client
	where     string // "etcd [h:p,...]" for error messages
	reqTO     time.Duration
	log       *slog.Logger
	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

var _ metadata.Store = (*Store)(nil)

// Open connects to the etcd cluster at endpoints ("host:port", or
// "http://host:port"; TLS is not supported) and checks that the cluster
// answers a linearizable Get within opts.DialTimeout (or ctx's earlier
// deadline). Bad endpoints, an unreachable cluster or one without a
// leader give an error wrapping metadata.ErrStore that names the
// endpoints; the caller owns the returned Store and must Close it.
func Open(ctx context.Context, endpoints []string, opts Options) (*Store, error) {
	eps, err := checkEndpoints(endpoints)
	if err != nil {
		return nil, err
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = DefaultDialTimeout
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = DefaultRequestTimeout
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	where := "etcd [" + strings.Join(eps, ",") + "]"
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   eps,
		DialTimeout: opts.DialTimeout,
		// The client's own zap logging would go to stderr; errors reach
		// the caller through the returned values instead.
		Logger: zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %s: create client: %w", metadata.ErrStore, where, err)
	}
	s := &Store{cli: cli, where: where, reqTO: opts.RequestTimeout, log: log.With("store", where)}

	pctx, cancel := context.WithTimeout(ctx, opts.DialTimeout)
	defer cancel()
	// Any key will do: the answer proves the cluster has a leader and
	// serves reads. A count-only Get moves no values.
	_, err = cli.Get(pctx, "mooncake/", clientv3.WithCountOnly())
	if err != nil {
		_ = cli.Close()
		if ctx.Err() == nil && pctx.Err() != nil {
			err = fmt.Errorf("%w within %v: %w", ErrNoAnswer, opts.DialTimeout, err)
		}
		return nil, fmt.Errorf("%w: %s: open: %w", metadata.ErrStore, where, err)
	}
	s.log.Debug("etcd metadata store open")
	return s, nil
}

// checkEndpoints validates endpoints and returns them as "host:port".
func checkEndpoints(endpoints []string) ([]string, error) {
	if len(endpoints) == 0 {
		return nil, fmt.Errorf("%w: %w: no etcd endpoint given", metadata.ErrStore, metadata.ErrBadServer)
	}
	eps := make([]string, 0, len(endpoints))
	for _, ep := range endpoints {
		hp := strings.TrimPrefix(strings.TrimSpace(ep), "http://")
		h, p, err := net.SplitHostPort(hp)
		if err != nil || h == "" || p == "" || strings.Contains(hp, "/") {
			return nil, fmt.Errorf("%w: %w: etcd endpoint %q is not host:port", metadata.ErrStore, metadata.ErrBadServer, ep)
		}
		eps = append(eps, hp)
	}
	return eps, nil
}

// Get returns the value stored under key; the caller owns the returned
// slice. A missing key is an error wrapping metadata.ErrNotFound; every
// other failure wraps metadata.ErrStore and names the key and the
// endpoints. A cancelled ctx ends the call promptly.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	if err := s.check(key); err != nil {
		return nil, s.fail("get", key, err)
	}
	rctx, cancel := context.WithTimeout(ctx, s.reqTO)
	defer cancel()
	resp, err := s.cli.Get(rctx, key)
	if err != nil {
		return nil, s.fail("get", key, s.timeout(ctx, rctx, err))
	}
	if len(resp.Kvs) == 0 {
		return nil, fmt.Errorf("%w: %s: get %q", metadata.ErrNotFound, s.where, key)
	}
	return resp.Kvs[0].Value, nil
}

// Put stores value under key with no lease, replacing any previous value.
// value is not retained: it may be reused as soon as Put returns.
// Failures wrap metadata.ErrStore and name the key and the endpoints.
func (s *Store) Put(ctx context.Context, key string, value []byte) error {
	if err := s.check(key); err != nil {
		return s.fail("put", key, err)
	}
	rctx, cancel := context.WithTimeout(ctx, s.reqTO)
	defer cancel()
	if _, err := s.cli.Put(rctx, key, string(value)); err != nil {
		return s.fail("put", key, s.timeout(ctx, rctx, err))
	}
	return nil
}

// Delete removes key; deleting a missing key is not an error. Failures
// wrap metadata.ErrStore and name the key and the endpoints.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := s.check(key); err != nil {
		return s.fail("delete", key, err)
	}
	rctx, cancel := context.WithTimeout(ctx, s.reqTO)
	defer cancel()
	if _, err := s.cli.Delete(rctx, key); err != nil {
		return s.fail("delete", key, s.timeout(ctx, rctx, err))
	}
	return nil
}

// Close closes the client's connections. It is idempotent and returns
// the first call's result; later Get, Put and Delete calls fail with an
// error wrapping metadata.ErrStore and ErrClosed.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		err := s.cli.Close()
		if err != nil && !errors.Is(err, context.Canceled) {
			s.closeErr = fmt.Errorf("%w: %s: close: %w", metadata.ErrStore, s.where, err)
		}
		s.log.Debug("etcd metadata store closed")
	})
	return s.closeErr
}

func (s *Store) check(key string) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if key == "" {
		return ErrEmptyKey
	}
	return nil
}

// timeout marks err as ErrNoAnswer when the request deadline, not the
// caller's context, ended it.
func (s *Store) timeout(ctx, rctx context.Context, err error) error {
	if ctx.Err() == nil && errors.Is(rctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w within %v: %w", ErrNoAnswer, s.reqTO, err)
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		// The client reports a cancelled call as a gRPC status; keep the
		// caller's own context error visible to errors.Is.
		return fmt.Errorf("%w: %w", cerr, err)
	}
	return err
}

// fail wraps err as a failure of op on key, naming the endpoints.
func (s *Store) fail(op, key string, err error) error {
	return fmt.Errorf("%w: %s: %s %q: %w", metadata.ErrStore, s.where, op, key, err)
}
