// Package storetest is a conformance suite for metadata.Store
// implementations: every store (etcd, redis, http) runs the same checks
// against a real server.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferrylabs/ferry/engine/metadata"
)

// Open returns a fresh store connected to the server under test. The
// suite closes it.
type Open func(t *testing.T) metadata.Store

// Run checks the Store contract: missing keys, round trips, overwrite,
// delete, keys with characters that need escaping, a large value,
// concurrent use, and Close.
func Run(t *testing.T, open Open) {
	t.Run("Missing", func(t *testing.T) { testMissing(t, open(t)) })
	t.Run("RoundTrip", func(t *testing.T) { testRoundTrip(t, open(t)) })
	t.Run("Keys", func(t *testing.T) { testKeys(t, open(t)) })
	t.Run("Large", func(t *testing.T) { testLarge(t, open(t)) })
	t.Run("Concurrent", func(t *testing.T) { testConcurrent(t, open(t)) })
	t.Run("Close", func(t *testing.T) { testClose(t, open(t)) })
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

// unique keeps subtests (and repeated runs against one server) apart.
func unique(t *testing.T, k string) string {
	return fmt.Sprintf("storetest/%s/%d/%s", t.Name(), time.Now().UnixNano(), k)
}

func testMissing(t *testing.T, s metadata.Store) {
	defer s.Close()
	_, err := s.Get(ctx(t), unique(t, "absent"))
	if !errors.Is(err, metadata.ErrNotFound) {
		t.Fatalf("Get of a missing key: %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx(t), unique(t, "absent")); err != nil {
		t.Fatalf("Delete of a missing key: %v", err)
	}
}

func testRoundTrip(t *testing.T, s metadata.Store) {
	defer s.Close()
	k := unique(t, "ram/node-a") // not rpc_meta: Mooncake's HTTP servers refuse to rewrite those
	v1 := []byte(`{"ip_or_host_name":"127.0.0.1","rpc_port":15001}`)
	if err := s.Put(ctx(t), k, v1); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx(t), k)
	if err != nil || !bytes.Equal(got, v1) {
		t.Fatalf("Get after Put: %q, %v; want %q", got, err, v1)
	}
	v2 := []byte(`{"ip_or_host_name":"127.0.0.2","rpc_port":15002}`)
	if err := s.Put(ctx(t), k, v2); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx(t), k); err != nil || !bytes.Equal(got, v2) {
		t.Fatalf("Get after overwrite: %q, %v; want %q", got, err, v2)
	}
	if err := s.Delete(ctx(t), k); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx(t), k); !errors.Is(err, metadata.ErrNotFound) {
		t.Fatalf("Get after Delete: %v, want ErrNotFound", err)
	}
}

func testKeys(t *testing.T, s metadata.Store) {
	defer s.Close()
	// Segment names carry ':' and '[', cluster IDs '/', and a user may
	// name a server with spaces, '&', '=', '?', '%' or '+'.
	names := []string{"mooncake/ram/10.0.0.1:15001", "mooncake/c1/ram/[::1]:16000",
		"mooncake/rpc_meta/a b&c=d?e%f+g#h", "mooncake/ram/節點"}
	for i, n := range names {
		k := unique(t, n)
		v := []byte(fmt.Sprintf(`{"n":%d}`, i))
		if err := s.Put(ctx(t), k, v); err != nil {
			t.Fatalf("Put %q: %v", k, err)
		}
		if got, err := s.Get(ctx(t), k); err != nil || !bytes.Equal(got, v) {
			t.Fatalf("Get %q: %q, %v; want %q", k, got, err, v)
		}
		// A key that differs only after the special character is another key.
		if _, err := s.Get(ctx(t), k+"x"); !errors.Is(err, metadata.ErrNotFound) {
			t.Fatalf("Get %q: %v, want ErrNotFound", k+"x", err)
		}
	}
}

func testLarge(t *testing.T, s metadata.Store) {
	defer s.Close()
	// A descriptor of a few thousand buffers runs to hundreds of KiB.
	v := []byte(`{"buffers":"` + strings.Repeat("0123456789abcdef", 512<<10/16) + `"}`)
	k := unique(t, "ram/big")
	if err := s.Put(ctx(t), k, v); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx(t), k)
	if err != nil || !bytes.Equal(got, v) {
		t.Fatalf("large value: %d bytes back, %v; want %d", len(got), err, len(v))
	}
}

func testConcurrent(t *testing.T, s metadata.Store) {
	defer s.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				k := unique(t, fmt.Sprintf("g%d/k%d", g, i))
				v := []byte(fmt.Sprintf(`{"g":%d,"i":%d}`, g, i))
				if err := s.Put(ctx(t), k, v); err != nil {
					errs <- err
					return
				}
				got, err := s.Get(ctx(t), k)
				if err != nil || !bytes.Equal(got, v) {
					errs <- fmt.Errorf("Get %q: %q, %v", k, got, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func testClose(t *testing.T, s metadata.Store) {
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := s.Get(ctx(t), unique(t, "k")); !errors.Is(err, metadata.ErrStore) {
		t.Fatalf("Get after Close: %v, want ErrStore", err)
	}
	if err := s.Put(ctx(t), unique(t, "k"), []byte("{}")); !errors.Is(err, metadata.ErrStore) {
		t.Fatalf("Put after Close: %v, want ErrStore", err)
	}
}
