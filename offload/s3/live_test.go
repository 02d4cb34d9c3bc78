package s3

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/ferrylabs/ferry/offload/objstore"
	"github.com/ferrylabs/ferry/offload/objstore/objtest"
)

// liveBucket creates a fresh bucket for t on the real S3 server started
// by scripts/test.sh (FERRY_TEST_S3_*), or skips the test, and removes it
// (with every object under prefix, the only prefix the test may use) when
// t ends. It returns a new env map with MOONCAKE_S3_BUCKET set.
func liveBucket(t testing.TB, prefix string) map[string]string {
	t.Helper()
	srv := objtest.RequireS3Env(t)
	bucket, _ := srv.NewBucket(t, "ferry")
	env := srv.MooncakeEnv(bucket)
	env[EnvPathStyle] = "true"
	clean := maps.Clone(env)
	ctx := context.Background()
	// Runs before NewBucket's cleanup, which then removes the empty bucket.
	t.Cleanup(func() {
		a := New(Options{Prefix: prefix, Lookup: objstore.MapLookup(clean), Logger: quiet})
		defer a.Close()
		if err := a.Init(ctx); err != nil {
			t.Errorf("cleanup init: %v", err)
			return
		}
		keys, err := a.ListKeys(ctx)
		if err != nil {
			t.Errorf("cleanup list: %v", err)
		}
		var wg sync.WaitGroup
		sem := make(chan struct{}, 16)
		for _, k := range keys {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				if err := a.Delete(ctx, k.Key); err != nil {
					t.Errorf("cleanup delete %q: %v", k.Key, err)
				}
			}()
		}
		wg.Wait()
	})
	return env
}

func liveAdapter(t testing.TB, env map[string]string, prefix string, log *slog.Logger) *Adapter {
	t.Helper()
	if log == nil {
		log = quiet
	}
	a := New(Options{Prefix: prefix, Lookup: objstore.MapLookup(env), Logger: log})
	if err := a.Init(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

func pattern(n, seed int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*17 + 29 + seed)
	}
	return b
}

