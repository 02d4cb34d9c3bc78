package objstore

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
)

// Default timeouts of the reference engines (neither is configurable there).
const (
	DefaultConnectTimeout = 5 * time.Second
	DefaultRequestTimeout = 120 * time.Second
	// MaxDocumentSize bounds a response read whole (LIST pages, multipart
	// replies); a longer document is FILE_READ_FAIL.
	MaxDocumentSize = 16 << 20
)

// Call is one HTTP exchange an adapter asks the Executor to run. The
// Executor builds the request skeleton (method, context, Range, body) and
// the adapter's PrepareFunc adds the URL, its headers and the signature.
type Call struct {
	Method     string   // GET, PUT, HEAD, DELETE or POST
	Key        string   // physical key; "" addresses the bucket
	LogicalKey string   // for error reports only
	Query      string   // canonical query string without '?', "" for none
	Ranged     bool     // send Range: bytes=Off-(Off+len(Buf)-1)
	Off        int64    // first byte of a ranged GET
	Buf        []byte   // GET: the body is written here and never past it
	ObjectSize int64    // GET: when > 0, the object's total size must be this (whole-object reads)
	Body       [][]byte // PUT/POST: the body, streamed from these slices
	ReadAll    bool     // collect the whole response body in Outcome.Body
}

// BodyLen returns the total length of c.Body.
func (c *Call) BodyLen() int64 {
	var n int64
	for _, b := range c.Body {
		n += int64(len(b))
	}
	return n
}

// Outcome is what happened to a Call.
type Outcome struct {
	Status   int         // HTTP status of the final response, 0 if none arrived
	Header   http.Header // headers of the final response (nil if none)
	N        int         // body bytes written into Call.Buf
	Overflow bool        // the body was longer than Call.Buf and was aborted
	Body     []byte      // the whole body when Call.ReadAll
	Err      error       // transport error; nil when a full response arrived
	Wrote    bool        // the request was fully written (tracked only with retries)
	Attempts int         // attempts made
}

// PrepareFunc completes req for c: it sets req.URL (with the path in
// URL.Opaque so it is sent byte for byte), req.Host, the adapter's headers
// and the signature. now is the signing time; the Executor calls it when
// the request is admitted, once per attempt. req.Header already holds the
// Range header when c.Ranged. It must not read or replace req.Body.
type PrepareFunc func(req *http.Request, c *Call, now time.Time) error

// RetryPolicy decides whether failed attempts are sent again. The zero
// value never retries (the OSS engine). A batch runs once, then reruns
// only the entries Transient accepts, up to MaxAttempts passes, sleeping
// Backoff(next attempt) between passes.
type RetryPolicy struct {
	MaxAttempts int
	Transient   func(c *Call, o *Outcome) bool
	Backoff     func(attempt int) time.Duration
}

// DefaultBackoff is the REST engine's backoff before attempt k (k >= 2):
// base = 100ms << (k-2) plus a random 0..base/2.
func DefaultBackoff(attempt int) time.Duration {
	if attempt < 2 {
		return 0
	}
	base := 100 * time.Millisecond << (attempt - 2)
	return base + time.Duration(rand.Int64N(int64(base/2)+1))
}

// VerifyFunc checks the integrity of a successful exchange (for example a
// CRC header against the bytes in Call.Buf or Call.Body). A non-nil result
// replaces the success; it should be an *Error with FILE_READ_FAIL (GET)
// or FILE_WRITE_FAIL (PUT).
type VerifyFunc func(c *Call, o *Outcome) error

