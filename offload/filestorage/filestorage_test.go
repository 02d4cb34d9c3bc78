package filestorage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/ferrylabs/ferry/offload/config"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestValidatePath(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	os.WriteFile(file, nil, 0o600)
	link := filepath.Join(dir, "link")
	os.Symlink(dir, link)
	cases := map[string]string{
		"":               "is empty",
		"relative/dir":   "not an absolute path",
		dir + "/../x":    "'..' component",
		dir + "/missing": "no such file",
		file:             "not a directory",
		link:             "is a symlink",
	}
	for p, want := range cases {
		err := ValidatePath(p)
		if !errors.Is(err, ErrInvalidPath) || !bytes.Contains([]byte(err.Error()), []byte(want)) {
			t.Errorf("ValidatePath(%q) = %v, want ErrInvalidPath mentioning %q", p, err, want)
		}
	}
	if err := ValidatePath(dir); err != nil {
		t.Fatalf("valid dir rejected: %v", err)
	}
	if os.Geteuid() != 0 {
		ro := filepath.Join(dir, "ro")
		os.Mkdir(ro, 0o500)
		if err := ValidatePath(ro); !errors.Is(err, ErrInvalidPath) {
			t.Errorf("read-only dir accepted: %v", err)
		}
	}
}

func posixConfig(t *testing.T) config.Config {
	c := config.Default()
	c.FileStoragePath = t.TempDir()
	c.BackendDescriptor = config.BackendFilePerKey
	c.ScanMetaKeys = 3
	return c
}

