package httpstore

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// call sends one request to the metadata URL u and returns the status
// and body.
func call(t *testing.T, method, u string, body io.Reader) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != jsonContentType {
		t.Errorf("%s %s: Content-Type %q", method, u, ct)
	}
	return resp.StatusCode, string(b)
}

func TestServerProtocol(t *testing.T) {
	defer http.DefaultClient.CloseIdleConnections()
	u := serve(t, NewServer())
	k := u + "?key=mooncake%2Fram%2Fn1"
	for _, c := range []struct {
		method, url, body string
		status            int
		want              string
	}{
		{"GET", k, "", 404, "metadata not found"},
		{"DELETE", k, "", 200, "metadata deleted"}, // missing key: still 200
		{"PUT", k, `{"a":1}`, 200, "metadata updated"},
		{"GET", k, "", 200, `{"a":1}`},
		{"GET", u + "?key=mooncake/ram/n1", "", 200, `{"a":1}`}, // same key, unescaped '/'
		{"PUT", k, "", 200, "metadata updated"},                 // an empty value is a value
		{"GET", k, "", 200, ""},
		{"DELETE", k, "", 200, "metadata deleted"},
		{"GET", k, "", 404, "metadata not found"},
		{"GET", u, "", 400, "missing key parameter"},
		{"PUT", u + "?key=", "{}", 400, "missing key parameter"},
		{"DELETE", u + "?other=1", "", 400, "missing key parameter"},
		{"GET", u + "?key=%zz", "", 400, "invalid query"},
	} {
		var body io.Reader
		if c.method == "PUT" {
			body = strings.NewReader(c.body)
		}
		st, got := call(t, c.method, c.url, body)
		if st != c.status || !strings.HasPrefix(got, c.want) {
			t.Fatalf("%s %s: %d %q; want %d %q", c.method, c.url, st, got, c.status, c.want)
		}
	}
}

func TestServerRejectsOtherMethods(t *testing.T) {
	defer http.DefaultClient.CloseIdleConnections()
	u := serve(t, NewServer())
	for _, m := range []string{"POST", "PATCH", "HEAD"} {
		req, _ := http.NewRequest(m, u+"?key=k", strings.NewReader("{}"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, PUT, DELETE" {
			t.Fatalf("%s: %d, Allow %q", m, resp.StatusCode, resp.Header.Get("Allow"))
		}
	}
}

// TestServerRejectsDeclaredOversizedBody sends only the headers of a PUT
// declaring MaxValueSize+1 bytes over a raw connection: the server must
// answer 413 without waiting for the body.
func TestServerRejectsDeclaredOversizedBody(t *testing.T) {
	u := serve(t, NewServer())
	host := strings.TrimSuffix(strings.TrimPrefix(u, "http://"), "/metadata")
	c, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "PUT /metadata?key=big HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n", host, MaxValueSize+1)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), fmt.Sprint(MaxValueSize)) {
		t.Fatalf("status %d %q, want 413 naming the limit", resp.StatusCode, b)
	}
}

// TestServerRejectsStreamedOversizedBody streams a chunked body past a
// small limit: 413, and the key keeps its old value.
func TestServerRejectsStreamedOversizedBody(t *testing.T) {
	defer http.DefaultClient.CloseIdleConnections()
	srv := NewServer()
	srv.maxBody = 1024
	u := serve(t, srv)
	k := u + "?key=k"
	if st, _ := call(t, "PUT", k, strings.NewReader(`"old"`)); st != 200 {
		t.Fatalf("PUT: %d", st)
	}
	// A reader with no Len makes the client send chunked, no Content-Length.
	body := io.MultiReader(bytes.NewReader(bytes.Repeat([]byte("x"), 1025)))
	if st, got := call(t, "PUT", k, body); st != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversized PUT: %d %q, want 413", st, got)
	}
	if st, got := call(t, "GET", k, nil); st != 200 || got != `"old"` {
		t.Fatalf("GET after a refused PUT: %d %q", st, got)
	}
	// Exactly the limit is accepted.
	if st, _ := call(t, "PUT", k, io.MultiReader(bytes.NewReader(bytes.Repeat([]byte("y"), 1024)))); st != 200 {
		t.Fatalf("PUT at the limit: %d", st)
	}
}

// TestStoreAgainstServerLarge round-trips a value near the server's
// limit through the Store.
func TestStoreAgainstServerLarge(t *testing.T) {
	srv := NewServer()
	u := serve(t, srv)
	s := open(t, u, Options{Timeout: 30 * time.Second})
	v := bytes.Repeat([]byte("z"), 4<<20)
	ctx := context.Background()
	if err := s.Put(ctx, "big", v); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "big")
	if err != nil || !bytes.Equal(got, v) {
		t.Fatalf("Get: %d bytes, %v", len(got), err)
	}
	if err := s.Put(ctx, "empty", nil); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, "empty"); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("Get of an empty value: %q (nil %v), %v", got, got == nil, err)
	}
	srv.maxBody = 1 << 20
	err = s.Put(ctx, "big", v)
	wantStoreErr(t, "Put over the server's limit", err, []error{ErrStatus}, "413", `"big"`)
}
