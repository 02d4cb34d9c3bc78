package oss

import (
	"fmt"
	"strings"

	"github.com/ferrylabs/ferry/offload/objstore"
)

// Environment variable names (primary, then compatibility alias).
const (
	EnvEndpoint          = "MOONCAKE_OSS_ENDPOINT"
	EnvEndpointAlias     = "OSS_ENDPOINT"
	EnvBucket            = "MOONCAKE_OSS_BUCKET"
	EnvBucketAlias       = "OSS_BUCKET"
	EnvRegion            = "MOONCAKE_OSS_REGION"
	EnvRegionAlias       = "OSS_REGION"
	EnvAccessKeyID       = "MOONCAKE_OSS_ACCESS_KEY_ID"
	EnvAccessKeyIDAlias  = "OSS_ACCESS_KEY_ID"
	EnvAccessSecret      = "MOONCAKE_OSS_ACCESS_KEY_SECRET"
	EnvAccessSecretAlias = "OSS_ACCESS_KEY_SECRET"
	EnvSecurityToken     = "MOONCAKE_OSS_SECURITY_TOKEN"
	EnvSessionTokenAlias = "OSS_SESSION_TOKEN"
	EnvPathStyle         = "MOONCAKE_OSS_PATH_STYLE"
	EnvAnonymous         = "MOONCAKE_OSS_ANONYMOUS"
	// EnvTuningPrefix prefixes MAX_CONNECTIONS, RECEIVE_BUFFER_SIZE and
	// UPLOAD_BUFFER_SIZE.
	EnvTuningPrefix = "MOONCAKE_OSS_"
)

// MaxKeyLength is the longest physical key OSS accepts, in bytes.
const MaxKeyLength = 1023

// Config is the OSS adapter configuration. Its String method redacts the
// secret and the token.
type Config struct {
	Endpoint    string // scheme://host[:port], trailing '/' removed
	Bucket      string
	Region      string // bare region such as cn-hangzhou
	Credentials objstore.Credentials
	PathStyle   bool
	Anonymous   bool
	Tuning      objstore.Tuning
}

// String shows every field but the secrets.
func (c Config) String() string {
	return fmt.Sprintf("{Endpoint:%s Bucket:%s Region:%s Credentials:%v PathStyle:%t Anonymous:%t Tuning:%+v}",
		c.Endpoint, c.Bucket, c.Region, c.Credentials, c.PathStyle, c.Anonymous, c.Tuning)
}

// GoString redacts like String.
func (c Config) GoString() string { return "oss.Config" + c.String() }

// ConfigFromEnv reads the configuration with Mooncake's order: the
// strings (a present primary wins even when empty; the token is trimmed),
// the bools PATH_STYLE then ANONYMOUS, the ints MAX_CONNECTIONS,
// RECEIVE_BUFFER_SIZE, UPLOAD_BUFFER_SIZE (default on invalid, then
// clamp), trailing '/' stripped from the endpoint; then endpoint, bucket
// and region must be non-empty, and then, unless anonymous, the id and the
// secret. Warnings go to env. Every failure is an INVALID_PARAMS *Error.
func ConfigFromEnv(env *objstore.Env) (Config, error) {
	var c Config
	c.Endpoint = env.String(EnvEndpoint, EnvEndpointAlias)
	c.Bucket = env.String(EnvBucket, EnvBucketAlias)
	c.Region = env.String(EnvRegion, EnvRegionAlias)
	c.Credentials.AccessKeyID = env.String(EnvAccessKeyID, EnvAccessKeyIDAlias)
	c.Credentials.SecretAccessKey = env.String(EnvAccessSecret, EnvAccessSecretAlias)
	c.Credentials.SessionToken = objstore.TrimASCIISpace(env.String(EnvSecurityToken, EnvSessionTokenAlias))
	c.PathStyle = env.Bool(EnvPathStyle, false)
	c.Anonymous = env.Bool(EnvAnonymous, false)
	c.Tuning = objstore.ReadTuning(env, EnvTuningPrefix)
	c.Endpoint = objstore.TrimTrailingSlashes(c.Endpoint)
	return c, c.Validate()
}

// Validate checks c in Mooncake's order: endpoint, bucket and region
// first, then the credentials unless anonymous. Ferry also rejects an
// endpoint with a path (it would be sent but not signed) or without a
// host.
func (c Config) Validate() error {
	var missing []string
	if c.Endpoint == "" {
		missing = append(missing, EnvEndpoint)
	}
	if c.Bucket == "" {
		missing = append(missing, EnvBucket)
	}
	if c.Region == "" {
		missing = append(missing, EnvRegion)
	}
	if len(missing) > 0 {
		return objstore.Errorf(objstore.CodeInvalidParams, "INIT", "", "missing %s", strings.Join(missing, ", "))
	}
	if _, _, path, err := splitEndpoint(c.Endpoint); err != nil {
		return err
	} else if path != "" {
		return objstore.Errorf(objstore.CodeInvalidParams, "INIT", "",
			"%s must not contain a path (%q is not part of the OSS signature)", EnvEndpoint, path)
	}
	if !c.Anonymous && (c.Credentials.AccessKeyID == "" || c.Credentials.SecretAccessKey == "") {
		return objstore.Errorf(objstore.CodeInvalidParams, "INIT", "",
			"%s and %s are required unless %s is set", EnvAccessKeyID, EnvAccessSecret, EnvAnonymous)
	}
	return nil
}

// splitEndpoint splits "scheme://host[:port][/path]"; a missing scheme
// means http (as libcurl assumes).
func splitEndpoint(ep string) (scheme, host, path string, err error) {
	scheme = "http"
	rest := ep
	if i := strings.Index(ep, "://"); i >= 0 {
		scheme, rest = strings.ToLower(ep[:i]), ep[i+3:]
	}
	if scheme != "http" && scheme != "https" {
		return "", "", "", objstore.Errorf(objstore.CodeInvalidParams, "INIT", "",
			"%s has unsupported scheme %q", EnvEndpoint, scheme)
	}
	host, path = rest, ""
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		host, path = rest[:i], rest[i:]
	}
	if host == "" {
		return "", "", "", objstore.Errorf(objstore.CodeInvalidParams, "INIT", "", "%s has no host", EnvEndpoint)
	}
	return scheme, host, path, nil
}
