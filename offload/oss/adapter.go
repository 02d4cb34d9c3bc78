package oss

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ferrylabs/ferry/offload/objstore"
)

// Options configure an Adapter. The zero value reads os.LookupEnv, uses
// no key prefix and logs to slog.Default().
type Options struct {
	// Lookup reads environment variables (nil: os.LookupEnv). Init calls
	// it afresh every time.
	Lookup objstore.LookupFunc
	// Prefix is the key prefix (the backend's fsdir); leading and trailing
	// '/' are stripped.
	Prefix string
	Logger *slog.Logger
	// Registerer receives the adapter's metrics (nil: not registered).
	Registerer prometheus.Registerer
	// Credentials, when set, replaces the environment credentials and is
	// asked at every signing, so rotated credentials apply without a
	// restart (see objstore.FileCredentials).
	Credentials objstore.CredentialsProvider
	// VerifyCRC64 checks x-oss-hash-crc64ecma on whole-object GETs and on
	// PUT replies; a mismatch is FILE_READ_FAIL / FILE_WRITE_FAIL.
	VerifyCRC64 bool
	// SplitThreshold > 0 splits GETs longer than it into parallel ranged
	// GETs of SplitPartSize bytes (default 8 MiB).
	SplitThreshold, SplitPartSize int64
	// MultipartThreshold > 0 uploads bodies longer than it with multipart
	// upload in parts of MultipartPartSize bytes (default 8 MiB, at least
	// 100 KiB for real OSS).
	MultipartThreshold, MultipartPartSize int64

	requestTimeout time.Duration    // tests only
	now            func() time.Time // tests only
	transport      http.RoundTripper
}

// Adapter is the OSS implementation of objstore.Store. The single-object
// methods (Put, PutV, Get, GetRange, GetV, Exists, GetSize, Delete,
// ListKeys) come from objstore.ObjectOps.
type Adapter struct {
	objectOps
	opts Options
	log  *slog.Logger
	keys objstore.Keys

	mu     sync.RWMutex
	run    *running
	closed bool
}

// running is the state of an initialised adapter; it never changes.
type running struct {
	cfg    Config
	scheme string
	host   string // Host header and URL host (bucket-prefixed in virtual-host style)
	base   string // path before the encoded key: "/<bucket>/" or "/"
	creds  objstore.CredentialsProvider
	signer *fastSigner
	exec   *objstore.Executor
}

var _ objstore.Store = (*Adapter)(nil)

// objectOps names the embedded objstore.ObjectOps so that the field stays
// unexported while its methods are promoted.
type objectOps = objstore.ObjectOps

// New returns an uninitialised adapter; call Init before use.
func New(opts Options) *Adapter {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	a := &Adapter{opts: opts, log: log, keys: objstore.NewKeys(opts.Prefix, MaxKeyLength)}
	a.objectOps = objectOps{Exec: a.execKey}
	return a
}

// Keys returns the adapter's key mapping.
func (a *Adapter) Keys() objstore.Keys { return a.keys }

// Config returns the running configuration; ok is false before Init.
func (a *Adapter) Config() (cfg Config, ok bool) {
	r := a.state()
	if r == nil {
		return Config{}, false
	}
	return r.cfg, true
}

// Init reads the environment afresh and validates it. The first
// successful Init starts the adapter; once running, Init only reports
// whether the current environment is valid and never reconfigures it.
// Warnings (invalid typed values) are logged in Mooncake's order.
func (a *Adapter) Init(ctx context.Context) error {
	_, err := a.InitWarnings(ctx)
	return err
}

// InitWarnings is Init that also returns the configuration warnings in
// the order they were raised.
func (a *Adapter) InitWarnings(_ context.Context) ([]string, error) {
	env := objstore.NewEnv(a.opts.Lookup, a.log)
	cfg, err := ConfigFromEnv(env)
	if err != nil {
		a.log.Error("OSS adapter configuration rejected", "err", err)
		return env.Warnings(), err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return env.Warnings(), objstore.Errorf(objstore.CodeInternalError, "INIT", "", "adapter is closed")
	}
	if a.run != nil {
		return env.Warnings(), nil
	}
	r, err := a.start(cfg)
	if err != nil {
		return env.Warnings(), err
	}
	a.run = r
	return env.Warnings(), nil
}

