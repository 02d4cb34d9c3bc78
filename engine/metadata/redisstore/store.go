package redisstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/ferrylabs/ferry/engine/metadata"
)

// Store is a metadata.Store kept in one redis server. It is safe for
// concurrent use; commands share a small connection pool.
type Store struct {
	addr     string
	password string
	timeout  time.Duration
	client   *redis.Client

	mu     sync.Mutex     // guards closed and wg.Add against Close
	closed bool           //
	wg     sync.WaitGroup // commands in flight, detached ones included

	closeOnce sync.Once
	closeErr  error
}

var _ metadata.Store = (*Store)(nil)

// Open connects to the redis server at addr ("host:port"), authenticates
// and selects opts.DB, and checks the server with PING, all within
// opts.DialTimeout (or ctx's earlier deadline). Errors wrap
// metadata.ErrStore and name the address, never the password. The
// caller must Close the returned Store.
func Open(ctx context.Context, addr string, opts Options) (*Store, error) {
	if h, p, err := net.SplitHostPort(addr); err != nil || h == "" || p == "" {
		return nil, fmt.Errorf("%w: redis address %q is not host:port", ErrBadOptions, addr)
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("%w (redis %s)", err, addr)
	}
	username := opts.Username
	if opts.Password == "" {
		username = ""
	}
	client := redis.NewClient(&redis.Options{
		Addr:     addr,
		Username: username,
		Password: opts.Password,
		DB:       opts.DB,
		// RESP2 with plain AUTH/SELECT, as Mooncake's hiredis client.
		Protocol:        2,
		DisableIdentity: true,
		MaintNotificationsConfig: &maintnotifications.Config{
			Mode: maintnotifications.ModeDisabled,
		},
		DialTimeout:           opts.DialTimeout,
		DialerRetries:         1,
		ReadTimeout:           opts.Timeout,
		WriteTimeout:          opts.Timeout,
		ContextTimeoutEnabled: true,
		// One retry recovers a pooled connection the server closed (a
		// restart); more would only delay reporting an outage.
		MaxRetries: 1,
		PoolSize:   8,
	})
	s := &Store{addr: addr, password: opts.Password, timeout: opts.Timeout, client: client}

	pctx, cancel := context.WithTimeout(ctx, opts.DialTimeout)
	defer cancel()
	if err := client.Ping(pctx).Err(); err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("%w: redis %s: connect (db %d): %w", metadata.ErrStore, addr, opts.DB, s.cause(ctx, pctx, err))
	}
	return s, nil
}

// Addr is the "host:port" the store connects to.
func (s *Store) Addr() string { return s.addr }

// opContext bounds one command by the store's Timeout unless ctx already
// ends sooner.
func (s *Store) opContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= s.timeout {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, s.timeout)
}

// cause makes a command error fit for a message: the password masked,
// and the context's error added when the caller's context (outer) or the
// store's timeout (inner) ended the command, so errors.Is finds
// context.Canceled or context.DeadlineExceeded.
func (s *Store) cause(outer, inner context.Context, err error) error {
	err = redact(err, s.password)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if cerr := outer.Err(); cerr != nil {
		return fmt.Errorf("%w (%w)", err, cerr)
	}
	if cerr := inner.Err(); errors.Is(cerr, context.DeadlineExceeded) {
		return fmt.Errorf("%w (timeout %v: %w)", err, s.timeout, cerr)
	}
	return err
}

// run executes one command under the store's Timeout. When ctx can be
// cancelled the command runs on its own goroutine, so a cancellation is
// honoured at once even while the client waits on a socket read (which
// only deadlines interrupt); the abandoned command ends by the Timeout,
// or sooner when Close closes its connection, and Close waits for it.
func (s *Store) run(ctx context.Context, op, key string, cmd func(context.Context) error) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return fmt.Errorf("%w: redis %s: %s %q", ErrClosed, s.addr, op, key)
	}
	s.wg.Add(1)
	s.mu.Unlock()

	// Cancelling cctx on return cannot stop a detached command's socket
	// read (its deadline does) but does stop its dials and pool waits.
	cctx, cancel := s.opContext(ctx)
	defer cancel()
	if ctx.Done() == nil {
		err := cmd(cctx)
		s.wg.Done()
		return s.result(ctx, cctx, op, key, err)
	}
	done := make(chan error, 1)
	go func() {
		defer s.wg.Done()
		done <- cmd(cctx)
	}()
	select {
	case err := <-done:
		return s.result(ctx, cctx, op, key, err)
	case <-ctx.Done():
		return s.result(ctx, cctx, op, key, ctx.Err())
	}
}

// result maps a command's error: nil stays nil, redis.Nil (no such key)
// becomes metadata.ErrNotFound, anything else metadata.ErrStore naming the
// server, the command and the key.
func (s *Store) result(outer, inner context.Context, op, key string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, redis.Nil):
		return fmt.Errorf("%w: redis %s: %q", metadata.ErrNotFound, s.addr, key)
	default:
		return fmt.Errorf("%w: redis %s: %s %q: %w", metadata.ErrStore, s.addr, op, key, s.cause(outer, inner, err))
	}
}

// Get returns a new slice holding the value under key (the caller owns
// it). A missing key is an error wrapping metadata.ErrNotFound; any other
// failure wraps metadata.ErrStore and names the key and the server.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	var v []byte
	err := s.run(ctx, "GET", key, func(c context.Context) error {
		var err error
		v, err = s.client.Get(c, key).Bytes()
		return err
	})
	if err != nil {
		return nil, err
	}
	return v, nil
}

// Put stores value under key with a plain SET (no expiry), replacing any
// previous value. value is not retained: the caller may reuse it when Put
// returns (a cancellable ctx makes Put send a copy, since a cancelled Put
// returns before its command ends). Failures wrap metadata.ErrStore and
// name the key and the server.
func (s *Store) Put(ctx context.Context, key string, value []byte) error {
	if ctx.Done() != nil {
		value = bytes.Clone(value)
	}
	return s.run(ctx, "SET", key, func(c context.Context) error {
		return s.client.Set(c, key, value, 0).Err()
	})
}

// Delete removes key with DEL; a missing key is not an error. Failures
// wrap metadata.ErrStore and name the key and the server.
func (s *Store) Delete(ctx context.Context, key string) error {
	return s.run(ctx, "DEL", key, func(c context.Context) error {
		return s.client.Del(c, key).Err()
	})
}

// Close closes the connections; commands in flight fail with an error
// wrapping metadata.ErrStore, and Close returns once they have. It is
// idempotent: later calls return the first call's result, and
// Get, Put and Delete after Close fail with ErrClosed.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		if err := s.client.Close(); err != nil {
			s.closeErr = fmt.Errorf("%w: redis %s: close: %w", metadata.ErrStore, s.addr, redact(err, s.password))
		}
		s.wg.Wait()
	})
	return s.closeErr
}
