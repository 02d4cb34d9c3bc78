package s3

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/ferrylabs/ferry/offload/objstore"
)

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
	envPrefix          = "MOONCAKE_S3_"
)

const (
	// DefaultRegion is used, with a warning, when no region is set.
	DefaultRegion = "us-east-1"
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
	Host string
	// Bucket is the bucket name, sent path-style or as a host label.
	Bucket string
	// Region is the SigV4 signing region.
	Region string

	// AccessKeyID, SecretAccessKey and SessionToken sign requests unless
	// Anonymous; the token (trimmed) is sent as x-amz-security-token.

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
	// ReceiveBufferSize and UploadBufferSize are read and clamped as in
	// Mooncake ([16 KiB, 10 MiB] and [16 KiB, 2 MiB]). Bodies move
	// straight between the socket and caller memory, so the per-connection
	// bufio buffers use at most 16 KiB of them (a bigger buffer would only
	// add a copy).
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

// LoadConfig builds a Config from env (objstore.NewEnv(nil, nil) reads
// the process environment), following Mooncake's S3 rules: strings raw (a
// set-but-empty primary wins over its alias); region from
// MOONCAKE_S3_REGION, AWS_REGION, AWS_DEFAULT_REGION or us-east-1 with a
// warning; credentials as one set, from MOONCAKE_S3_* when either the id
// or the secret variable is set and otherwise from AWS_*, the token
// trimmed; bools PATH_STYLE then ANONYMOUS; ints MAX_CONNECTIONS,
// RECEIVE_BUFFER_SIZE, UPLOAD_BUFFER_SIZE (invalid: warning and default,
// then the clamp). Validation order: endpoint, bucket, region non-empty;
// scheme http(s); no path; host non-empty; path style forced for IP and
// localhost hosts (with a warning); credentials unless anonymous. An error
// is an INVALID_PARAMS *objstore.Error naming the rule, never a secret.
func LoadConfig(env *objstore.Env) (Config, error) {
	var c Config
	endpoint := env.String(EnvEndpoint, EnvEndpointAlias)
	c.Bucket = env.String(EnvBucket)
	region, ok := env.StringOK(EnvRegion, "AWS_REGION", "AWS_DEFAULT_REGION")
	if !ok {
		region = DefaultRegion
		env.Warn("s3: no region set (" + EnvRegion + ", AWS_REGION or AWS_DEFAULT_REGION); using " + DefaultRegion)
	}
	c.Region = region
	_, idSet := env.Lookup(EnvAccessKeyID)
	_, secretSet := env.Lookup(EnvSecretAccessKey)
	src := "AWS_"
	if idSet || secretSet {
		src = envPrefix
	}
	c.AccessKeyID = env.String(src + "ACCESS_KEY_ID")
	c.SecretAccessKey = env.String(src + "SECRET_ACCESS_KEY")
	c.SessionToken = objstore.TrimASCIISpace(env.String(src + "SESSION_TOKEN"))

	c.PathStyle = env.Bool(EnvPathStyle, false)
	c.Anonymous = env.Bool(EnvAnonymous, false)
	t := objstore.ReadTuning(env, envPrefix)
	c.MaxConnections, c.ReceiveBufferSize, c.UploadBufferSize = t.MaxConnections, t.ReceiveBufferSize, t.UploadBufferSize
	c.Endpoint = objstore.TrimTrailingSlashes(endpoint)
	if err := c.finish(env.Warn); err != nil {
		return Config{}, err
	}
	return c, nil
}

func invalidConfig(format string, args ...any) error {
	return &objstore.Error{Code: objstore.CodeInvalidParams, Op: "INIT", Msg: fmt.Sprintf(format, args...)}
}

// Validate checks a Config built in code (not from the environment) with
// the same rules as LoadConfig and fills in Scheme, Host and defaults.
func (c *Config) Validate() error {
	c.Endpoint = strings.TrimRight(c.Endpoint, "/")
	if c.MaxConnections == 0 {
		c.MaxConnections = objstore.DefaultMaxConnections
	}
	if c.ReceiveBufferSize == 0 {
		c.ReceiveBufferSize = objstore.DefaultReceiveBufferSize
	}
	if c.UploadBufferSize == 0 {
		c.UploadBufferSize = objstore.DefaultUploadBufferSize
	}
	c.MaxConnections = max(1, c.MaxConnections)
	c.ReceiveBufferSize = max(objstore.MinReceiveBufferSize, min(c.ReceiveBufferSize, objstore.MaxReceiveBufferSize))
	c.UploadBufferSize = max(objstore.MinUploadBufferSize, min(c.UploadBufferSize, objstore.MaxUploadBufferSize))
	return c.finish(nil)
}

func (c *Config) finish(warn func(string)) error {
	switch {
	case c.Endpoint == "":
		return invalidConfig("endpoint is empty (set %s or %s)", EnvEndpoint, EnvEndpointAlias)
	case c.Bucket == "":
		return invalidConfig("bucket is empty (set %s)", EnvBucket)
	case c.Region == "":
		return invalidConfig("region is empty (set %s)", EnvRegion)
	}
	ep, err := parseEndpoint(c.Endpoint)
	if err != nil {
		return err
	}
	c.Scheme, c.Host = ep.scheme, ep.host
	if !c.PathStyle && ep.needsPathStyle() {
		c.PathStyle = true
		if warn != nil {
			warn("s3: endpoint host " + c.Host + " is an IP address or localhost; using path-style addressing")
		}
	}
	if !c.Anonymous && (c.AccessKeyID == "" || c.SecretAccessKey == "") {
		return invalidConfig("credentials missing: set %s and %s (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), or %s=true",
			EnvAccessKeyID, EnvSecretAccessKey, EnvAnonymous)
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
	if strings.Contains(raw, "@") {
		return ep, invalidConfig("endpoint must not contain user information")
	}
	lower := strings.ToLower(raw)
	switch {
	case strings.HasPrefix(lower, "http://"):
		ep.scheme = "http"
	case strings.HasPrefix(lower, "https://"):
		ep.scheme = "https"
	default:
		return ep, invalidConfig("endpoint %q must start with http:// or https://", raw)
	}
	rest := lower[len(ep.scheme)+3:]
	if strings.ContainsAny(rest, "/?#") {
		return ep, invalidConfig("endpoint %q must not have a path, query or fragment", raw)
	}
	if rest == "" {
		return ep, invalidConfig("endpoint %q has no host", raw)
	}
	if ep.scheme == "https" {
		rest = strings.TrimSuffix(rest, ":443")
	} else {
		rest = strings.TrimSuffix(rest, ":80")
	}
	if hostOnly(rest) == "" {
		return ep, invalidConfig("endpoint %q has no host", raw)
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
