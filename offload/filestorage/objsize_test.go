package filestorage

import (
	"bytes"
	"context"
	"errors"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/ferrylabs/ferry/offload/objstore"
	"github.com/ferrylabs/ferry/offload/objstore/objtest"
)

// memS3 returns an s3-backed Store talking to an in-memory bucket over
// loopback HTTP.
func memS3(t *testing.T) Store {
	t.Helper()
	srv := httptest.NewServer(&objtest.MemBucket{Bucket: "bk"})
	t.Cleanup(srv.Close)
	env := map[string]string{
		"MOONCAKE_S3_ENDPOINT": srv.URL, "MOONCAKE_S3_BUCKET": "bk", "MOONCAKE_S3_REGION": "us-east-1",
		"MOONCAKE_S3_ACCESS_KEY_ID": "ak", "MOONCAKE_S3_SECRET_ACCESS_KEY": "sk", "MOONCAKE_S3_PATH_STYLE": "true",
		"NO_PROXY": "127.0.0.1",
	}
	st, err := DefaultObjectStore(context.Background(), ObjectStoreParams{Kind: "s3", Prefix: "owner", Lookup: lookupIn(env)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// checkLoadSizes offloads a 10-byte object and loads it back with a
// smaller, the exact and a larger buffer.
func checkLoadSizes(t *testing.T, st Store, objstoreErr bool) {
	t.Helper()
	ctx := context.Background()
	key := StorageKey("default", []byte("ten"))
	data := []byte("0123456789")
	if err := st.PutBatch(ctx, []PutItem{{Key: key, Bufs: [][]byte{data}}})[0]; err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{8, 12} {
		full := bytes.Repeat([]byte{0xEE}, n+8)
		err := st.GetBatch(ctx, []GetItem{{Key: key, Buf: full[:n:n]}})[0]
		if !errors.Is(err, ErrSizeMismatch) {
			t.Fatalf("load of 10 bytes as %d: err = %v; want ErrSizeMismatch", n, err)
		}
		if msg := err.Error(); !strings.Contains(msg, "10") || !strings.Contains(msg, strconv.Itoa(n)) {
			t.Fatalf("error %q does not name 10 and %d", msg, n)
		}
		if objstoreErr && objstore.CodeOf(err) != objstore.CodeInvalidParams {
			t.Fatalf("load as %d: code %v; want INVALID_PARAMS", n, objstore.CodeOf(err))
		}
		for _, b := range full[n:] {
			if b != 0xEE {
				t.Fatalf("load as %d wrote past the buffer", n)
			}
		}
	}
	buf := make([]byte, 10)
	if err := st.GetBatch(ctx, []GetItem{{Key: key, Buf: buf}})[0]; err != nil || !bytes.Equal(buf, data) {
		t.Fatalf("load of 10 as 10: %v %q", err, buf)
	}
}

func TestObjectStoreLoadChecksStoredSize(t *testing.T) {
	checkLoadSizes(t, memS3(t), true)
}

func TestPosixLoadChecksStoredSize(t *testing.T) {
	p, err := NewPosix(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	checkLoadSizes(t, p, false)
}

func TestS3LoadChecksStoredSize(t *testing.T) {
	env := s3Env(t)
	st, err := DefaultObjectStore(context.Background(), ObjectStoreParams{Kind: "s3", Prefix: "owner", Lookup: lookupIn(env)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	checkLoadSizes(t, st, true)
}
