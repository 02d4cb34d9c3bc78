package httpstore

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ferrylabs/ferry/engine/metadata"
	"github.com/ferrylabs/ferry/engine/metadata/storetest"
)

func TestConformance(t *testing.T) {
	u := serve(t, NewServer())
	storetest.Run(t, func(t *testing.T) metadata.Store { return open(t, u, Options{}) })
}

// TestConformanceGivenClient runs the suite with a caller's client and a
// metadata URL that already carries a query parameter.
func TestConformanceGivenClient(t *testing.T) {
	srv := NewServer()
	u := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("token") != "t1" {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		srv.ServeHTTP(w, r)
	}))
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	storetest.Run(t, func(t *testing.T) metadata.Store { return open(t, u+"?token=t1", Options{Client: client}) })
	if srv.Len() == 0 {
		t.Fatal("the suite's keys did not reach the server")
	}
}

// TestWireFormat checks what goes on the wire: the method, the key
// percent-encoded like libcurl's curl_easy_escape, the PUT body and its
// content type.
func TestWireFormat(t *testing.T) {
	type seen struct{ method, rawQuery, ctype, body string }
	got := make(chan seen, 1)
	u := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.URL.RawQuery, r.Header.Get("Content-Type"), string(b)}
		w.Write([]byte(`{"v":1}`))
	}))
	s := open(t, u, Options{})
	key := "mooncake/ram/[::1]:15001 a&b=c+d%~._-節"
	const wantQuery = "key=mooncake%2Fram%2F%5B%3A%3A1%5D%3A15001%20a%26b%3Dc%2Bd%25~._-%E7%AF%80"
	ctx := context.Background()
	if err := s.Put(ctx, key, []byte(`{"x":2}`)); err != nil {
		t.Fatal(err)
	}
	if g := <-got; g != (seen{"PUT", wantQuery, "application/json", `{"x":2}`}) {
		t.Fatalf("PUT on the wire: %+v", g)
	}
	v, err := s.Get(ctx, key)
	if err != nil || string(v) != `{"v":1}` {
		t.Fatalf("Get: %q, %v", v, err)
	}
	if g := <-got; g.method != "GET" || g.rawQuery != wantQuery || g.body != "" {
		t.Fatalf("GET on the wire: %+v", g)
	}
	if err := s.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	if g := <-got; g.method != "DELETE" || g.rawQuery != wantQuery {
		t.Fatalf("DELETE on the wire: %+v", g)
	}
}

func TestServerErrorStatus(t *testing.T) {
	u := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "disk on fire", http.StatusInternalServerError)
	}))
	s := open(t, u, Options{})
	ctx := context.Background()
	_, err := s.Get(ctx, "k/get")
	wantStoreErr(t, "Get", err, []error{ErrStatus}, "500", `"k/get"`, u, "disk on fire")
	err = s.Put(ctx, "k/put", []byte("{}"))
	wantStoreErr(t, "Put", err, []error{ErrStatus}, "500", `"k/put"`, u)
	err = s.Delete(ctx, "k/del")
	wantStoreErr(t, "Delete", err, []error{ErrStatus}, "500", `"k/del"`, u)
}

// TestOtherStatuses: only 200 is a value; 404 is ErrNotFound for Get and
// success for Delete; any 2xx is success for Put and Delete.
func TestOtherStatuses(t *testing.T) {
	var mu sync.Mutex
	status := 0
	u := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		st := status
		mu.Unlock()
		w.WriteHeader(st)
	}))
	set := func(st int) { mu.Lock(); status = st; mu.Unlock() }
	s := open(t, u, Options{})
	ctx := context.Background()

	set(http.StatusNotFound)
	if _, err := s.Get(ctx, "gone"); !errors.Is(err, metadata.ErrNotFound) || errors.Is(err, metadata.ErrStore) {
		t.Fatalf("Get with 404: %v", err)
	}
	if err := s.Delete(ctx, "gone"); err != nil {
		t.Fatalf("Delete with 404: %v", err)
	}
	err := s.Put(ctx, "k", []byte("{}"))
	wantStoreErr(t, "Put with 404", err, []error{ErrStatus}, "404")

	set(http.StatusNoContent)
	if err := s.Put(ctx, "k", []byte("{}")); err != nil {
		t.Fatalf("Put with 204: %v", err)
	}
	if err := s.Delete(ctx, "k"); err != nil {
		t.Fatalf("Delete with 204: %v", err)
	}
	_, err = s.Get(ctx, "k")
	wantStoreErr(t, "Get with 204", err, []error{ErrStatus}, "204")

	set(http.StatusForbidden)
	err = s.Delete(ctx, "k")
	wantStoreErr(t, "Delete with 403", err, []error{ErrStatus}, "403")
}

func TestClosedListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	u := "http://" + addr + "/metadata"
	s := open(t, u, Options{Timeout: 2 * time.Second})
	_, err = s.Get(context.Background(), "mooncake/ram/x")
	wantStoreErr(t, "Get from a closed port", err, nil, `"mooncake/ram/x"`, addr)
	err = s.Put(context.Background(), "mooncake/ram/y", []byte("{}"))
	wantStoreErr(t, "Put to a closed port", err, nil, `"mooncake/ram/y"`, addr)
}

// silentListener accepts connections and never answers.
func silentListener(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return ln.Addr().String()
}

// errWithin runs f and fails the test if it has not returned after limit
// (a hang); it is a bound against hanging, not a speed check.
func errWithin(t *testing.T, limit time.Duration, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		t.Fatalf("no answer after %v", limit)
		return nil
	}
}

