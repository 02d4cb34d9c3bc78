package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"go.uber.org/goleak"

	"github.com/ferrylabs/ferry/offload/objstore"
	"github.com/ferrylabs/ferry/offload/objstore/objtest"
	"github.com/ferrylabs/ferry/offload/s3"
)

// objstoreEnv points the S3 variables at the test server from
// scripts/test.sh and a fresh bucket (removed at the end), or skips.
func objstoreEnv(t *testing.T) (bucket string, mc *minio.Client) {
	t.Helper()
	s3 := objtest.RequireS3Env(t)
	leaks := goleak.IgnoreCurrent()
	// Registered before the bucket so that it runs after the bucket and
	// the client's connections are gone.
	t.Cleanup(func() { goleak.VerifyNone(t, leaks) })
	s3.Region = "us-east-1"
	bucket, mc = s3.NewBucket(t, "ferry-cmd")
	for _, k := range []string{"AWS_ENDPOINT_URL", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID",
		"AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "MOONCAKE_S3_SESSION_TOKEN", "MOONCAKE_DFS_FS_ADAPTER",
		"MOONCAKE_DISTRIBUTED_FS_TYPE", "MOONCAKE_DISTRIBUTED_ROOT_DIR", "NO_PROXY"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("NO_PROXY", "127.0.0.1,localhost")
	for k, v := range s3.MooncakeEnv(bucket) {
		t.Setenv(k, v)
	}
	t.Setenv("MOONCAKE_DFS_ROOT_DIR", "/cmd-test")
	return bucket, mc
}

// runFerry runs the root command in-process and returns stdout, stderr
// and the error main would turn into an exit code.
func runFerry(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	root := newRootCmd()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(append([]string{"--log-level", "error"}, args...))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := root.ExecuteContext(ctx)
	return out.String(), errb.String(), err
}

func TestObjstoreCommandRoundTrip(t *testing.T) {
	bucket, mc := objstoreEnv(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "src.bin")
	data := bytes.Repeat([]byte("ferry\x00"), 5000)
	if err := os.WriteFile(src, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, _, err := runFerry(t, "", "objstore", "check"); err != nil || !strings.Contains(out, "health check ok") ||
		!strings.Contains(out, "bucket "+bucket) {
		t.Fatalf("check: %q %v", out, err)
	}
	if _, _, err := runFerry(t, "", "objstore", "put", "layer/a b%", src); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runFerry(t, "stdin-bytes", "objstore", "put", `"ctl\x00key"`, "-"); err != nil {
		t.Fatal(err)
	}
	// The object sits under the root-dir prefix with the encoded key.
	if _, err := mc.StatObject(context.Background(), bucket, "cmd-test/layer%2Fa%20b%25", minio.StatObjectOptions{}); err != nil {
		t.Fatalf("physical object: %v", err)
	}
	out, _, err := runFerry(t, "", "objstore", "ls")
	if err != nil || !strings.Contains(out, "30000  layer/a b%\n") || !strings.Contains(out, `11  "ctl\x00key"`) {
		t.Fatalf("ls: %q %v", out, err)
	}
	if out, _, err = runFerry(t, "", "objstore", "ls", "layer/"); err != nil || strings.Contains(out, "ctl") || !strings.Contains(out, "layer/a b%") {
		t.Fatalf("ls layer/: %q %v", out, err)
	}
	dst := filepath.Join(dir, "dst.bin")
	if _, _, err := runFerry(t, "", "objstore", "get", "layer/a b%", "-o", dst); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(dst); !bytes.Equal(got, data) {
		t.Fatalf("downloaded %d bytes, differ", len(got))
	}
	if out, _, err = runFerry(t, "", "objstore", "get", `"ctl\x00key"`); err != nil || out != "stdin-bytes" {
		t.Fatalf("get to stdout: %q %v", out, err)
	}
	_, _, err = runFerry(t, "", "objstore", "get", "missing")
	if !errors.Is(err, errNotFound) {
		t.Fatalf("missing key: %v (want errNotFound, exit %d)", err, exitNotFound)
	}
	for _, k := range []string{"layer/a b%", `"ctl\x00key"`, "missing"} {
		if _, _, err := runFerry(t, "", "objstore", "rm", k); err != nil {
			t.Fatalf("rm %s: %v", k, err)
		}
	}
	if out, _, err = runFerry(t, "", "objstore", "ls"); err != nil || out != "" {
		t.Fatalf("ls after rm: %q %v", out, err)
	}
	var ue usageError
	if _, _, err = runFerry(t, "", "objstore", "put", "only-key"); !errors.As(err, &ue) {
		t.Fatalf("missing FILE: %v", err)
	}
	if _, _, err = runFerry(t, "", "objstore", "get", `"unterminated`); !errors.As(err, &ue) {
		t.Fatalf("bad quoted key: %v", err)
	}
}

func TestObjstoreCheckExplainsFailures(t *testing.T) {
	_, _ = objstoreEnv(t)
	secret := os.Getenv("MOONCAKE_S3_SECRET_ACCESS_KEY")
	cases := []struct {
		name, env, value, want string
	}{
		{"wrong secret", "MOONCAKE_S3_SECRET_ACCESS_KEY", "not-the-secret", "signature"},
		{"missing bucket", "MOONCAKE_S3_BUCKET", "ferry-no-such-bucket", "bucket does not exist"},
		{"empty bucket variable", "MOONCAKE_S3_BUCKET", "", "MOONCAKE_S3_BUCKET"},
		{"no scheme", "MOONCAKE_S3_ENDPOINT", "127.0.0.1:9000", "http:// or https://"},
		{"endpoint path", "MOONCAKE_S3_ENDPOINT", "http://127.0.0.1:9000/x", "path"},
		{"refused", "MOONCAKE_S3_ENDPOINT", "http://127.0.0.1:1", "connection refused"},
		{"dns", "MOONCAKE_S3_ENDPOINT", "http://ferry-test.invalid", "DNS"},
		{"no credentials", "MOONCAKE_S3_ACCESS_KEY_ID", "", "credentials"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(c.env, c.value)
			out, stderr, err := runFerry(t, "", "objstore", "check")
			if err == nil {
				t.Fatalf("check passed: %q", out)
			}
			msg := err.Error()
			if !strings.Contains(msg, c.want) {
				t.Fatalf("error %q does not mention %q", msg, c.want)
			}
			for _, s := range []string{msg, out, stderr} {
				if strings.Contains(s, secret) || strings.Contains(s, "not-the-secret") {
					t.Fatalf("secret printed: %q", s)
				}
			}
		})
	}
}

// TestObjstoreExplainsClockSkew drives a request signed 20 minutes in the
// past against the real server and checks the diagnosis.
func TestObjstoreExplainsClockSkew(t *testing.T) {
	_, _ = objstoreEnv(t)
	a := s3.New(s3.Options{Prefix: "skew", Now: func() time.Time { return time.Now().Add(-20 * time.Minute) }})
	defer a.Close()
	ctx := context.Background()
	if err := a.Init(ctx); err != nil {
		t.Fatal(err)
	}
	err := explain(a.CheckHealth(ctx), "health check")
	if err == nil || !strings.Contains(err.Error(), "clock skew") {
		t.Fatalf("diagnosis %v", err)
	}
	if got := diagnose(&objstore.Error{Code: objstore.CodeFileWriteFail, Status: 403, ServiceCode: "AccessDenied"}); !strings.Contains(got, "permission denied") {
		t.Fatalf("access denied diagnosis %q", got)
	}
}