func TestPosixRoundTripOpaqueKeys(t *testing.T) {
	ctx := context.Background()
	fs, err := New(ctx, Options{Config: posixConfig(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	if fs.Kind() != "posix" || fs.Capacity() != config.DefaultTotalSizeLimit {
		t.Fatalf("kind %q capacity %d", fs.Kind(), fs.Capacity())
	}
	keys := [][]byte{
		StorageKey("default", []byte("plain")),
		StorageKey("default", []byte("a/b%c\x00d")),
		StorageKey("t2", []byte("héllo")),
		StorageKey("default", []byte(".")),
		StorageKey("default", []byte("empty")),
	}
	srcs := [][][]byte{
		{[]byte("hello "), []byte("world")},
		{bytes.Repeat([]byte{7}, 4097)},
		{[]byte("x")},
		{[]byte("dot")},
		{},
	}
	for i, err := range fs.BatchOffload(ctx, keys, srcs) {
		if err != nil {
			t.Fatalf("offload %d: %v", i, err)
		}
	}
	bufs := [][]byte{make([]byte, 11), make([]byte, 4097), make([]byte, 1), make([]byte, 3), make([]byte, 0)}
	if err := fs.BatchLoad(ctx, keys, bufs); err != nil {
		t.Fatal(err)
	}
	for i := range keys {
		if want := bytes.Join(srcs[i], nil); !bytes.Equal(bufs[i], want) {
			t.Fatalf("key %q: got %q want %q", keys[i], bufs[i], want)
		}
	}
	// Wrong size and missing key.
	err = fs.BatchLoad(ctx, keys[:1], [][]byte{make([]byte, 10)})
	if !errors.Is(err, ErrSizeMismatch) {
		t.Fatalf("short buffer: %v", err)
	}
	err = fs.BatchLoad(ctx, [][]byte{StorageKey("default", []byte("nope"))}, [][]byte{make([]byte, 1)})
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing key: %v", err)
	}
	if err := fs.BatchLoad(ctx, keys, bufs[:1]); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("length mismatch: %v", err)
	}

	// ScanMeta in batches of 3, every key with its size.
	got := map[string]int64{}
	var batches []int
	err = fs.ScanMeta(ctx, func(m []KeyMeta) error {
		batches = append(batches, len(m))
		for _, km := range m {
			got[string(km.StorageKey)] = km.Size
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(batches) != "[3 2]" || len(got) != 5 || got[string(keys[1])] != 4097 || got[string(keys[4])] != 0 {
		t.Fatalf("scan: batches %v, got %v", batches, got)
	}
	stop := errors.New("stop")
	if err := fs.ScanMeta(ctx, func([]KeyMeta) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("handler error not returned: %v", err)
	}
	if err := fs.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fs.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	if err := fs.BatchLoad(ctx, keys[:1], bufs[:1]); !errors.Is(err, ErrClosed) {
		t.Fatalf("after close: %v", err)
	}
}

func TestHealthCheckAndBackendSelection(t *testing.T) {
	ctx := context.Background()
	c := posixConfig(t)
	c.HealthCheck = true
	fs, err := New(ctx, Options{Config: c})
	if err != nil {
		t.Fatalf("posix health check: %v", err)
	}
	fs.Close()

	c.BackendDescriptor = config.BackendDistributed
	c.FSAdapter = "hf3fs"
	if _, err := New(ctx, Options{Config: c}); !errors.Is(err, ErrNotSupported) {
		t.Fatalf("hf3fs: %v", err)
	}
	c.FSAdapter = "posix"
	c.RootDir = filepath.Join(t.TempDir(), "shared")
	fs, err = New(ctx, Options{Config: c})
	if err != nil {
		t.Fatal(err)
	}
	fs.Close()

	// Object storage still validates the local path.
	c.FSAdapter = "s3"
	c.FileStoragePath = "/nonexistent-ferry-dir"
	opened := false
	_, err = New(ctx, Options{Config: c, OpenObjectStore: func(context.Context, ObjectStoreParams) (Store, error) {
		opened = true
		return nil, nil
	}})
	if !errors.Is(err, ErrInvalidPath) || opened {
		t.Fatalf("object storage with a bad path: err %v, opened %v", err, opened)
	}
	// The prefix handed to the adapter is the root dir without slashes.
	c.FileStoragePath = t.TempDir()
	c.RootDir = "/owner-a/"
	var gotKind, gotPrefix string
	fs, err = New(ctx, Options{Config: c, OpenObjectStore: func(_ context.Context, p ObjectStoreParams) (Store, error) {
		gotKind, gotPrefix = p.Kind, p.Prefix
		return NewPosix(t.TempDir())
	}})
	if err != nil || gotKind != "s3" || gotPrefix != "owner-a" || fs.Kind() != "s3" {
		t.Fatalf("object store open: err %v kind %q prefix %q", err, gotKind, gotPrefix)
	}
	fs.Close()
}

type failingHealth struct{ *Posix }

func (failingHealth) CheckHealth(context.Context) error {
	return fmt.Errorf("%w: probe PUT refused", ErrBackend)
}

func TestHealthCheckFailureRefusesInit(t *testing.T) {
	c := posixConfig(t)
	c.HealthCheck = true
	p, _ := NewPosix(t.TempDir())
	_, err := New(context.Background(), Options{Config: c, Store: failingHealth{p}})
	if !errors.Is(err, ErrHealthCheck) || !errors.Is(err, ErrBackend) {
		t.Fatalf("err = %v", err)
	}
}

func TestStorageKeySplit(t *testing.T) {
	sk := StorageKey("ten", []byte("k\x00ey"))
	ten, key, err := SplitStorageKey(sk)
	if err != nil || ten != "ten" || string(key) != "k\x00ey" {
		t.Fatalf("split: %q %q %v", ten, key, err)
	}
	if _, _, err := SplitStorageKey([]byte("nosep")); !errors.Is(err, ErrInvalidArgument) {
		t.Fatal(err)
	}
}

func TestPosixNames(t *testing.T) {
	for _, k := range [][]byte{[]byte("a"), {0, 1, 255}, []byte("%2F"), []byte("..")} {
		n, err := encodeName(k)
		if err != nil || n[0] == '.' {
			t.Fatalf("encode %q: %q %v", k, n, err)
		}
		back, ok := decodeName(n)
		if !ok || !bytes.Equal(back, k) {
			t.Fatalf("round trip %q -> %q -> %q", k, n, back)
		}
	}
	if _, err := encodeName(bytes.Repeat([]byte{0}, 100)); !errors.Is(err, ErrInvalidArgument) {
		t.Fatal("long key accepted")
	}
}