func (a *Adapter) start(cfg Config) (*running, error) {
	scheme, host, _, err := splitEndpoint(cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	r := &running{cfg: cfg, scheme: scheme, host: host, base: "/" + objstore.URIEncode(cfg.Bucket, false) + "/"}
	if !cfg.PathStyle {
		r.host = cfg.Bucket + "." + host
		r.base = "/"
	}
	r.signer = newFastSigner(cfg.Bucket, cfg.Region)
	r.creds = a.opts.Credentials
	if r.creds == nil {
		r.creds = objstore.StaticCredentials(cfg.Credentials)
	}
	ecfg := objstore.ExecutorConfig{
		Name:               "oss",
		Keys:               a.keys,
		Tuning:             cfg.Tuning,
		ConnectTimeout:     objstore.DefaultConnectTimeout,
		RequestTimeout:     a.opts.requestTimeout,
		Prepare:            r.prepare,
		DecodeListToken:    true,
		RequestIDHeader:    "x-oss-request-id",
		SplitThreshold:     a.opts.SplitThreshold,
		SplitPartSize:      a.opts.SplitPartSize,
		MultipartThreshold: a.opts.MultipartThreshold,
		MultipartPartSize:  a.opts.MultipartPartSize,
		Logger:             a.log,
		Registerer:         a.opts.Registerer,
		Now:                a.opts.now,
		Transport:          a.opts.transport,
	}
	if a.opts.MultipartThreshold > 0 {
		ecfg.Multipart = multipart{r}
	}
	if a.opts.VerifyCRC64 {
		ecfg.Verify = verifyCRC64
	}
	r.exec, err = objstore.NewExecutor(ecfg)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// prepare sets the URL, the x-oss-* headers and the V4 signature. The
// path goes in URL.Opaque so net/http sends it byte for byte.
func (r *running) prepare(req *http.Request, c *objstore.Call, now time.Time) error {
	creds := r.creds.Credentials()
	req.URL = &url.URL{Scheme: r.scheme, Host: r.host,
		Opaque: r.base + objstore.URIEncode(c.Key, true), RawQuery: c.Query}
	req.Host = r.host
	if fastPathOK(req.Header) {
		r.signFast(req, c, now, creds)
		return nil
	}
	h := req.Header
	h["X-Oss-Content-Sha256"] = []string{UnsignedPayload}
	h["X-Oss-Date"] = []string{now.UTC().Format(TimeFormat)}
	if creds.SessionToken != "" {
		h["X-Oss-Security-Token"] = []string{creds.SessionToken}
	}
	if _, ok := h["Range"]; ok {
		h["X-Oss-Range-Behavior"] = []string{"standard"}
	}
	if !r.cfg.Anonymous {
		in := SignInput{Method: c.Method, Bucket: r.cfg.Bucket, Key: c.Key, Query: c.Query,
			Header: h, Region: r.cfg.Region, Time: now, Credentials: creds}
		h["Authorization"] = []string{Authorization(&in)}
	}
	return nil
}

func (a *Adapter) state() *running {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.closed {
		return nil
	}
	return a.run
}

func notInit(op, key string) error {
	return objstore.Errorf(objstore.CodeInternalError, op, key, "adapter is not initialised (or is closed)")
}

// exec returns the executor or an INTERNAL_ERROR before Init.
func (a *Adapter) exec(op, key string) (*objstore.Executor, error) {
	r := a.state()
	if r == nil {
		return nil, notInit(op, key)
	}
	return r.exec, nil
}

// checkKey rejects a key whose physical form is too long.
func (a *Adapter) checkKey(op, key string) error {
	if _, err := a.keys.Physical(key); err != nil {
		err.(*objstore.Error).Op = op
		return err
	}
	return nil
}

// execKey is ObjectOps.Exec: PUT and GET reject a key whose physical
// form is too long before the initialisation check; HEAD, DELETE and LIST
// leave that to the executor.
func (a *Adapter) execKey(op, key string) (*objstore.Executor, error) {
	if op == "PUT" || op == "GET" {
		if err := a.checkKey(op, key); err != nil {
			return nil, err
		}
	}
	return a.exec(op, key)
}

// GetBatch reads a batch straight into the callers' buffers with at most
// MaxConnections requests in flight; see objstore.Store.
func (a *Adapter) GetBatch(ctx context.Context, reqs []objstore.GetRequest) []objstore.GetResult {
	if e := a.state(); e != nil {
		return e.exec.GetBatch(ctx, reqs)
	}
	res := make([]objstore.GetResult, len(reqs))
	for i, r := range reqs {
		if err := objstore.CheckGetArgs("GET", r.Key, int64(len(r.Buf)), r.Off); err != nil {
			res[i].Err = err
		} else if len(r.Buf) == 0 {
			continue
		} else if err := a.checkKey("GET", r.Key); err != nil {
			res[i].Err = err
		} else {
			res[i].Err = notInit("GET", r.Key)
		}
	}
	return res
}

// PutBatch uploads a batch with at most MaxConnections requests in
// flight; see objstore.Store.
func (a *Adapter) PutBatch(ctx context.Context, reqs []objstore.PutRequest) []error {
	if e := a.state(); e != nil {
		return e.exec.PutBatch(ctx, reqs)
	}
	res := make([]error, len(reqs))
	for i, r := range reqs {
		if err := a.checkKey("PUT", r.Key); err != nil {
			res[i] = err
		} else {
			res[i] = notInit("PUT", r.Key)
		}
	}
	return res
}

// CheckHealth writes, reads back and deletes a probe object.
func (a *Adapter) CheckHealth(ctx context.Context) error {
	if a.state() == nil {
		return notInit("HEALTH", "")
	}
	return objstore.CheckHealth(ctx, a, a.log)
}

// Close releases idle connections; it is idempotent.
func (a *Adapter) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil
	}
	a.closed = true
	if a.run != nil {
		return a.run.exec.Close()
	}
	return nil
}
