// Package httpstore is the HTTP central metadata service of Mooncake's
// Transfer Engine: a client Store speaking the protocol of Mooncake's
// HTTP metadata plugin (GET, PUT and DELETE of <url>?key=<key>, the
// value as the body, 404 for a missing key) and Server, an in-memory
// server of that protocol.
package httpstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrylabs/ferry/engine/metadata"
)

// MaxValueSize bounds a value: the Server refuses larger PUT bodies with
// 413 and the Store refuses to send or accept larger values.
const MaxValueSize = 64 << 20

// DefaultTimeout bounds one request when Options.Timeout is zero.
const DefaultTimeout = 5 * time.Second

// errBodyLimit bounds how much of an error response is quoted in an error.
const errBodyLimit = 256

// Options configure a Store. The zero Options are usable.
type Options struct {
	// Client sends the requests. Nil means a client of the Store's own
	// with connect, TLS and idle timeouts; Close releases its idle
	// connections. A given Client is used as is and never closed.
	Client *http.Client
	// Timeout bounds each request (connect, send, answer and body) when
	// the caller's context has no earlier deadline. Zero means
	// DefaultTimeout; negative is an error.
	Timeout time.Duration
	// Token, when set, is sent as "Authorization: Bearer <Token>"
	// (MC_METADATA_HTTP_TOKEN, shared with the server). It never appears
	// in errors.
	Token string
}

// Store is a metadata.Store backed by a Mooncake HTTP metadata server.
// It is safe for concurrent use.
type Store struct {
	server  string // the URL as given, for errors
	prefix  string // server URL up to and including "key="
	client  *http.Client
	own     *http.Transport // non-nil when the Store built client
	timeout time.Duration
	token   string
	closed  atomic.Bool
}

var _ metadata.Store = (*Store)(nil)

// Open returns a store speaking Mooncake's HTTP metadata protocol at
// rawURL ("http://host:port/metadata", or https): GET|PUT|DELETE
// rawURL?key=<percent-encoded key>; PUT sends the value as the body and
// GET returns it; 404 on GET means metadata.ErrNotFound. Open checks the
// URL only and sends no request. A bad URL or option gives an error
// wrapping metadata.ErrBadServer and metadata.ErrStore.
func Open(rawURL string, opts Options) (*Store, error) {
	bad := func(why string) error {
		return fmt.Errorf("%w: %w: %q: %s", metadata.ErrStore, metadata.ErrBadServer, rawURL, why)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, bad(err.Error())
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, bad("want an http:// or https:// URL")
	}
	if u.Host == "" || u.Hostname() == "" {
		return nil, bad("no host")
	}
	if u.Fragment != "" || strings.Contains(rawURL, "#") {
		return nil, bad("a fragment (#...) cannot be part of the metadata URL")
	}
	if u.Query().Has("key") {
		return nil, bad(`the URL already has a "key" query parameter`)
	}
	if opts.Timeout < 0 {
		return nil, bad(fmt.Sprintf("Options.Timeout %v is negative", opts.Timeout))
	}
	s := &Store{server: rawURL, client: opts.Client, timeout: opts.Timeout, token: opts.Token}
	if s.timeout == 0 {
		s.timeout = DefaultTimeout
	}
	sep := "?"
	if u.RawQuery != "" || u.ForceQuery {
		sep = "&"
		if strings.HasSuffix(rawURL, "?") {
			sep = ""
		}
	}
	s.prefix = rawURL + sep + "key="
	if s.client == nil {
		s.own = newTransport(s.timeout)
		s.client = &http.Client{Transport: s.own}
	}
	return s, nil
}

