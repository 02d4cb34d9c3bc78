package filestorage

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ferrylabs/ferry/offload/config"
	"github.com/ferrylabs/ferry/offload/objstore/objtest"
)

// s3Env returns the adapter environment for a fresh bucket on the test
// S3 server, or skips the test when FERRY_TEST_S3_ENDPOINT is unset.
func s3Env(t *testing.T) map[string]string {
	t.Helper()
	s3 := objtest.RequireS3Env(t)
	bucket, _ := s3.NewBucket(t, "ferry-fs")
	env := s3.MooncakeEnv(bucket)
	env["NO_PROXY"] = "127.0.0.1,localhost"
	return env
}

func lookupIn(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func s3Config(t *testing.T, prefix string) config.Config {
	c := config.Default()
	c.FileStoragePath = t.TempDir()
	c.BackendDescriptor = config.BackendDistributed
	c.FSAdapter = "s3"
	c.RootDir = "/" + prefix + "/"
	c.HealthCheck = true
	return c
}

func TestS3BackendRoundTripAndScan(t *testing.T) {
	env := s3Env(t)
	ctx := context.Background()
	fs, err := New(ctx, Options{Config: s3Config(t, "owner-a"), Lookup: lookupIn(env)})
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	other, err := New(ctx, Options{Config: s3Config(t, "owner-b"), Lookup: lookupIn(env)})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if fs.Kind() != "s3" {
		t.Fatalf("kind %q", fs.Kind())
	}
	keys := [][]byte{StorageKey("default", []byte("tenant\x00/file%one")), StorageKey("t2", []byte("héllo")), StorageKey("default", []byte("empty"))}
	srcs := [][][]byte{{[]byte("abc"), []byte("def")}, {bytes.Repeat([]byte{9}, 5<<20+3)}, nil}
	for i, err := range fs.BatchOffload(ctx, keys, srcs) {
		if err != nil {
			t.Fatalf("offload %d: %v", i, err)
		}
	}
	bufs := [][]byte{make([]byte, 6), make([]byte, 5<<20+3), {}}
	if err := fs.BatchLoad(ctx, keys, bufs); err != nil {
		t.Fatal(err)
	}
	for i := range keys {
		if !bytes.Equal(bufs[i], bytes.Join(srcs[i], nil)) {
			t.Fatalf("key %d differs", i)
		}
	}
	if err := fs.BatchLoad(ctx, [][]byte{StorageKey("default", []byte("missing"))}, [][]byte{make([]byte, 4)}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing: %v", err)
	}
	// The other owner's prefix sees none of these objects.
	var n int
	other.ScanMeta(ctx, func(m []KeyMeta) error { n += len(m); return nil })
	if n != 0 {
		t.Fatalf("owner-b scanned %d objects of owner-a", n)
	}
	got := map[string]int64{}
	if err := fs.ScanMeta(ctx, func(m []KeyMeta) error {
		for _, km := range m {
			got[string(km.StorageKey)] = km.Size
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[string(keys[1])] != 5<<20+3 || got[string(keys[2])] != 0 {
		t.Fatalf("scan: %v", got)
	}
}

func TestS3WrongSecretRefused(t *testing.T) {
	env := s3Env(t)
	env["MOONCAKE_S3_SECRET_ACCESS_KEY"] = "not-the-secret"
	_, err := New(context.Background(), Options{Config: s3Config(t, "owner-a"), Lookup: lookupIn(env)})
	if !errors.Is(err, ErrHealthCheck) {
		t.Fatalf("err = %v, want ErrHealthCheck", err)
	}
	if strings.Contains(err.Error(), "not-the-secret") {
		t.Fatal("secret in error text")
	}
	t.Log(err)
}