func TestSilentServerTimesOut(t *testing.T) {
	addr := silentListener(t)
	s := open(t, "http://"+addr+"/metadata", Options{Timeout: 150 * time.Millisecond})
	for _, op := range []struct {
		name string
		f    func() error
	}{
		{"Get", func() error { _, err := s.Get(context.Background(), "k1"); return err }},
		{"Put", func() error { return s.Put(context.Background(), "k1", []byte("{}")) }},
		{"Delete", func() error { return s.Delete(context.Background(), "k1") }},
	} {
		err := errWithin(t, 10*time.Second, op.f)
		wantStoreErr(t, op.name, err, []error{context.DeadlineExceeded}, `"k1"`, addr, "150ms")
	}
}

// slowServer serves a handler that reads each request and then answers
// nothing until its client goes away (or the test ends), announcing
// arrivals on started. It returns the metadata URL.
func slowServer(t *testing.T, started chan<- struct{}) string {
	stop := make(chan struct{})
	u := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The server notices a gone client only once the body is read.
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case started <- struct{}{}:
		default:
		}
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(func() { close(stop) }) // runs before the server's Close
	return u
}

func TestSlowHandlerTimesOut(t *testing.T) {
	u := slowServer(t, make(chan struct{}, 1))
	s := open(t, u, Options{Timeout: 200 * time.Millisecond})
	err := errWithin(t, 10*time.Second, func() error { _, err := s.Get(context.Background(), "slow"); return err })
	wantStoreErr(t, "Get from a slow server", err, []error{context.DeadlineExceeded}, `"slow"`, u)
}

func TestCallerDeadlineWins(t *testing.T) {
	u := slowServer(t, make(chan struct{}, 1))
	s := open(t, u, Options{Timeout: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err := errWithin(t, 10*time.Second, func() error { return s.Put(ctx, "dl", []byte("{}")) })
	wantStoreErr(t, "Put past the caller's deadline", err, []error{context.DeadlineExceeded}, `"dl"`)
}

func TestContextCancel(t *testing.T) {
	started := make(chan struct{}, 1)
	u := slowServer(t, started)
	s := open(t, u, Options{Timeout: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-started
		cancel()
	}()
	err := errWithin(t, 10*time.Second, func() error { _, err := s.Get(ctx, "cancelled"); return err })
	wantStoreErr(t, "Get cancelled in flight", err, []error{context.Canceled}, `"cancelled"`, u)

	// An already cancelled context sends nothing.
	err = s.Delete(ctx, "before")
	wantStoreErr(t, "Delete with a cancelled context", err, []error{context.Canceled}, `"before"`)
	select {
	case <-started:
		t.Fatal("a request with a cancelled context reached the server")
	default:
	}
}

func TestOpenRejectsBadURLs(t *testing.T) {
	for _, u := range []string{"", "metadata", "ftp://h:1/metadata", "http://", "http:///metadata",
		"http://h:1/metadata#frag", "http://h:1/metadata?key=x", "http://h:1/%zz"} {
		s, err := Open(u, Options{})
		if !errors.Is(err, metadata.ErrBadServer) || !errors.Is(err, metadata.ErrStore) || s != nil {
			t.Errorf("Open(%q) = %v, %v; want ErrBadServer", u, s, err)
		}
	}
	if _, err := Open("http://127.0.0.1:1/metadata", Options{Timeout: -time.Second}); !errors.Is(err, metadata.ErrBadServer) {
		t.Errorf("negative timeout: %v", err)
	}
	// Open sends nothing: a URL nobody listens on opens fine.
	s, err := Open("https://127.0.0.1:1/metadata", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.URL() != "https://127.0.0.1:1/metadata" {
		t.Fatalf("URL() = %q", s.URL())
	}
	s.Close()
}

func TestBadInputSendsNothing(t *testing.T) {
	u := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("unexpected request %s %s", r.Method, r.URL)
	}))
	s := open(t, u, Options{})
	_, err := s.Get(context.Background(), "")
	wantStoreErr(t, "Get of the empty key", err, []error{ErrBadKey})
	err = s.Put(context.Background(), "big", make([]byte, MaxValueSize+1))
	wantStoreErr(t, "Put over the limit", err, []error{ErrTooLarge}, `"big"`, strconv.Itoa(MaxValueSize+1))
	s.Close()
	_, err = s.Get(context.Background(), "k")
	wantStoreErr(t, "Get after Close", err, []error{ErrClosed}, `"k"`)
}

func TestGetRejectsOversizedAnswer(t *testing.T) {
	u := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(MaxValueSize+1))
		w.WriteHeader(http.StatusOK)
		w.Write([]byte("{"))
	}))
	s := open(t, u, Options{})
	_, err := s.Get(context.Background(), "huge")
	wantStoreErr(t, "Get of an oversized value", err, []error{ErrTooLarge}, `"huge"`)
}

// TestPutReleasesValue: the server answers before reading the body, so
// the transport may still be sending it when Put returns. The caller then
// overwrites the value; under -race an unsynchronised read of it after
// Put returned is reported.
func TestPutReleasesValue(t *testing.T) {
	u := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		w.WriteHeader(http.StatusOK)
	}))
	s := open(t, u, Options{})
	value := bytes.Repeat([]byte("v"), 8<<20)
	for range 3 {
		err := s.Put(context.Background(), "early", value)
		if err != nil && !errors.Is(err, metadata.ErrStore) {
			t.Fatalf("Put: %v", err)
		}
		for i := range value {
			value[i] = 'w'
		}
	}
}

// TestCloseReleasesConnections: Close drops the idle keep-alive
// connections of the Store's own client (goleak in TestMain would see
// their goroutines otherwise).
func TestCloseReleasesConnections(t *testing.T) {
	srv := NewServer()
	u := serve(t, srv)
	s, err := Open(u, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(context.Background(), "a", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(context.Background(), "a", []byte(`{}`)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Put after Close: %v", err)
	}
}
