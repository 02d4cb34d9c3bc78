package objstore_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ferrylabs/ferry/offload/objstore"
	. "github.com/ferrylabs/ferry/offload/objstore/objtest"
)

var ctx = context.Background()

// newExec returns an Executor whose Prepare addresses srv path-style
// without signing.
func newExec(t *testing.T, srv *Server, cfg objstore.ExecutorConfig) *objstore.Executor {
	t.Helper()
	u, _ := url.Parse(srv.URL())
	cfg.Prepare = func(req *http.Request, c *objstore.Call, now time.Time) error {
		req.URL = &url.URL{Scheme: "http", Host: u.Host, Opaque: "/b/" + objstore.URIEncode(c.Key, true), RawQuery: c.Query}
		req.Host = u.Host
		return nil
	}
	if cfg.Tuning.MaxConnections == 0 {
		cfg.Tuning.MaxConnections = 4
	}
	e, err := objstore.NewExecutor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func transientStatus(c *objstore.Call, o *objstore.Outcome) bool {
	return o.Err != nil || o.Status == 503
}

func TestRetryPolicyRerunsOnlyTransientEntries(t *testing.T) {
	srv := NewServer(t)
	srv.Route("flaky", Reply(503, ""), Reply(206, "value"))
	srv.Route("denied", Reply(403, ""))
	srv.Route("dropped", CloseConn(), Reply(200, ""))
	srv.Route("down", Reply(503, ""))
	var backoffs []int
	e := newExec(t, srv, objstore.ExecutorConfig{Retry: objstore.RetryPolicy{MaxAttempts: 3, Transient: transientStatus,
		Backoff: func(k int) time.Duration { backoffs = append(backoffs, k); return time.Millisecond }}})
	res := e.GetBatch(ctx, []objstore.GetRequest{{Key: "flaky", Buf: make([]byte, 5)}, {Key: "denied", Buf: make([]byte, 5)},
		{Key: "down", Buf: make([]byte, 5)}})
	if res[0].Err != nil || res[0].N != 5 {
		t.Fatalf("flaky: %v", res[0].Err)
	}
	if !errors.Is(res[1].Err, objstore.ErrReadFail) || !errors.Is(res[2].Err, objstore.ErrReadFail) {
		t.Fatalf("denied %v, down %v", res[1].Err, res[2].Err)
	}
	if srv.Count("flaky") != 2 || srv.Count("denied") != 1 || srv.Count("down") != 3 {
		t.Fatalf("attempts flaky=%d denied=%d down=%d", srv.Count("flaky"), srv.Count("denied"), srv.Count("down"))
	}
	if len(backoffs) != 2 || backoffs[0] != 2 || backoffs[1] != 3 {
		t.Fatalf("backoffs before attempts %v", backoffs)
	}
	if err := e.PutBatch(ctx, []objstore.PutRequest{{Key: "dropped", Bufs: [][]byte{[]byte("ab"), []byte("c")}}})[0]; err != nil {
		t.Fatal(err)
	}
	for _, r := range srv.Requests() {
		if r.Key == "dropped" && string(r.Body) != "abc" {
			t.Fatalf("resent body %q", r.Body)
		}
	}
}

func TestOutcomeRecordsWhetherRequestWasWritten(t *testing.T) {
	srv := NewServer(t)
	srv.Route("k", Reply(206, "v"))
	e := newExec(t, srv, objstore.ExecutorConfig{Retry: objstore.RetryPolicy{MaxAttempts: 2, Transient: transientStatus}})
	c := objstore.Call{Method: "GET", Key: "k", Ranged: true, Buf: make([]byte, 1)}
	o := e.Do(ctx, &c)
	if !o.Wrote || o.Status != 206 || o.N != 1 || o.Attempts != 1 {
		t.Fatalf("%+v", o)
	}
}

func TestDefaultBackoffBounds(t *testing.T) {
	for i := 0; i < 100; i++ {
		if d := objstore.DefaultBackoff(2); d < 100*time.Millisecond || d > 150*time.Millisecond {
			t.Fatal(d)
		}
		if d := objstore.DefaultBackoff(3); d < 200*time.Millisecond || d > 300*time.Millisecond {
			t.Fatal(d)
		}
	}
}

func TestCancelledContextFailsUnadmittedRequests(t *testing.T) {
	srv := NewServer(t)
	srv.Route("k", Reply(206, "v"))
	e := newExec(t, srv, objstore.ExecutorConfig{})
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	res := e.GetBatch(cctx, []objstore.GetRequest{{Key: "k", Buf: make([]byte, 1)}, {Key: "k", Buf: make([]byte, 1)}})
	for _, r := range res {
		if !errors.Is(r.Err, objstore.ErrUnavailable) || !errors.Is(r.Err, context.Canceled) {
			t.Fatal(r.Err)
		}
	}
	if len(srv.Requests()) != 0 {
		t.Fatal("requests sent after cancellation")
	}
}

func TestCloseIsIdempotentAndFailsLaterCalls(t *testing.T) {
	srv := NewServer(t)
	e := newExec(t, srv, objstore.ExecutorConfig{})
	if e.Close() != nil || e.Close() != nil {
		t.Fatal("Close failed")
	}
	_, err := e.GetRange(ctx, "k", make([]byte, 1), 0)
	if !errors.Is(err, objstore.ErrInternal) {
		t.Fatal(err)
	}
}

func TestMetricsCountRequests(t *testing.T) {
	srv := NewServer(t)
	srv.Route("ok", Reply(206, "v"))
	srv.Route("bad", Reply(403, ""))
	reg := prometheus.NewRegistry()
	e := newExec(t, srv, objstore.ExecutorConfig{Name: "test", Registerer: reg})
	newExec(t, srv, objstore.ExecutorConfig{Name: "test", Registerer: reg}) // shares the collectors
	e.GetBatch(ctx, []objstore.GetRequest{{Key: "ok", Buf: make([]byte, 1)}, {Key: "bad", Buf: make([]byte, 1)}, {Key: "ok", Buf: make([]byte, 1)}})
	got := gather(t, reg)
	for series, want := range map[string]float64{
		`ferry_objstore_requests_total{adapter="test",method="GET",outcome="ok"}`:         2,
		`ferry_objstore_requests_total{adapter="test",method="GET",outcome="http_error"}`: 1,
		`ferry_objstore_bytes_total{adapter="test",direction="in"}`:                       2,
		`ferry_objstore_requests_in_flight{adapter="test"}`:                               0,
	} {
		if v, ok := got[series]; !ok || v != want {
			t.Errorf("%s = %v (present %t), want %v", series, v, ok, want)
		}
	}
}

// gather flattens a registry into "name{labels}" -> value, with labels in
// the registry's (sorted) order.
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"=\""+l.GetValue()+"\"")
			}
			v := m.GetCounter().GetValue()
			if m.GetGauge() != nil {
				v = m.GetGauge().GetValue()
			}
			out[mf.GetName()+"{"+strings.Join(ls, ",")+"}"] = v
		}
	}
	return out
}

func TestFileCredentialsReloadOnSIGHUP(t *testing.T) {
	path := filepath.Join(t.TempDir(), "creds")
	write := func(id string) {
		if err := os.WriteFile(path, []byte("OSS_ACCESS_KEY_ID="+id+"\nOSS_ACCESS_KEY_SECRET=s\nSECURITY_TOKEN= tok \n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("one")
	fc, err := objstore.NewFileCredentials(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c := fc.Credentials(); c.AccessKeyID != "one" || c.SessionToken != "tok" {
		t.Fatal(c)
	}
	stop := fc.WatchSIGHUP(ctx)
	defer stop()
	write("two")
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for fc.Credentials().AccessKeyID != "two" {
		if time.Now().After(deadline) {
			t.Fatal("SIGHUP did not reload the credentials")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := os.WriteFile(path, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := fc.Reload(); !errors.Is(err, objstore.ErrInvalidParams) || strings.Contains(err.Error(), "garbage") {
		t.Fatal(err)
	}
	if fc.Credentials().AccessKeyID != "two" {
		t.Fatal("a failed reload replaced the credentials")
	}
	stop()
}
