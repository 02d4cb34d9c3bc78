package objtest

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"
)

func TestBucketNameIsValidAndUnique(t *testing.T) {
	valid := regexp.MustCompile(`^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$`)
	long := "TestSomething/With_Sub-Tests and Spaces/" + strings.Repeat("x", 80)
	a, b := bucketName("Ferry-CMD", long), bucketName("Ferry-CMD", long)
	if a == b {
		t.Fatalf("two names for the same test are equal: %q", a)
	}
	for _, n := range []string{a, b, bucketName("p", "T"), bucketName("-x-", "_/_")} {
		if !valid.MatchString(n) {
			t.Errorf("bucket name %q is not a valid S3 bucket name", n)
		}
	}
	if !strings.HasPrefix(a, "ferry-cmd-testsomething-with-sub-tests") {
		t.Errorf("name %q does not start with the prefix and test name", a)
	}
}

func TestLookupS3EnvDefaults(t *testing.T) {
	t.Setenv(EnvS3Endpoint, "")
	t.Setenv(EnvS3Region, "")
	if _, ok := LookupS3Env(); ok {
		t.Fatal("an empty endpoint counts as a server")
	}
	t.Setenv(EnvS3Endpoint, "http://127.0.0.1:1")
	t.Setenv(EnvS3AccessKey, "ak")
	t.Setenv(EnvS3SecretKey, "sk")
	e, ok := LookupS3Env()
	if !ok || e.Region != "us-east-1" || e.AccessKey != "ak" || e.SecretKey != "sk" {
		t.Fatalf("LookupS3Env = %+v, %v", e, ok)
	}
	env := e.MooncakeEnv("b")
	if env["MOONCAKE_S3_BUCKET"] != "b" || env["MOONCAKE_S3_ENDPOINT"] != e.Endpoint || env["MOONCAKE_S3_SECRET_ACCESS_KEY"] != "sk" {
		t.Fatalf("MooncakeEnv = %v", env)
	}
}

// TestNewBucketRoundTrip needs the real server: the bucket exists while
// the test runs and is gone, objects and all, after its cleanup.
func TestNewBucketRoundTrip(t *testing.T) {
	srv := RequireS3Env(t)
	// A second bucket's client, alive until the test ends, looks.
	_, mc := srv.NewBucket(t, "ferry-objtest-probe")
	var bucket string
	t.Run("sub", func(t *testing.T) {
		var mc *minio.Client
		bucket, mc = srv.NewBucket(t, "ferry-objtest")
		ctx := context.Background()
		if _, err := mc.PutObject(ctx, bucket, "a/b", strings.NewReader("x"), 1, minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	ok, err := mc.BucketExists(context.Background(), bucket)
	if err != nil || ok {
		t.Fatalf("bucket %s still exists after cleanup (exists=%v, err=%v)", bucket, ok, err)
	}
}
