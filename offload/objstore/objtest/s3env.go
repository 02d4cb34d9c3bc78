package objtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// The variables scripts/test.sh exports after it starts a real S3 server
// (versitygw, which checks signatures) on loopback.
const (
	EnvS3Endpoint  = "FERRY_TEST_S3_ENDPOINT"
	EnvS3AccessKey = "FERRY_TEST_S3_ACCESS_KEY"
	EnvS3SecretKey = "FERRY_TEST_S3_SECRET_KEY"
	EnvS3Region    = "FERRY_TEST_S3_REGION"
)

// S3Env is the real S3 server tests may use, read from the FERRY_TEST_S3_*
// variables.
type S3Env struct {
	Endpoint  string // URL with scheme, e.g. http://127.0.0.1:7070
	AccessKey string
	SecretKey string
	Region    string // us-east-1 when FERRY_TEST_S3_REGION is unset
}

// LookupS3Env reads the FERRY_TEST_S3_* variables. ok is false when
// FERRY_TEST_S3_ENDPOINT is unset: there is no server to test against.
func LookupS3Env() (e S3Env, ok bool) {
	e = S3Env{
		Endpoint:  os.Getenv(EnvS3Endpoint),
		AccessKey: os.Getenv(EnvS3AccessKey),
		SecretKey: os.Getenv(EnvS3SecretKey),
		Region:    os.Getenv(EnvS3Region),
	}
	if e.Region == "" {
		e.Region = "us-east-1"
	}
	return e, e.Endpoint != ""
}

// RequireS3Env returns the server from LookupS3Env, or skips t with a
// message that says which variable is missing and how to get it.
func RequireS3Env(t testing.TB) S3Env {
	t.Helper()
	e, ok := LookupS3Env()
	if !ok {
		t.Skip(EnvS3Endpoint + " not set: no S3 server to test against (scripts/test.sh starts versitygw and sets it)")
	}
	return e
}

// MooncakeEnv returns the adapter variables (MOONCAKE_S3_ENDPOINT,
// _BUCKET, _REGION, _ACCESS_KEY_ID, _SECRET_ACCESS_KEY) that point at this
// server and bucket. The caller owns the map and may add to it.
func (e S3Env) MooncakeEnv(bucket string) map[string]string {
	return map[string]string{
		"MOONCAKE_S3_ENDPOINT":          e.Endpoint,
		"MOONCAKE_S3_BUCKET":            bucket,
		"MOONCAKE_S3_REGION":            e.Region,
		"MOONCAKE_S3_ACCESS_KEY_ID":     e.AccessKey,
		"MOONCAKE_S3_SECRET_ACCESS_KEY": e.SecretKey,
	}
}

// NewBucket creates a bucket named prefix, the test's name and a random
// suffix, and returns its name with a minio client for inspecting it.
// When t ends, the client removes every object and the bucket (a failure
// to remove the bucket fails t) and closes its idle connections. Cleanups
// t registers after NewBucket run before the bucket goes. A bad endpoint
// or a refused bucket creation fails t.
func (e S3Env) NewBucket(t testing.TB, prefix string) (string, *minio.Client) {
	t.Helper()
	u, err := url.Parse(e.Endpoint)
	if err != nil || u.Host == "" {
		t.Fatalf("%s=%q is not a URL with a host: %v", EnvS3Endpoint, e.Endpoint, err)
	}
	tr := &http.Transport{}
	mc, err := minio.New(u.Host, &minio.Options{
		Creds:     credentials.NewStaticV4(e.AccessKey, e.SecretKey, ""),
		Secure:    u.Scheme == "https",
		Region:    e.Region,
		Transport: tr,
	})
	if err != nil {
		t.Fatalf("minio client for %s: %v", e.Endpoint, err)
	}
	bucket := bucketName(prefix, t.Name())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := mc.MakeBucket(ctx, bucket, minio.MakeBucketOptions{Region: e.Region}); err != nil {
		tr.CloseIdleConnections()
		t.Fatalf("create bucket %s: %v", bucket, err)
	}
	t.Cleanup(func() {
		defer tr.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		for o := range mc.ListObjects(ctx, bucket, minio.ListObjectsOptions{Recursive: true}) {
			if o.Err == nil {
				_ = mc.RemoveObject(ctx, bucket, o.Key, minio.RemoveObjectOptions{})
			}
		}
		if err := mc.RemoveBucket(ctx, bucket); err != nil {
			t.Errorf("remove bucket %s: %v", bucket, err)
		}
	})
	return bucket, mc
}

// bucketName makes a valid, unique bucket name (lower-case letters,
// digits and hyphens, at most 63 characters) from prefix and the test
// name.
func bucketName(prefix, test string) string {
	clean := func(s string) string {
		s = strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
				return r
			}
			return '-'
		}, strings.ToLower(s))
		return strings.Trim(s, "-")
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	name := clean(prefix) + "-" + clean(test)
	if len(name) > 50 {
		name = strings.TrimRight(name[:50], "-")
	}
	return name + "-" + hex.EncodeToString(rnd[:])
}
