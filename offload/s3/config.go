package s3

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"strings"
)

// ErrInvalidConfig is wrapped by every configuration error; the message
// names the variable or rule that was broken and never contains a secret.
var ErrInvalidConfig = errors.New("s3: invalid configuration")

// Environment variable names.
const (
	EnvEndpoint        = "MOONCAKE_S3_ENDPOINT"
	EnvEndpointAlias   = "AWS_ENDPOINT_URL"
	EnvBucket          = "MOONCAKE_S3_BUCKET"
	EnvRegion          = "MOONCAKE_S3_REGION"
	EnvAccessKeyID     = "MOONCAKE_S3_ACCESS_KEY_ID"
	EnvSecretAccessKey = "MOONCAKE_S3_SECRET_ACCESS_KEY"
	EnvSessionToken    = "MOONCAKE_S3_SESSION_TOKEN"
	EnvPathStyle       = "MOONCAKE_S3_PATH_STYLE"
	EnvAnonymous       = "MOONCAKE_S3_ANONYMOUS"
	EnvMaxConnections  = "MOONCAKE_S3_MAX_CONNECTIONS"
	EnvReceiveBuffer   = "MOONCAKE_S3_RECEIVE_BUFFER_SIZE"
	EnvUploadBuffer    = "MOONCAKE_S3_UPLOAD_BUFFER_SIZE"
)

// Defaults and bounds shared with the OSS adapter.
const (
	DefaultRegion            = "us-east-1"
	DefaultMaxConnections    = 64
	DefaultReceiveBufferSize = 1 << 20
	DefaultUploadBufferSize  = 1 << 20
	minBufferSize            = 16384
	maxReceiveBufferSize     = 10 << 20
	maxUploadBufferSize      = 2 << 20

	// DefaultMultipartThreshold is the object size above which Put uses
	// multipart upload.
	DefaultMultipartThreshold = 64 << 20
	// DefaultPartSize is the multipart part size (S3's minimum is 5 MiB).
	DefaultPartSize = 16 << 20
	minPartSize     = 5 << 20
)

// Config is a validated S3 adapter configuration. String, GoString and
// LogValue redact the secret key and the session token.
type Config struct {
	// Endpoint is scheme://host[:port] with trailing '/' removed.
	Endpoint string
	// Scheme is "http" or "https" (lowercase).
	Scheme string
	// Host is the endpoint host, lowercased, without a default port.
	Host   string
	Bucket string
	Region string

	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string

	// PathStyle puts the bucket in the path instead of the host name. It
	// is forced on for IP-address and localhost endpoints.
	PathStyle bool
	// Anonymous sends no Authorization header.
	Anonymous bool

	// MaxConnections bounds the requests in flight per batch (>= 1).
	MaxConnections int
	// ReceiveBufferSize and UploadBufferSize size the HTTP read and
	// write buffers.
	ReceiveBufferSize int
	UploadBufferSize  int

	// MultipartThreshold: Put and PutBatch entries larger than this use
	// multipart upload. Zero means DefaultMultipartThreshold; negative
	// disables multipart upload.
	MultipartThreshold int64
	// PartSize is the multipart part size; zero means DefaultPartSize.
	PartSize int64
}

// String describes c without secrets.
func (c Config) String() string {
	return fmt.Sprintf("s3{endpoint=%s bucket=%s region=%s access_key_id=%s secret=%s token=%s path_style=%t anonymous=%t max_connections=%d}",
		c.Endpoint, c.Bucket, c.Region, c.AccessKeyID, redact(c.SecretAccessKey), redact(c.SessionToken),
		c.PathStyle, c.Anonymous, c.MaxConnections)
}

// GoString is String, so %#v does not print secrets either.
func (c Config) GoString() string { return c.String() }

// LogValue makes slog print the redacted form.
func (c Config) LogValue() slog.Value { return slog.StringValue(c.String()) }

func redact(s string) string {
	if s == "" {
		return `""`
	}
	return "<redacted>"
}

