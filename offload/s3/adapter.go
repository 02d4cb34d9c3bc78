package s3

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ferrylabs/ferry/offload/objstore"
)

// Options configure an Adapter beyond what the environment holds.
type Options struct {
	// Prefix is the key prefix (normalised: leading and trailing '/'
	// removed); objects are stored as Prefix + "/" + URIEncode(key).
	Prefix string
	// Lookup reads the environment; nil means os.LookupEnv.
	Lookup objstore.LookupFunc
	// Logger receives warnings and debug lines; nil means slog.Default().
	Logger *slog.Logger
	// Registerer gets the adapter's metrics; nil keeps them unregistered.
	Registerer prometheus.Registerer
	// Credentials, when set, replaces the configured keys (for example an
	// objstore.FileCredentials that reloads on SIGHUP). Each request is
	// signed with the value it returns at admission.
	Credentials objstore.CredentialsProvider
	// Transport replaces the Executor's tuned transport (tests).
	Transport http.RoundTripper
	// Now is the signing clock; nil means time.Now.
	Now func() time.Time
	// NoPutChecksum stops sending x-amz-checksum-crc32c with single PUTs
	// (the server then cannot reject a body corrupted in flight).
	NoPutChecksum bool
	// VerifyGetChecksum asks for checksums (x-amz-checksum-mode: ENABLED)
	// and checks the CRC32C or CRC32 of every GET that covers a whole
	// object; a mismatch is FILE_READ_FAIL. It costs one CRC pass over the
	// data (about 0.1-0.2 CPU s/GB here), so it is off by default.
	VerifyGetChecksum bool
}

// Adapter is the S3 implementation of objstore.Store. Create it with New,
// then call Init. All methods are safe for concurrent use.
//
// The single-object methods come from objstore.ObjectOps. ListKeys pages
// with GET /?encoding-type=url&list-type=2&max-keys=1000&prefix=<physical
// prefix>[&continuation-token=<token>]; the token goes back exactly as S3
// sent it (S3 does not encode it). A non-2xx status, a malformed page
// (strict parser), a key outside the prefix or a truncated page without a
// token is FILE_READ_FAIL; a transport failure DFS_SERVICE_UNAVAILABLE.
type Adapter struct {
	objectOps
	opts Options
	log  *slog.Logger

	mu   sync.Mutex // serialises Init and Close
	run  atomic.Pointer[running]
	done atomic.Bool
}

// running is the immutable state of an initialised adapter.
type running struct {
	cfg        Config
	exec       *objstore.Executor
	sign       *signer
	host       string // Host header and URL host
	bucketPath string // "/" + encoded bucket for path style, "" otherwise
	putCRC     bool
	verifyGet  bool
	tr         *http.Transport // owned transport, nil when Options.Transport is set
}

var _ objstore.Store = (*Adapter)(nil)

// objectOps names the embedded objstore.ObjectOps so that the field stays
// unexported while its methods are promoted.
type objectOps = objstore.ObjectOps

// New returns an uninitialised adapter; Init reads the configuration.
func New(opts Options) *Adapter {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	a := &Adapter{opts: opts, log: log}
	a.objectOps = objectOps{Exec: a.exec}
	return a
}

// NewFromConfig returns an adapter already started with cfg (validated with
// Config.Validate) instead of the environment.
func NewFromConfig(cfg Config, opts Options) (*Adapter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	a := New(opts)
	if err := a.start(cfg); err != nil {
		return nil, err
	}
	return a, nil
}

// Config returns the running configuration (zero before Init). Its
// String form redacts secrets.
func (a *Adapter) Config() Config {
	if r := a.run.Load(); r != nil {
		return r.cfg
	}
	return Config{}
}

// Init reads the configuration from the environment afresh and, on the
// first success, starts the adapter. A later Init re-validates the current
// environment but never reconfigures a running adapter. An invalid
// configuration is an INVALID_PARAMS error naming the rule.
func (a *Adapter) Init(ctx context.Context) error {
	env := objstore.NewEnv(a.opts.Lookup, a.log)
	cfg, err := LoadConfig(env)
	if err != nil {
		a.log.Error("s3: invalid configuration", "err", err)
		return err
	}
	return a.start(cfg)
}