// ExecutorConfig configures an Executor.
type ExecutorConfig struct {
	Name string // adapter name for logs and metric labels ("oss", "s3")
	Keys Keys   // logical-to-physical key mapping
	// Tuning: MaxConnections bounds each batch; the buffer sizes size the
	// transport's per-connection buffers (capped at 64 KiB so large body
	// reads and writes bypass them).
	Tuning             Tuning
	ConnectTimeout     time.Duration
	RequestTimeout     time.Duration // per attempt, counted from admission
	Prepare            PrepareFunc   // required
	Retry              RetryPolicy
	Verify             VerifyFunc // optional integrity check
	QueryEmptyEquals   bool       // canonical query writes "name=" for empty values (S3)
	DecodeListToken    bool       // URI-decode NextContinuationToken (OSS)
	RequestIDHeader    string     // e.g. "x-oss-request-id"
	SplitThreshold     int64      // GETs longer than this are split into parallel ranges (0: never)
	SplitPartSize      int64      // part size when splitting (default 8 MiB)
	Multipart          Multipart  // optional multipart protocol
	MultipartThreshold int64      // PUTs longer than this use Multipart (0: never)
	MultipartPartSize  int64      // part size for multipart uploads (default 8 MiB)
	Logger             *slog.Logger
	Registerer         prometheus.Registerer // nil: metrics are kept but not registered
	Now                func() time.Time      // signing clock (default time.Now)
	Transport          http.RoundTripper     // default: a tuned *http.Transport per Executor
}

// Executor runs an adapter's HTTP exchanges: single calls and admission-
// limited batches over one shared keep-alive transport, with bodies read
// straight into caller memory and the reference result mapping. It is
// safe for concurrent use; concurrent batches are admitted independently.
type Executor struct {
	cfg     ExecutorConfig
	rt      http.RoundTripper
	tr      *http.Transport // nil when the caller supplied Transport
	log     *slog.Logger
	now     func() time.Time
	m       *metrics
	closed  atomic.Bool
	workers sync.Pool
}

// worker holds per-goroutine scratch so the hot path does not allocate.
type worker struct {
	probe   [1]byte
	scratch [1024]byte
}