// newTransport is the transport of a Store that was given no client.
func newTransport(timeout time.Duration) *http.Transport {
	d := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           d.DialContext,
		TLSHandshakeTimeout:   timeout,
		ResponseHeaderTimeout: timeout,
		MaxIdleConns:          64,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

// URL is the server URL the Store was opened with.
func (s *Store) URL() string { return s.server }

// Get returns the value stored under key; the caller owns the returned
// slice. A missing key (404) gives an error wrapping
// metadata.ErrNotFound; a transport failure, timeout, cancelled context,
// other status or value over MaxValueSize gives one wrapping
// metadata.ErrStore. Errors name the server and the key.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	var out []byte
	err := s.do(ctx, http.MethodGet, key, nil, func(rctx context.Context, resp *http.Response) error {
		switch resp.StatusCode {
		case http.StatusOK:
		case http.StatusNotFound:
			return fmt.Errorf("%w: GET %s key %q", metadata.ErrNotFound, s.server, key)
		default:
			return s.statusError(http.MethodGet, key, resp)
		}
		if resp.ContentLength > MaxValueSize {
			return fmt.Errorf("%w: GET %s key %q: %w: %d bytes (limit %d)", metadata.ErrStore, s.server, key, ErrTooLarge, resp.ContentLength, MaxValueSize)
		}
		var buf bytes.Buffer
		if resp.ContentLength > 0 {
			buf.Grow(int(resp.ContentLength))
		}
		n, err := buf.ReadFrom(io.LimitReader(resp.Body, MaxValueSize+1))
		if err != nil {
			return s.transportError(rctx, http.MethodGet, key, fmt.Errorf("reading the value: %w", err))
		}
		if n > MaxValueSize {
			return fmt.Errorf("%w: GET %s key %q: %w: more than %d bytes", metadata.ErrStore, s.server, key, ErrTooLarge, MaxValueSize)
		}
		out = buf.Bytes()
		if out == nil {
			out = []byte{} // an empty value is a value, not "no value"
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Put stores value under key (the body of a PUT). The Store reads value
// only until Put returns; the caller may reuse it afterwards. Any status
// but 2xx, a transport failure, timeout or cancelled context gives an
// error wrapping metadata.ErrStore naming the server, key and status.
func (s *Store) Put(ctx context.Context, key string, value []byte) error {
	if len(value) > MaxValueSize {
		return fmt.Errorf("%w: PUT %s key %q: %w: %d bytes (limit %d)", metadata.ErrStore, s.server, key, ErrTooLarge, len(value), MaxValueSize)
	}
	src := &bodySource{data: value}
	defer src.detach()
	return s.do(ctx, http.MethodPut, key, src, func(_ context.Context, resp *http.Response) error {
		if resp.StatusCode/100 != 2 {
			return s.statusError(http.MethodPut, key, resp)
		}
		return nil
	})
}

// Delete removes key. 2xx and 404 are success (deleting a missing key is
// not an error); any other status, a transport failure, timeout or
// cancelled context gives an error wrapping metadata.ErrStore.
func (s *Store) Delete(ctx context.Context, key string) error {
	return s.do(ctx, http.MethodDelete, key, nil, func(_ context.Context, resp *http.Response) error {
		if resp.StatusCode/100 != 2 && resp.StatusCode != http.StatusNotFound {
			return s.statusError(http.MethodDelete, key, resp)
		}
		return nil
	})
}

// Close releases the idle connections of the Store's own client (a
// client given in Options is left alone). It is idempotent and always
// returns nil; later calls of Get, Put and Delete fail with an error
// wrapping metadata.ErrStore and ErrClosed.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	if s.own != nil {
		s.own.CloseIdleConnections()
	}
	return nil
}

// do sends one request and hands a response to check, draining and
// closing its body afterwards so the connection is reused.
func (s *Store) do(ctx context.Context, method, key string, body *bodySource, check func(context.Context, *http.Response) error) error {
	if s.closed.Load() {
		return fmt.Errorf("%w: %s %s key %q: %w", metadata.ErrStore, method, s.server, key, ErrClosed)
	}
	if key == "" {
		return fmt.Errorf("%w: %s %s: %w: empty key", metadata.ErrStore, method, s.server, ErrBadKey)
	}
	if ctx == nil {
		ctx = context.Background()
	}
	rctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	u := string(appendEscaped([]byte(s.prefix), key))
	req, err := http.NewRequestWithContext(rctx, method, u, nil)
	if err != nil {
		return fmt.Errorf("%w: %s %s key %q: building the request: %w", metadata.ErrStore, method, s.server, key, err)
	}
	if body != nil {
		req.Body = body.open()
		req.GetBody = func() (io.ReadCloser, error) { return body.open(), nil }
		req.ContentLength = int64(len(body.data))
		if len(body.data) == 0 {
			req.Body = http.NoBody
			req.GetBody = func() (io.ReadCloser, error) { return http.NoBody, nil }
		}
		req.Header.Set("Content-Type", "application/json")
	}
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return s.transportError(rctx, method, key, err)
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
	}()
	return check(rctx, resp)
}

// transportError wraps a failure to get an answer, saying whether the
// caller cancelled or the deadline passed.
func (s *Store) transportError(ctx context.Context, method, key string, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // the URL repeats the server and the key
	}
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded) && !errors.Is(err, context.DeadlineExceeded):
		err = fmt.Errorf("%w (%w)", err, context.DeadlineExceeded)
	case errors.Is(ctx.Err(), context.Canceled) && !errors.Is(err, context.Canceled):
		err = fmt.Errorf("%w (%w)", err, context.Canceled)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %s %s key %q: no answer within the deadline (timeout %v): %w", metadata.ErrStore, method, s.server, key, s.timeout, err)
	}
	return fmt.Errorf("%w: %s %s key %q: %w", metadata.ErrStore, method, s.server, key, err)
}

// statusError describes an answer with a status the request does not
// allow, quoting the start of its body.
func (s *Store) statusError(method, key string, resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, errBodyLimit))
	msg := strings.TrimSpace(string(b))
	if msg != "" {
		msg = ": " + strconv.Quote(msg)
	}
	if resp.StatusCode == http.StatusUnauthorized {
		msg += " (set MC_METADATA_HTTP_TOKEN to the server's token)"
	}
	return fmt.Errorf("%w: %s %s key %q: %w %s%s", metadata.ErrStore, method, s.server, key, ErrStatus, resp.Status, msg)
}

// bodySource holds a PUT value and lets the Store stop every reader of it
// when Put returns: the HTTP transport may read a request body from
// another goroutine after the response arrived, and the caller owns the
// value again once Put returns.
type bodySource struct {
	mu       sync.Mutex
	data     []byte
	detached bool
}

var errDetached = errors.New("request body read after the request ended")

func (b *bodySource) open() io.ReadCloser { return &bodyReader{src: b} }

func (b *bodySource) detach() {
	b.mu.Lock()
	b.detached = true
	b.mu.Unlock()
}

type bodyReader struct {
	src *bodySource
	off int
}

func (r *bodyReader) Read(p []byte) (int, error) {
	r.src.mu.Lock()
	defer r.src.mu.Unlock()
	if r.src.detached {
		return 0, errDetached
	}
	if r.off >= len(r.src.data) {
		return 0, io.EOF
	}
	n := copy(p, r.src.data[r.off:])
	r.off += n
	return n, nil
}

func (r *bodyReader) Close() error { return nil }