func (a *Adapter) start(cfg Config) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.done.Load() {
		return objstore.Errorf(objstore.CodeInternalError, "INIT", "", "adapter is closed")
	}
	if a.run.Load() != nil {
		return nil
	}
	creds := a.opts.Credentials
	if creds == nil {
		creds = objstore.StaticCredentials{AccessKeyID: cfg.AccessKeyID, SecretAccessKey: cfg.SecretAccessKey, SessionToken: cfg.SessionToken}
	}
	r := &running{cfg: cfg, sign: newSigner(creds, cfg.Region, cfg.Anonymous),
		putCRC: !a.opts.NoPutChecksum, verifyGet: a.opts.VerifyGetChecksum}
	if cfg.PathStyle {
		r.host = cfg.Host
		r.bucketPath = "/" + objstore.URIEncode(cfg.Bucket, false)
	} else {
		r.host = cfg.Bucket + "." + cfg.Host
	}
	ecfg := objstore.ExecutorConfig{
		Name:             "s3",
		Keys:             objstore.NewKeys(a.opts.Prefix, 1024),
		Tuning:           objstore.Tuning{MaxConnections: cfg.MaxConnections, ReceiveBufferSize: cfg.ReceiveBufferSize, UploadBufferSize: cfg.UploadBufferSize},
		ConnectTimeout:   10 * time.Second,
		RequestTimeout:   objstore.DefaultRequestTimeout,
		Prepare:          r.prepare,
		Retry:            retryPolicy(),
		QueryEmptyEquals: true,
		RequestIDHeader:  "x-amz-request-id",
		Logger:           a.log,
		Registerer:       a.opts.Registerer,
		Now:              a.opts.Now,
		Transport:        a.opts.Transport,
	}
	if ecfg.Transport == nil {
		r.tr = newTransport(cfg)
		ecfg.Transport = r.tr
	}
	if r.verifyGet {
		ecfg.Verify = verifyChecksum
	}
	if cfg.MultipartThreshold > 0 {
		ecfg.Multipart = multipart{}
		ecfg.MultipartThreshold = cfg.MultipartThreshold
		ecfg.MultipartPartSize = cfg.PartSize
	}
	exec, err := objstore.NewExecutor(ecfg)
	if err != nil {
		return err
	}
	r.exec = exec
	a.run.Store(r)
	a.log.Debug("s3 adapter started", "config", cfg)
	return nil
}

// exec returns the executor or an INTERNAL_ERROR when not initialised.
func (a *Adapter) exec(op, key string) (*objstore.Executor, error) {
	if a.done.Load() {
		return nil, objstore.Errorf(objstore.CodeInternalError, op, key, "adapter is closed")
	}
	r := a.run.Load()
	if r == nil {
		return nil, objstore.Errorf(objstore.CodeInternalError, op, key, "adapter used before Init")
	}
	return r.exec, nil
}

// Close releases idle connections; it is idempotent.
func (a *Adapter) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.done.Swap(true) {
		return nil
	}
	if r := a.run.Load(); r != nil {
		err := r.exec.Close()
		if r.tr != nil {
			r.tr.CloseIdleConnections()
		}
		return err
	}
	return nil
}

// maxBufio caps the per-connection bufio buffers (the configured receive
// and upload sizes are at least 16 KiB, so this is the size in practice).
// Bodies are read straight into caller memory and written straight from
// it, so a larger buffer adds nothing but a bigger copy (the first fill
// after the response headers lands in it) and a larger allocation for
// every new connection.
const maxBufio = 16 << 10

// newTransport is the HTTP/1.1 transport of one adapter: no proxy for
// loopback (ProxyFromEnvironment), no transparent gzip (ranges must stay
// raw), a 10 s connect timeout, and an idle pool large enough that
// connections which return to the pool a moment after their request ends
// are kept instead of being closed and re-dialled.
func newTransport(cfg Config) *http.Transport {
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         dialLowat(d),
		MaxIdleConnsPerHost: 2 * cfg.MaxConnections,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ReadBufferSize:      min(cfg.ReceiveBufferSize, maxBufio),
		WriteBufferSize:     min(cfg.UploadBufferSize, maxBufio),
		TLSNextProto:        map[string]func(string, *tls.Conn) http.RoundTripper{},
		ForceAttemptHTTP2:   false,
	}
}

// prepare completes an Executor request: URL with the path sent byte for
// byte (URL.Opaque), Host, checksum headers and the SigV4 signature.
func (r *running) prepare(req *http.Request, c *objstore.Call, now time.Time) error {
	var pb [256]byte
	p := append(pb[:0], r.bucketPath...)
	p = append(p, '/')
	p = objstore.AppendURIEncode(p, c.Key, true)
	path := string(p)
	req.URL.Scheme = r.cfg.Scheme
	req.URL.Host = r.host
	req.URL.Opaque = path
	req.URL.RawQuery = c.Query
	req.Host = r.host
	var extra [1]header
	ex := extra[:0]
	switch {
	case r.verifyGet && c.Method == http.MethodGet && c.Key != "":
		ex = append(ex, header{"x-amz-checksum-mode", "ENABLED"})
		req.Header[hdrChecksumMode] = checksumModeEnabled
	case r.putCRC && c.Method == http.MethodPut && c.Query == "" && len(c.Body) > 0:
		v := crc32cBase64(c.Body)
		ex = append(ex, header{"x-amz-checksum-crc32c", v})
		req.Header[hdrChecksumCRC32C] = []string{v}
	}
	r.sign.apply(req.Header, now, c.Method, r.host, path, c.Query, ex...)
	return nil
}
