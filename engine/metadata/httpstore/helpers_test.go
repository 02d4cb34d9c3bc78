package httpstore

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ferrylabs/ferry/engine/metadata"
)

// serve mounts h at /metadata of a real loopback HTTP server and returns
// the metadata URL. The server is closed when the test ends.
func serve(t testing.TB, h http.Handler) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/metadata", h)
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts.URL + "/metadata"
}

func open(t testing.TB, u string, opts Options) *Store {
	t.Helper()
	s, err := Open(u, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// wantStoreErr checks err wraps metadata.ErrStore (and not ErrNotFound),
// every target, and names each of the strings in its message.
func wantStoreErr(t *testing.T, what string, err error, targets []error, names ...string) {
	t.Helper()
	if !errors.Is(err, metadata.ErrStore) || errors.Is(err, metadata.ErrNotFound) {
		t.Fatalf("%s: %v, want an error wrapping ErrStore only", what, err)
	}
	for _, target := range targets {
		if !errors.Is(err, target) {
			t.Fatalf("%s: %v, want it to wrap %v", what, err, target)
		}
	}
	for _, n := range names {
		if !strings.Contains(err.Error(), n) {
			t.Fatalf("%s: %q does not name %q", what, err, n)
		}
	}
}
