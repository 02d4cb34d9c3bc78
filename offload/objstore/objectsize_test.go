package objstore_test

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ferrylabs/ferry/offload/objstore"
	. "github.com/ferrylabs/ferry/offload/objstore/objtest"
)

// memExec returns an Executor addressing a MemBucket named "b" behind a
// loopback HTTP server.
func memExec(t *testing.T, cfg objstore.ExecutorConfig) *objstore.Executor {
	t.Helper()
	srv := httptest.NewServer(&MemBucket{Bucket: "b"})
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	cfg.Prepare = func(req *http.Request, c *objstore.Call, now time.Time) error {
		req.URL = &url.URL{Scheme: "http", Host: u.Host, Opaque: "/b/" + objstore.URIEncode(c.Key, true), RawQuery: c.Query}
		req.Host = u.Host
		return nil
	}
	cfg.Tuning.MaxConnections = 4
	e, err := objstore.NewExecutor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// guarded returns a buffer of n bytes whose backing array continues with
// guard bytes, and a check that the guard is intact.
func guarded(t *testing.T, n int) ([]byte, func()) {
	full := bytes.Repeat([]byte{0xEE}, n+16)
	return full[:n:n], func() {
		t.Helper()
		for _, b := range full[n:] {
			if b != 0xEE {
				t.Fatalf("bytes written past the %d-byte buffer: % x", n, full[n:])
			}
		}
	}
}

func wantSizeError(t *testing.T, err error, stored, want string) {
	t.Helper()
	if objstore.CodeOf(err) != objstore.CodeInvalidParams || !errors.Is(err, objstore.ErrObjectSize) {
		t.Fatalf("err = %v; want INVALID_PARAMS matching ErrObjectSize", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, " "+stored+" bytes") || !strings.Contains(msg, "expected "+want) {
		t.Fatalf("error %q does not name stored size %s and expected size %s", msg, stored, want)
	}
}

func TestWholeObjectReadChecksStoredSize(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  objstore.ExecutorConfig
	}{
		{"single", objstore.ExecutorConfig{}},
		{"split", objstore.ExecutorConfig{SplitThreshold: 4, SplitPartSize: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := memExec(t, tc.cfg)
			data := []byte("0123456789")
			if err := e.PutV(ctx, "ten", [][]byte{data}); err != nil {
				t.Fatal(err)
			}
			if err := e.PutV(ctx, "six", [][]byte{data[:6]}); err != nil {
				t.Fatal(err)
			}

			short, check := guarded(t, 8)
			r := e.GetBatch(ctx, []objstore.GetRequest{{Key: "ten", Buf: short, WholeObject: true}})
			wantSizeError(t, r[0].Err, "10", "8")
			check()

			whole := make([]byte, 10)
			r = e.GetBatch(ctx, []objstore.GetRequest{{Key: "ten", Buf: whole, WholeObject: true}})
			if r[0].Err != nil || r[0].N != 10 || !bytes.Equal(whole, data) {
				t.Fatalf("whole read of 10 as 10: n=%d err=%v data %q", r[0].N, r[0].Err, whole)
			}

			long, check := guarded(t, 8)
			r = e.GetBatch(ctx, []objstore.GetRequest{{Key: "six", Buf: long, WholeObject: true}})
			wantSizeError(t, r[0].Err, "6", "8")
			check()

			// A range of a larger object is not a whole-object read.
			part, check := guarded(t, 8)
			n, err := e.GetRange(ctx, "ten", part, 0)
			if err != nil || n != 8 || !bytes.Equal(part, data[:8]) {
				t.Fatalf("GetRange 8 of 10: n=%d err=%v data %q", n, err, part)
			}
			check()
			r = e.GetBatch(ctx, []objstore.GetRequest{{Key: "ten", Buf: make([]byte, 8)}})
			if r[0].Err != nil || r[0].N != 8 {
				t.Fatalf("plain GetBatch 8 of 10: %+v", r[0])
			}
		})
	}
}

func TestWholeObjectReadRejectsOffset(t *testing.T) {
	srv := NewServer(t)
	e := newExec(t, srv, objstore.ExecutorConfig{})
	r := e.GetBatch(ctx, []objstore.GetRequest{{Key: "k", Buf: make([]byte, 4), Off: 2, WholeObject: true}})
	if objstore.CodeOf(r[0].Err) != objstore.CodeInvalidParams || !strings.Contains(r[0].Err.Error(), "offset 2") {
		t.Fatalf("err = %v; want INVALID_PARAMS naming offset 2", r[0].Err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d requests sent for a rejected read", n)
	}
}

func TestWholeObjectReadSizeFromReplyHeaders(t *testing.T) {
	srv := NewServer(t)
	srv.Route("cr206", Reply(206, "01234567", "Content-Range: bytes 0-7/10"))
	srv.Route("cl200", Reply(200, "0123456789"))
	srv.Route("empty416", Reply(416, "<Error><Code>InvalidRange</Code></Error>", "Content-Range: bytes */0"))
	srv.Route("star206", Reply(206, "01234567", "Content-Range: bytes 0-7/*"))
	srv.Route("bare206", Reply(206, "01234567"))
	srv.Route("plain206", Reply(206, "01234567", "Content-Range: bytes 0-7/10"))
	e := newExec(t, srv, objstore.ExecutorConfig{})
	bufs := make([][]byte, 6)
	checks := make([]func(), 6)
	for i := range bufs {
		bufs[i], checks[i] = guarded(t, 8)
	}
	r := e.GetBatch(ctx, []objstore.GetRequest{
		{Key: "cr206", Buf: bufs[0], WholeObject: true},
		{Key: "cl200", Buf: bufs[1], WholeObject: true},
		{Key: "empty416", Buf: bufs[2], WholeObject: true},
		{Key: "star206", Buf: bufs[3], WholeObject: true},
		{Key: "bare206", Buf: bufs[4], WholeObject: true},
		{Key: "plain206", Buf: bufs[5]},
	})
	wantSizeError(t, r[0].Err, "10", "8")
	wantSizeError(t, r[1].Err, "10", "8")
	wantSizeError(t, r[2].Err, "0", "8")
	var oe *objstore.Error
	if !errors.As(r[2].Err, &oe) || oe.Status != 416 {
		t.Fatalf("416 error lost its status: %+v", oe)
	}
	// No stated size: the usual 206 checks decide.
	for i := 3; i < 6; i++ {
		if r[i].Err != nil || r[i].N != 8 {
			t.Fatalf("request %d: %+v", i, r[i])
		}
	}
	for _, c := range checks {
		c()
	}
}
