package demo

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// realS3 creates a fresh bucket on the S3 server scripts/test.sh starts
// (versitygw, which checks signatures) and returns a minio client for
// inspecting it and the environment that points the demo at it, without
// the bucket (the --store URL names it). It skips without the server.
func realS3(t *testing.T) (*minio.Client, string, map[string]string) {
	t.Helper()
	ep := os.Getenv("FERRY_TEST_S3_ENDPOINT")
	if ep == "" {
		t.Skip("FERRY_TEST_S3_ENDPOINT not set: run scripts/test.sh, which starts versitygw, to run the demo against a real S3 server")
	}
	u, err := url.Parse(ep)
	if err != nil {
		t.Fatal(err)
	}
	ak, sk, region := os.Getenv("FERRY_TEST_S3_ACCESS_KEY"), os.Getenv("FERRY_TEST_S3_SECRET_KEY"), os.Getenv("FERRY_TEST_S3_REGION")
	mc, err := minio.New(u.Host, &minio.Options{Creds: credentials.NewStaticV4(ak, sk, ""), Secure: u.Scheme == "https", Region: region})
	if err != nil {
		t.Fatal(err)
	}
	bucket := fmt.Sprintf("ferry-demo-%d-%d", time.Now().UnixNano()%1e9, rand.IntN(1e6))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := mc.MakeBucket(ctx, bucket, minio.MakeBucketOptions{Region: region}); err != nil {
		t.Fatalf("create bucket: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for o := range mc.ListObjects(ctx, bucket, minio.ListObjectsOptions{Recursive: true}) {
			if o.Err == nil {
				mc.RemoveObject(ctx, bucket, o.Key, minio.RemoveObjectOptions{})
			}
		}
		mc.RemoveBucket(ctx, bucket)
	})
	return mc, bucket, map[string]string{
		"MOONCAKE_S3_ENDPOINT": ep, "MOONCAKE_S3_REGION": region,
		"MOONCAKE_S3_ACCESS_KEY_ID": ak, "MOONCAKE_S3_SECRET_ACCESS_KEY": sk, "MOONCAKE_S3_PATH_STYLE": "true",
		// A bucket from the environment must lose to the --store URL.
		"MOONCAKE_S3_BUCKET": "not-this-bucket",
	}
}

func countObjects(t *testing.T, mc *minio.Client, bucket, prefix string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n := 0
	for o := range mc.ListObjects(ctx, bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			t.Fatalf("list %s/%s: %v", bucket, prefix, o.Err)
		}
		n++
	}
	return n
}

func TestRunAgainstRealS3(t *testing.T) {
	mc, bucket, env := realS3(t)
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	rep, err := Run(ctx, Options{Objects: 12, MinSize: 10 << 10, MaxSize: 300 << 10, Batch: 5,
		Store: "s3://" + bucket + "/team/demo", Lookup: lookup, Logger: quietLogger()})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !rep.OK() || rep.Deleted != 12 {
		t.Fatalf("report: ok %v, deleted %d", rep.OK(), rep.Deleted)
	}
	if rep.Store != "s3://"+bucket+"/team/demo" {
		t.Fatalf("report store %q", rep.Store)
	}
	if n := countObjects(t, mc, bucket, "team/demo/"); n != 0 {
		t.Fatalf("%d objects left under the prefix after a run without --keep", n)
	}

	rep, err = Run(ctx, Options{Objects: 6, MinSize: 10 << 10, MaxSize: 100 << 10, Batch: 4, Keep: true,
		Store: "s3://" + bucket + "/kept", Lookup: lookup, Logger: quietLogger()})
	if err != nil {
		t.Fatalf("Run --keep: %v", err)
	}
	if rep.Deleted != 0 {
		t.Fatalf("--keep deleted %d objects", rep.Deleted)
	}
	if n := countObjects(t, mc, bucket, "kept/"); n != 6 {
		t.Fatalf("%d objects under the prefix after --keep, want 6", n)
	}
}

func TestRunRealS3WrongSecretFailsSetup(t *testing.T) {
	_, bucket, env := realS3(t)
	env["MOONCAKE_S3_SECRET_ACCESS_KEY"] = "wrong-secret"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, err := Run(ctx, Options{Objects: 2, Store: "s3://" + bucket, Logger: quietLogger(),
		Lookup: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	if err == nil || !errors.Is(err, ErrSetup) {
		t.Fatalf("Run with a wrong secret: %v, want ErrSetup", err)
	}
	t.Logf("wrong secret: %v", err)
}