// ConfigFromEnv reads the process environment (see LoadConfig), writing
// typed-value warnings to os.Stderr and other warnings to slog.Default().
func ConfigFromEnv() (Config, error) {
	return LoadConfig(os.LookupEnv, os.Stderr, slog.Default())
}

// LoadConfig builds a Config from lookup, following Mooncake's S3 rules:
// strings raw (a set-but-empty primary wins over its alias), region from
// MOONCAKE_S3_REGION, AWS_REGION, AWS_DEFAULT_REGION or us-east-1 (with a
// warning), credentials as one set from MOONCAKE_S3_* when either the id
// or the secret variable is set and otherwise from AWS_*, the token
// trimmed, bools PATH_STYLE then ANONYMOUS, ints MAX_CONNECTIONS,
// RECEIVE_BUFFER_SIZE, UPLOAD_BUFFER_SIZE (an invalid value warns on warn
// and uses its default, then the clamp applies). Validation order:
// endpoint, bucket, region non-empty; scheme http(s); no path; host
// non-empty; path style forced for IP/localhost hosts; credentials unless
// anonymous. Errors wrap ErrInvalidConfig.
func LoadConfig(lookup func(string) (string, bool), warn io.Writer, log *slog.Logger) (Config, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	e := envReader{lookup: lookup, warn: warn}
	var c Config

	endpoint, ok := e.str(EnvEndpoint)
	if !ok {
		endpoint, _ = e.str(EnvEndpointAlias)
	}
	c.Bucket, _ = e.str(EnvBucket)
	region, ok := e.str(EnvRegion)
	if !ok {
		if region, ok = e.str("AWS_REGION"); !ok {
			if region, ok = e.str("AWS_DEFAULT_REGION"); !ok {
				region = DefaultRegion
				log.Warn("s3: no region configured, using the default", "region", DefaultRegion,
					"set", EnvRegion+", AWS_REGION or AWS_DEFAULT_REGION")
			}
		}
	}
	c.Region = region
	_, idSet := e.str(EnvAccessKeyID)
	_, secretSet := e.str(EnvSecretAccessKey)
	if idSet || secretSet {
		c.AccessKeyID, _ = e.str(EnvAccessKeyID)
		c.SecretAccessKey, _ = e.str(EnvSecretAccessKey)
		c.SessionToken, _ = e.str(EnvSessionToken)
	} else {
		c.AccessKeyID, _ = e.str("AWS_ACCESS_KEY_ID")
		c.SecretAccessKey, _ = e.str("AWS_SECRET_ACCESS_KEY")
		c.SessionToken, _ = e.str("AWS_SESSION_TOKEN")
	}
	c.SessionToken = strings.Trim(c.SessionToken, asciiSpace)

	c.PathStyle = e.boolVar(EnvPathStyle, false)
	c.Anonymous = e.boolVar(EnvAnonymous, false)
	c.MaxConnections = int(max(1, e.intVar(EnvMaxConnections, DefaultMaxConnections)))
	c.ReceiveBufferSize = int(clamp(e.intVar(EnvReceiveBuffer, DefaultReceiveBufferSize), minBufferSize, maxReceiveBufferSize))
	c.UploadBufferSize = int(clamp(e.intVar(EnvUploadBuffer, DefaultUploadBufferSize), minBufferSize, maxUploadBufferSize))
	c.Endpoint = strings.TrimRight(endpoint, "/")

	if err := c.finish(log); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Validate checks a Config built in code (not from the environment) with
// the same rules as LoadConfig and fills in Scheme, Host and defaults.
func (c *Config) Validate() error {
	c.Endpoint = strings.TrimRight(c.Endpoint, "/")
	if c.MaxConnections == 0 {
		c.MaxConnections = DefaultMaxConnections
	}
	if c.ReceiveBufferSize == 0 {
		c.ReceiveBufferSize = DefaultReceiveBufferSize
	}
	if c.UploadBufferSize == 0 {
		c.UploadBufferSize = DefaultUploadBufferSize
	}
	c.MaxConnections = max(1, min(c.MaxConnections, math.MaxInt32))
	c.ReceiveBufferSize = max(minBufferSize, min(c.ReceiveBufferSize, maxReceiveBufferSize))
	c.UploadBufferSize = max(minBufferSize, min(c.UploadBufferSize, maxUploadBufferSize))
	return c.finish(nil)
}

func (c *Config) finish(log *slog.Logger) error {
	switch {
	case c.Endpoint == "":
		return fmt.Errorf("%w: endpoint is empty (set %s or %s)", ErrInvalidConfig, EnvEndpoint, EnvEndpointAlias)
	case c.Bucket == "":
		return fmt.Errorf("%w: bucket is empty (set %s)", ErrInvalidConfig, EnvBucket)
	case c.Region == "":
		return fmt.Errorf("%w: region is empty (set %s)", ErrInvalidConfig, EnvRegion)
	}
	ep, err := parseEndpoint(c.Endpoint)
	if err != nil {
		return err
	}
	c.Scheme, c.Host = ep.scheme, ep.host
	if !c.PathStyle && ep.needsPathStyle() {
		c.PathStyle = true
		if log != nil {
			log.Warn("s3: endpoint host is an IP address or localhost; using path-style addressing", "host", c.Host)
		}
	}
	if !c.Anonymous && (c.AccessKeyID == "" || c.SecretAccessKey == "") {
		return fmt.Errorf("%w: credentials missing: set %s and %s (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), or %s=true",
			ErrInvalidConfig, EnvAccessKeyID, EnvSecretAccessKey, EnvAnonymous)
	}
	if c.MultipartThreshold == 0 {
		c.MultipartThreshold = DefaultMultipartThreshold
	}
	if c.PartSize == 0 {
		c.PartSize = DefaultPartSize
	}
	if c.PartSize < minPartSize {
		c.PartSize = minPartSize
	}
	return nil
}

type endpoint struct {
	scheme string
	host   string // lowercased, default port removed
}

// parseEndpoint checks scheme://host[:port] (no path) and normalises the
// host. The error names the rule that failed.
func parseEndpoint(raw string) (endpoint, error) {
	raw = strings.TrimRight(raw, "/")
	var ep endpoint
	lower := strings.ToLower(raw)
	switch {
	case strings.HasPrefix(lower, "http://"):
		ep.scheme = "http"
	case strings.HasPrefix(lower, "https://"):
		ep.scheme = "https"
	default:
		return ep, fmt.Errorf("%w: endpoint %q must start with http:// or https://", ErrInvalidConfig, raw)
	}
	rest := lower[len(ep.scheme)+3:]
	if strings.ContainsAny(rest, "/?#") {
		return ep, fmt.Errorf("%w: endpoint %q must not have a path, query or fragment", ErrInvalidConfig, raw)
	}
	if strings.Contains(rest, "@") {
		return ep, fmt.Errorf("%w: endpoint must not contain user information", ErrInvalidConfig)
	}
	if rest == "" {
		return ep, fmt.Errorf("%w: endpoint %q has no host", ErrInvalidConfig, raw)
	}
	if ep.scheme == "https" {
		rest = strings.TrimSuffix(rest, ":443")
	} else {
		rest = strings.TrimSuffix(rest, ":80")
	}
	if hostOnly(rest) == "" {
		return ep, fmt.Errorf("%w: endpoint %q has no host", ErrInvalidConfig, raw)
	}
	ep.host = rest
	return ep, nil
}

// hostOnly strips a port from host[:port] or [v6]:port.
func hostOnly(h string) string {
	if strings.HasPrefix(h, "[") {
		if i := strings.IndexByte(h, ']'); i >= 0 {
			return h[:i+1]
		}
		return h
	}
	if i := strings.LastIndexByte(h, ':'); i >= 0 {
		return h[:i]
	}
	return h
}

// needsPathStyle reports whether the host cannot carry a bucket label: an
// IPv6 literal, localhost, or digits and dots only.
func (ep endpoint) needsPathStyle() bool {
	h := hostOnly(ep.host)
	if strings.HasPrefix(h, "[") || h == "localhost" {
		return true
	}
	return strings.Trim(h, "0123456789.") == ""
}
