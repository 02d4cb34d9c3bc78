package oss

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/ferrylabs/ferry/offload/objstore"
	"github.com/ferrylabs/ferry/offload/objstore/objtest"
)

// TestVirtualHostRequestsAndRawPaths checks the virtual-host form
// (bucket in the Host, path without it) and that paths with dot segments
// and encoded bytes go on the wire byte for byte.
func TestVirtualHostRequestsAndRawPaths(t *testing.T) {
	srv := objtest.NewServer(t)
	addr := strings.TrimPrefix(srv.URL(), "http://")
	env := faultEnv("http://oss.test:1/", 4)
	env[EnvPathStyle] = "false"
	tr := &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
	defer tr.CloseIdleConnections()
	a := New(Options{Lookup: objstore.MapLookup(env), Prefix: "/../tenant/./", transport: tr})
	if err := a.Init(ctx); err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	srv.Route("..", objtest.Reply(206, "abc"))
	srv.Route("a%252Fb%2520%25E4%25BD%25A0", objtest.Reply(206, "abc"))
	for _, key := range []string{"..", "a/b 你"} {
		if _, err := a.Get(ctx, key, make([]byte, 3)); err != nil {
			t.Fatalf("%q: %v", key, err)
		}
	}
	w := srv.Requests()
	if len(w) != 2 {
		t.Fatalf("%d requests", len(w))
	}
	for i, want := range []string{"GET /../tenant/./.. HTTP/1.1\r\n", "GET /../tenant/./a%252Fb%2520%25E4%25BD%25A0 HTTP/1.1\r\n"} {
		if !strings.HasPrefix(w[i].Wire, want) {
			t.Errorf("request line %q, want %q", strings.SplitN(w[i].Wire, "\r\n", 2)[0], want)
		}
		if h := w[i].Header.Get("Host"); h != "fault-bucket.oss.test:1" {
			t.Errorf("Host %q", h)
		}
	}
}