// NewExecutor validates cfg and returns an Executor. A missing Prepare is
// an ErrInvalidParams error.
func NewExecutor(cfg ExecutorConfig) (*Executor, error) {
	if cfg.Prepare == nil {
		return nil, Errorf(CodeInvalidParams, "INIT", "", "executor needs a Prepare function")
	}
	if cfg.Tuning.MaxConnections < 1 {
		cfg.Tuning.MaxConnections = 1
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.SplitPartSize <= 0 {
		cfg.SplitPartSize = 8 << 20
	}
	if cfg.MultipartPartSize <= 0 {
		cfg.MultipartPartSize = 8 << 20
	}
	e := &Executor{cfg: cfg, log: cfg.Logger, now: cfg.Now, rt: cfg.Transport}
	if e.log == nil {
		e.log = slog.Default()
	}
	if e.now == nil {
		e.now = time.Now
	}
	if e.rt == nil {
		e.tr = newTransport(cfg)
		e.rt = e.tr
	}
	e.m = newMetrics(cfg.Name, cfg.Registerer)
	e.workers.New = func() any { return new(worker) }
	return e, nil
}

func newTransport(cfg ExecutorConfig) *http.Transport {
	d := &net.Dialer{Timeout: cfg.ConnectTimeout, KeepAlive: 30 * time.Second}
	rb, wb := cfg.Tuning.ReceiveBufferSize, cfg.Tuning.UploadBufferSize
	if rb <= 0 {
		rb = DefaultReceiveBufferSize
	}
	// net/http's bufio.Reader hands a Read of at least its own size
	// straight to the socket, so a small read buffer keeps body bytes off
	// the intermediate copy: only what arrives with the headers and the
	// last partial buffer of a body are copied through it.
	// The same holds for request bodies and bufio.Writer.
	rb, wb = min(rb, maxTransportBuffer), min(wb, maxTransportBuffer)
	if wb <= 0 {
		wb = DefaultUploadBufferSize
	}
	return &http.Transport{
		Proxy:       http.ProxyFromEnvironment,
		DialContext: dialer(d),
		// Room for every connection of a full batch plus those still
		// being handed back by the previous one, so steady batches reuse
		// connections instead of dialling and dropping a few each time.
		MaxIdleConnsPerHost: min(2*cfg.Tuning.MaxConnections, maxIdlePerHost),
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ReadBufferSize:      rb,
		WriteBufferSize:     wb,
		// HTTP/1.1 only: one request per connection, as the admission
		// limit assumes.
		TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{},
	}
}

// Config returns the configuration the Executor runs with.
func (e *Executor) Config() ExecutorConfig { return e.cfg }

// Keys returns the key mapping.
func (e *Executor) Keys() Keys { return e.cfg.Keys }

// Close drops idle connections. It is idempotent; calls made after Close
// fail with INTERNAL_ERROR.
func (e *Executor) Close() error {
	if e.closed.Swap(true) {
		return nil
	}
	if e.tr != nil {
		e.tr.CloseIdleConnections()
	}
	return nil
}

// Do runs one call with the retry policy and returns its outcome.
func (e *Executor) Do(ctx context.Context, c *Call) Outcome {
	var o [1]Outcome
	e.Run(ctx, unsafeOne(c), o[:])
	return o[0]
}

func unsafeOne(c *Call) []Call { return unsafe.Slice(c, 1) }

// Run executes calls with at most Tuning.MaxConnections in flight,
// admitting them in input order, and stores each outcome at the same
// index of out (len(out) must be >= len(calls)). Each attempt is signed
// and gets its own RequestTimeout when it is admitted, so time spent
// waiting for a slot never counts. Calls not admitted before ctx ends get
// ctx's error as transport error.
func (e *Executor) Run(ctx context.Context, calls []Call, out []Outcome) {
	for i := range calls {
		out[i] = Outcome{}
	}
	var pending []int // nil: all calls
	for attempt := 1; ; attempt++ {
		e.pass(ctx, calls, out, pending)
		if attempt >= e.cfg.Retry.MaxAttempts || e.cfg.Retry.Transient == nil {
			return
		}
		var again []int
		each(len(calls), pending, func(i int) {
			if out[i].Attempts == attempt && e.cfg.Retry.Transient(&calls[i], &out[i]) {
				again = append(again, i)
			}
		})
		if len(again) == 0 {
			return
		}
		pending = again
		if b := e.cfg.Retry.Backoff; b != nil {
			t := time.NewTimer(b(attempt + 1))
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
	}
}

func each(n int, idx []int, f func(int)) {
	if idx == nil {
		for i := 0; i < n; i++ {
			f(i)
		}
		return
	}
	for _, i := range idx {
		f(i)
	}
}

// pass runs the calls named by idx (nil: all) once.
func (e *Executor) pass(ctx context.Context, calls []Call, out []Outcome, idx []int) {
	n := len(calls)
	if idx != nil {
		n = len(idx)
	}
	if n == 0 {
		return
	}
	var next atomic.Int64
	loop := func() {
		w := e.workers.Get().(*worker)
		defer e.workers.Put(w)
		for {
			k := int(next.Add(1) - 1)
			if k >= n {
				return
			}
			i := k
			if idx != nil {
				i = idx[k]
			}
			if err := ctx.Err(); err != nil {
				out[i] = Outcome{Err: err, Attempts: out[i].Attempts + 1}
				continue
			}
			e.attempt(ctx, &calls[i], &out[i], w)
		}
	}
	workers := min(e.cfg.Tuning.MaxConnections, n)
	var wg sync.WaitGroup
	for w := 1; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			loop()
		}()
	}
	loop()
	wg.Wait()
}

