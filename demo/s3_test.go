package demo

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/ferrylabs/ferry/offload/objstore/objtest"
)

// realS3 creates a fresh bucket on the S3 server scripts/test.sh starts
// (versitygw, which checks signatures) and returns a minio client for
// inspecting it and the environment that points the demo at it, without
// the bucket (the --store URL names it). It skips without the server.
func realS3(t *testing.T) (*minio.Client, string, map[string]string) {
	t.Helper()
	s3 := objtest.RequireS3Env(t)
	bucket, mc := s3.NewBucket(t, "ferry-demo")
	env := s3.MooncakeEnv(bucket)
	env["MOONCAKE_S3_PATH_STYLE"] = "true"
	// A bucket from the environment must lose to the --store URL.
	env["MOONCAKE_S3_BUCKET"] = "not-this-bucket"
	return mc, bucket, env
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