func TestLiveObjectLifecycle(t *testing.T) {
	env := liveBucket(t, "/lifecycle/")
	var logs bytes.Buffer
	a := liveAdapter(t, env, "/lifecycle/", slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	ctx := context.Background()
	keys := []string{"plain", "a/b c", "100%+x", "你好", "tenant\x00/file%one", "x/../y"}
	for i, k := range keys {
		data := pattern(300+i, i)
		if err := a.Put(ctx, k, data); err != nil {
			t.Fatalf("put %q: %v", k, err)
		}
		if ok, err := a.Exists(ctx, k); err != nil || !ok {
			t.Fatalf("exists %q: %v %v", k, ok, err)
		}
		if n, err := a.GetSize(ctx, k); err != nil || n != int64(len(data)) {
			t.Fatalf("size %q: %d %v", k, n, err)
		}
		buf := make([]byte, len(data))
		if n, err := a.Get(ctx, k, buf); err != nil || n != len(data) || !bytes.Equal(buf, data) {
			t.Fatalf("get %q: %d %v", k, n, err)
		}
		part := make([]byte, 100)
		if n, err := a.GetRange(ctx, k, part, 7); err != nil || n != 100 || !bytes.Equal(part, data[7:107]) {
			t.Fatalf("range %q: %d %v", k, n, err)
		}
		// A range past the end is rejected, not clipped.
		if _, err := a.GetRange(ctx, k, make([]byte, 10), int64(len(data))-5); objstore.CodeOf(err) != objstore.CodeFileReadFail {
			t.Fatalf("clipped range %q: %v", k, err)
		}
	}
	if err := a.PutV(ctx, "file-two", [][]byte{[]byte("abc"), nil, []byte("def")}); err != nil {
		t.Fatal(err)
	}
	x, y := make([]byte, 2), make([]byte, 2)
	if n, err := a.GetV(ctx, "file-two", [][]byte{x, y}, 1); err != nil || n != 4 || string(x) != "bc" || string(y) != "de" {
		t.Fatalf("getv %d %v %q %q", n, err, x, y)
	}
	listed, err := a.ListKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[string]int64{}
	for _, k := range listed {
		sizes[k.Key] = k.Size
	}
	if len(sizes) != len(keys)+1 || sizes["file-two"] != 6 || sizes["tenant\x00/file%one"] != 304 || sizes["你好"] != 303 {
		t.Fatalf("listed %+v", listed)
	}
	_, err = a.Get(ctx, "absent", make([]byte, 3))
	wantCode(t, err, objstore.CodeFileNotFound)
	_, err = a.GetSize(ctx, "absent")
	wantCode(t, err, objstore.CodeFileNotFound)
	for _, k := range append(keys, "file-two", "absent") {
		if err := a.Delete(ctx, k); err != nil {
			t.Fatalf("delete %q: %v", k, err)
		}
	}
	if ok, err := a.Exists(ctx, "plain"); err != nil || ok {
		t.Fatalf("exists after delete: %v %v", ok, err)
	}
	if left, err := a.ListKeys(ctx); err != nil || len(left) != 0 {
		t.Fatalf("left %+v %v", left, err)
	}
	if strings.Contains(logs.String(), env[EnvSecretAccessKey]) {
		t.Fatal("secret in logs")
	}
}

func TestLiveBatchesAndPaginatedListing(t *testing.T) {
	env := liveBucket(t, "pages")
	a := liveAdapter(t, env, "pages", nil)
	ctx := context.Background()
	const n = 1105
	puts := make([]objstore.PutRequest, n)
	for i := range puts {
		puts[i] = objstore.PutRequest{Key: fmt.Sprintf("layer/%d%%chunk", i), Bufs: [][]byte{pattern(512+i%7, i)}}
	}
	for i, err := range a.PutBatch(ctx, puts) {
		if err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
	}
	listed, err := a.ListKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != n {
		t.Fatalf("listed %d keys, want %d", len(listed), n)
	}
	seen := map[string]int64{}
	for _, k := range listed {
		seen[k.Key] = k.Size
	}
	gets := make([]objstore.GetRequest, n)
	for i := range gets {
		k := puts[i].Key
		if seen[k] != int64(512+i%7) {
			t.Fatalf("key %q size %d", k, seen[k])
		}
		gets[i] = objstore.GetRequest{Key: k, Buf: make([]byte, 512+i%7)}
	}
	for i, r := range a.GetBatch(ctx, gets) {
		if r.Err != nil || r.N != len(gets[i].Buf) || !bytes.Equal(gets[i].Buf, puts[i].Bufs[0]) {
			t.Fatalf("get %d: %+v", i, r)
		}
	}
}

func TestLiveWrongSecretIsRejected(t *testing.T) {
	env := liveBucket(t, "p")
	bad := map[string]string{}
	for k, v := range env {
		bad[k] = v
	}
	bad[EnvSecretAccessKey] = "wrong-secret-value"
	var logs bytes.Buffer
	a := liveAdapter(t, bad, "p", slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	ctx := context.Background()
	err := a.Put(ctx, "k", []byte("v"))
	wantCode(t, err, objstore.CodeFileWriteFail)
	var oe *objstore.Error
	if !asError(err, &oe) || oe.Status != 403 || oe.ServiceCode != "SignatureDoesNotMatch" {
		t.Fatalf("error %v", err)
	}
	_, err = a.Get(ctx, "k", make([]byte, 1<<10))
	if err == nil {
		t.Fatal("GET with a wrong secret succeeded")
	}
	wantCode(t, a.CheckHealth(ctx), objstore.CodeFileWriteFail)
	for _, s := range []string{err.Error(), logs.String()} {
		if strings.Contains(s, "wrong-secret-value") || strings.Contains(s, env[EnvSecretAccessKey]) {
			t.Fatalf("secret leaked: %s", s)
		}
	}
}

func TestLiveHealthCheck(t *testing.T) {
	env := liveBucket(t, "health")
	a := liveAdapter(t, env, "health", nil)
	if err := a.CheckHealth(context.Background()); err != nil {
		t.Fatal(err)
	}
	if keys, err := a.ListKeys(context.Background()); err != nil || len(keys) != 0 {
		t.Fatalf("probe left behind: %+v %v", keys, err)
	}
	missing := map[string]string{}
	for k, v := range env {
		missing[k] = v
	}
	missing[EnvBucket] = "ferry-no-such-bucket-x"
	b := liveAdapter(t, missing, "health", nil)
	wantCode(t, b.CheckHealth(context.Background()), objstore.CodeFileWriteFail)
}

func TestLiveMultipartUpload(t *testing.T) {
	env := liveBucket(t, "mpu")
	cfg, err := LoadConfig(objstore.NewEnv(objstore.MapLookup(env), quiet))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MultipartThreshold = 6 << 20
	cfg.PartSize = 5 << 20
	a, err := NewFromConfig(cfg, Options{Prefix: "mpu", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx := context.Background()
	data := pattern(12<<20+123, 5)
	// Three source slices whose boundaries do not match the part size.
	if err := a.PutV(ctx, "big", [][]byte{data[:1<<20], data[1<<20 : 7<<20], data[7<<20:]}); err != nil {
		t.Fatal(err)
	}
	if n, err := a.GetSize(ctx, "big"); err != nil || n != int64(len(data)) {
		t.Fatalf("size %d %v", n, err)
	}
	got := make([]byte, len(data))
	if _, err := a.Get(ctx, "big", got); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("content differs: %v", err)
	}
	// Below the threshold: a single PUT.
	if err := a.Put(ctx, "small", data[:1<<20]); err != nil {
		t.Fatal(err)
	}
}

// TestLiveChecksumVerified checks that the server keeps the CRC32C sent
// with a PUT and that a whole-object GET compares against it.
func TestLiveChecksumVerified(t *testing.T) {
	env := liveBucket(t, "crc")
	a := New(Options{Prefix: "crc", Lookup: objstore.MapLookup(env), Logger: quiet, VerifyGetChecksum: true})
	if err := a.Init(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx := context.Background()
	data := pattern(4096, 1)
	if err := a.Put(ctx, "k", data); err != nil {
		t.Fatal(err)
	}
	r := a.run.Load()
	c := objstore.Call{Method: http.MethodGet, Key: "crc/k", LogicalKey: "k", Ranged: true, Buf: make([]byte, len(data))}
	o := r.exec.Do(ctx, &c)
	if o.Err != nil || o.Status != 206 {
		t.Fatalf("outcome %+v", o)
	}
	if o.Header.Get(hdrChecksumCRC32C) == "" {
		t.Skipf("server returns no x-amz-checksum-crc32c on ranged GETs (headers %v); nothing to verify", o.Header)
	}
	if err := verifyChecksum(&c, &o); err != nil {
		t.Fatalf("valid object failed verification: %v", err)
	}
	if _, err := a.Get(ctx, "k", make([]byte, len(data))); err != nil {
		t.Fatalf("verified get: %v", err)
	}
	c.Buf[10] ^= 1
	if err := verifyChecksum(&c, &o); objstore.CodeOf(err) != objstore.CodeFileReadFail {
		t.Fatalf("corrupted buffer passed: %v", err)
	}
}

func TestLiveConcurrentBatches(t *testing.T) {
	env := liveBucket(t, "conc")
	a := liveAdapter(t, env, "conc", nil)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("g%d", g)
			data := pattern(64<<10, g)
			if err := a.Put(ctx, key, data); err != nil {
				errs <- err
				return
			}
			buf := make([]byte, len(data))
			if r := a.GetBatch(ctx, []objstore.GetRequest{{Key: key, Buf: buf}}); r[0].Err != nil || !bytes.Equal(buf, data) {
				errs <- fmt.Errorf("get %s: %v", key, r[0].Err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