// attempt sends c once and fills o.
func (e *Executor) attempt(ctx context.Context, c *Call, o *Outcome, w *worker) {
	attempts := o.Attempts + 1
	*o = Outcome{Attempts: attempts}
	if e.closed.Load() {
		o.Err = errClosed
		return
	}
	rctx, cancel := context.WithTimeout(ctx, e.cfg.RequestTimeout)
	defer cancel()
	req := (&http.Request{
		Method:     c.Method,
		URL:        &url.URL{},
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     make(http.Header, 8),
	}).WithContext(rctx)
	if c.Ranged {
		req.Header["Range"] = []string{rangeHeader(w.scratch[:0], c.Off, len(c.Buf))}
	}
	if c.Method == http.MethodPut || c.Method == http.MethodPost {
		size := c.BodyLen()
		if size == 0 {
			req.Body = http.NoBody
		} else {
			req.Body = NewVecReader(c.Body)
			body := c.Body
			req.GetBody = func() (io.ReadCloser, error) { return NewVecReader(body), nil }
			// A nil value marks the request replayable without sending
			// the header, so a PUT that dies on a reused keep-alive
			// connection before any reply is resent from the start.
			req.Header["Idempotency-Key"] = nil
		}
		req.ContentLength = size
	}
	if err := e.cfg.Prepare(req, c, e.now()); err != nil {
		o.Err = err
		return
	}
	if e.cfg.Retry.MaxAttempts > 1 {
		var wrote *atomic.Bool
		req, wrote = withWroteTrace(req)
		defer func() { o.Wrote = wrote.Load() }()
	}
	e.m.inflight.Inc()
	resp, err := e.rt.RoundTrip(req)
	e.m.inflight.Dec()
	if err != nil {
		o.Err = err
		e.m.count(c.Method, o)
		return
	}
	o.Status = resp.StatusCode
	o.Header = resp.Header
	switch {
	case c.Method == http.MethodHead:
	case c.ReadAll:
		o.Body, o.Err = readDoc(resp.Body, resp.ContentLength)
	case c.Method == http.MethodGet:
		o.N, o.Overflow, o.Err = readInto(resp.Body, resp.ContentLength, c.Buf, w.probe[:])
		e.m.bytesIn.Add(float64(o.N))
	default:
		n, _ := io.ReadFull(resp.Body, w.scratch[:])
		if o.Status/100 != 2 && n > 0 {
			o.Body = append([]byte(nil), w.scratch[:n]...)
		}
		if n == len(w.scratch) {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		}
		if o.Status/100 == 2 {
			e.m.bytesOut.Add(float64(req.ContentLength))
		}
	}
	resp.Body.Close()
	e.m.count(c.Method, o)
}

// maxTransportBuffer caps the transport's per-connection read and write
// buffers.
const maxTransportBuffer = 64 << 10

// maxIdlePerHost caps the idle pool for huge MaxConnections values.
const maxIdlePerHost = 1 << 16

var errClosed = errors.New("objstore: executor is closed")

// rangeHeader formats "bytes=off-(off+n-1)" using buf as scratch.
func rangeHeader(buf []byte, off int64, n int) string {
	buf = append(buf, "bytes="...)
	buf = strconv.AppendInt(buf, off, 10)
	buf = append(buf, '-')
	buf = strconv.AppendInt(buf, off+int64(n)-1, 10)
	return string(buf)
}

// readInto reads a body into buf. A body longer than buf is aborted (and
// never written past buf); known-too-long bodies are not read at all.
func readInto(body io.Reader, length int64, buf, probe []byte) (n int, overflow bool, err error) {
	if length > int64(len(buf)) {
		return 0, true, nil
	}
	for n < len(buf) {
		m, err := body.Read(buf[n:])
		n += m
		if err == io.EOF {
			return n, false, nil
		}
		if err != nil {
			return n, false, err
		}
	}
	for {
		m, err := body.Read(probe)
		if m > 0 {
			return n, true, nil
		}
		if err == io.EOF {
			return n, false, nil
		}
		if err != nil {
			return n, false, err
		}
	}
}

// readDoc reads a whole response document up to MaxDocumentSize.
func readDoc(body io.Reader, length int64) ([]byte, error) {
	if length > MaxDocumentSize {
		return nil, errDocTooLarge
	}
	b, err := io.ReadAll(io.LimitReader(body, MaxDocumentSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxDocumentSize {
		return nil, errDocTooLarge
	}
	return b, nil
}

var errDocTooLarge = errors.New("objstore: response document exceeds the size limit")
