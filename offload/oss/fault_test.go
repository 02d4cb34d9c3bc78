package oss

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ferrylabs/ferry/offload/objstore"
	. "github.com/ferrylabs/ferry/offload/objstore/objtest"
)

const truncated206 = "HTTP/1.1 206 Partial Content\r\nContent-Length: 5\r\nConnection: close\r\n\r\nab"

// longKey is a logical key whose physical key exceeds OSS's limit, the Go
// counterpart of the reference's invalid pointers: rejected locally.
func longKey(tag string) string { return strings.Repeat("k", MaxKeyLength) + tag }

type getCase struct {
	key  string
	want objstore.Code
	data string
}

// mixedFault starts a two-connection fault server for a mixed batch:
// "waiting" stalls (stallWaiting) or answers ok once the held responses
// are released; "missing" is 404, "reset" a TCP reset, "forbidden" 403.
// timeout > 0 shortens the adapter's request timeout.
func mixedFault(t *testing.T, stallWaiting bool, timeout time.Duration, ok Action) (*Server, *Adapter) {
	t.Helper()
	opts := []func(*Options){}
	if timeout > 0 {
		opts = append(opts, shortTimeout(timeout))
	}
	srv, a := newFault(t, 2, opts...)
	if stallWaiting {
		srv.Route("waiting", Stall())
	} else {
		srv.Route("waiting", Gate(ok))
	}
	srv.Route("missing", Reply(404, ""))
	srv.Route("reset", Reset())
	srv.Route("forbidden", Reply(403, ""))
	return srv, a
}

// runGated runs batch in the background, fails t unless "tail" reaches
// the server while "waiting" is held, then releases the held responses
// and waits for batch to return.
func runGated(t *testing.T, srv *Server, batch func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); batch() }()
	if !srv.WaitForRequest("tail", 10*time.Second) {
		srv.ReleaseResponses()
		<-done
		t.Fatal("tail was not admitted while waiting was pending")
	}
	srv.ReleaseResponses()
	<-done
}

func mixedGetBatch(t *testing.T, stallWaiting bool, timeout time.Duration) {
	srv, a := mixedFault(t, stallWaiting, timeout, Reply(206, "first"))
	srv.Route("large-error", Reply(404, strings.Repeat("e", 512)))
	srv.Route("truncated", Raw(truncated206))
	srv.Route("short", Reply(206, "abc"))
	srv.Route("oversized", Reply(206, "12345678"))
	srv.Route("unavailable", Reply(503, "abcde"))
	srv.Route("tail", Reply(206, "later"))
	waitWant := getCase{"waiting", objstore.CodeOK, "first"}
	if stallWaiting {
		waitWant = getCase{"waiting", objstore.CodeDFSServiceUnavailable, ""}
	}
	cases := []getCase{
		{"invalid-first", objstore.CodeInvalidParams, ""},
		waitWant,
		{"missing", objstore.CodeFileNotFound, ""},
		{"empty", objstore.CodeOK, ""},
		{"reset", objstore.CodeDFSServiceUnavailable, ""},
		{"large-error", objstore.CodeFileNotFound, ""},
		{"forbidden", objstore.CodeFileReadFail, ""},
		{"truncated", objstore.CodeDFSServiceUnavailable, ""},
		{"short", objstore.CodeFileReadFail, ""},
		{"oversized", objstore.CodeDFSServiceUnavailable, ""},
		{"unavailable", objstore.CodeFileReadFail, ""},
		{"tail", objstore.CodeOK, "later"},
		{"invalid-last", objstore.CodeInvalidParams, ""},
	}
	guards := make([]*guarded, len(cases))
	reqs := make([]objstore.GetRequest, len(cases))
	for i, c := range cases {
		guards[i] = newGuarded()
		reqs[i] = objstore.GetRequest{Key: c.key, Buf: guards[i].buf()}
		switch c.key {
		case "invalid-first", "invalid-last":
			reqs[i].Off = -1
		case "empty":
			reqs[i].Buf = nil
		}
	}
	start := time.Now()
	var res []objstore.GetResult
	runGated(t, srv, func() { res = a.GetBatch(ctx, reqs) })
	elapsed := time.Since(start)
	for i, c := range cases {
		wantCode(t, c.key, res[i].Err, c.want)
		guards[i].check(t)
		if c.want == objstore.CodeOK && string(reqs[i].Buf[:res[i].N]) != c.data {
			t.Errorf("%s: got %q (n=%d), want %q", c.key, reqs[i].Buf[:res[i].N], res[i].N, c.data)
		}
	}
	if n := len(srv.Requests()); n != 10 {
		t.Errorf("%d wire requests, want 10", n)
	}
	for _, c := range cases {
		want := 1
		if strings.HasPrefix(c.key, "invalid") || c.key == "empty" {
			want = 0
		}
		if got := srv.Count(c.key); got != want {
			t.Errorf("key %s sent %d times, want %d", c.key, got, want)
		}
	}
	if errs := srv.Errors(); len(errs) > 0 {
		t.Errorf("server errors: %v", errs)
	}
	if stallWaiting && timeout >= 100*time.Second && (elapsed < 110*time.Second || elapsed >= 130*time.Second) {
		t.Errorf("batch took %v, want [110s, 130s)", elapsed)
	}
	// A follow-up batch on the same adapter succeeds.
	srv.Route("again", Reply(206, "again"))
	g := newGuarded()
	r2 := a.GetBatch(ctx, []objstore.GetRequest{{Key: "again", Buf: g.buf()}})
	wantCode(t, "follow-up", r2[0].Err, objstore.CodeOK)
	g.check(t)
}

func TestMixedGetBatchRefillsWhileFirstRequestWaits(t *testing.T) { mixedGetBatch(t, false, 0) }

func TestMixedGetBatchIsolatesRequestTimeout(t *testing.T) {
	if slowTests() {
		mixedGetBatch(t, true, 0)
		return
	}
	mixedGetBatch(t, true, 300*time.Millisecond)
}

func mixedPutBatch(t *testing.T, stallWaiting bool, timeout time.Duration) {
	srv, a := mixedFault(t, stallWaiting, timeout, Reply(200, ""))
	srv.Route("unavailable", Reply(503, ""))
	srv.Route("empty", Reply(200, ""))
	srv.Route("tail", Reply(200, ""))
	iov := [][]byte{[]byte("left"), nil, []byte("right")}
	type pc struct {
		key  string
		want objstore.Code
	}
	waitWant := objstore.CodeOK
	if stallWaiting {
		waitWant = objstore.CodeDFSServiceUnavailable
	}
	cases := []pc{
		{longKey("negative-count"), objstore.CodeInvalidParams},
		{"waiting", waitWant},
		{"missing", objstore.CodeFileWriteFail},
		{longKey("null-array"), objstore.CodeInvalidParams},
		{"reset", objstore.CodeDFSServiceUnavailable},
		{longKey("overflow"), objstore.CodeInvalidParams},
		{"forbidden", objstore.CodeFileWriteFail},
		{longKey("bad-base"), objstore.CodeInvalidParams},
		{"unavailable", objstore.CodeFileWriteFail},
		{"empty", objstore.CodeOK},
		{"tail", objstore.CodeOK},
	}
	reqs := make([]objstore.PutRequest, len(cases))
	for i, c := range cases {
		reqs[i] = objstore.PutRequest{Key: c.key, Bufs: iov}
		if c.key == "empty" {
			reqs[i].Bufs = nil
		}
	}
	var res []error
	runGated(t, srv, func() { res = a.PutBatch(ctx, reqs) })
	for i, c := range cases {
		wantCode(t, c.key[max(0, len(c.key)-16):], res[i], c.want)
	}
	wire := srv.Requests()
	if len(wire) != 7 {
		t.Fatalf("%d wire PUTs, want 7", len(wire))
	}
	for _, r := range wire {
		want := "leftright"
		if r.Key == "empty" {
			want = ""
		}
		if r.Method != "PUT" || string(r.Body) != want {
			t.Errorf("%s %s body %q, want %q", r.Method, r.Key, r.Body, want)
		}
		lw := strings.ToLower(r.Wire)
		for _, banned := range []string{"\r\ncontent-type:", "\r\nexpect:", "\r\ndate:", "\r\nauthorization:", "\r\nidempotency-key:"} {
			if strings.Contains(lw, banned) {
				t.Errorf("%s carries %q", r.Key, banned)
			}
		}
		for _, need := range []string{"x-oss-content-sha256: UNSIGNED-PAYLOAD", "x-oss-security-token: fault-test-token"} {
			if !hasHeader(r.Wire, need) {
				t.Errorf("%s lacks %q", r.Key, need)
			}
		}
		if !strings.HasPrefix(r.Wire, "PUT /fault-bucket/test-prefix/"+r.Key+" HTTP/1.1\r\n") {
			t.Errorf("request line %q", strings.SplitN(r.Wire, "\r\n", 2)[0])
		}
	}
}

func TestMixedPutBatchRefillsWhileFirstRequestWaits(t *testing.T) { mixedPutBatch(t, false, 0) }

func TestMixedPutBatchIsolatesRequestTimeout(t *testing.T) {
	if slowTests() {
		mixedPutBatch(t, true, 0)
		return
	}
	mixedPutBatch(t, true, 300*time.Millisecond)
}

func TestBatchConnectionLimitAppliesToGetAndPut(t *testing.T) {
	for _, put := range []bool{false, true} {
		for _, limit := range []int{1, 2, 4} {
			t.Run(fmt.Sprintf("put=%t/limit=%d", put, limit), func(t *testing.T) {
				srv, a := newFault(t, limit)
				for i := 0; i < 6; i++ {
					if put {
						srv.Route(fmt.Sprint("k", i), Gate(Reply(200, "")))
					} else {
						srv.Route(fmt.Sprint("k", i), Gate(Reply(206, "value")))
					}
				}
				var gets []objstore.GetRequest
				var puts []objstore.PutRequest
				for i := 0; i < 6; i++ {
					gets = append(gets, objstore.GetRequest{Key: fmt.Sprint("k", i), Buf: make([]byte, 5)})
					puts = append(puts, objstore.PutRequest{Key: fmt.Sprint("k", i), Bufs: [][]byte{[]byte("v")}})
				}
				var errs []error
				done := make(chan struct{})
				go func() {
					defer close(done)
					if put {
						errs = a.PutBatch(ctx, puts)
					} else {
						for _, r := range a.GetBatch(ctx, gets) {
							errs = append(errs, r.Err)
						}
					}
				}()
				ok := srv.WaitForRequests(limit, 5*time.Second)
				extra := srv.WaitForRequests(limit+1, 200*time.Millisecond)
				srv.ReleaseResponses()
				<-done
				if !ok {
					t.Fatalf("fewer than %d requests arrived", limit)
				}
				if extra {
					t.Fatalf("request %d arrived while %d were held", limit+1, limit)
				}
				for i, err := range errs {
					wantCode(t, fmt.Sprint("k", i), err, objstore.CodeOK)
				}
				if n := len(srv.Requests()); n != 6 {
					t.Fatalf("%d requests, want 6", n)
				}
			})
		}
	}
}

func getOnce(t *testing.T, a *Adapter, key string, want objstore.Code, data string) {
	t.Helper()
	g := newGuarded()
	n, err := a.Get(ctx, key, g.buf())
	wantCode(t, key, err, want)
	g.check(t)
	if want == objstore.CodeOK && string(g.buf()[:n]) != data {
		t.Fatalf("%s: got %q, want %q", key, g.buf()[:n], data)
	}
}

func TestFaultResetAndPartialHeaderFailThenSameAdapterRecovers(t *testing.T) {
	srv, a := newFault(t, 8)
	srv.Route("reset", Reset())
	srv.Route("partial", Raw("HTTP/1.1 206 Partial Content\r\nContent-Len"))
	srv.Route("healthy", Reply(206, "value"))
	getOnce(t, a, "reset", objstore.CodeDFSServiceUnavailable, "")
	getOnce(t, a, "healthy", objstore.CodeOK, "value")
	g := newGuarded()
	_, err := a.Get(ctx, "partial", g.buf())
	if c := objstore.CodeOf(err); c != objstore.CodeDFSServiceUnavailable && c != objstore.CodeFileReadFail {
		t.Fatalf("partial header: %v", err)
	}
	g.check(t)
	getOnce(t, a, "healthy", objstore.CodeOK, "value")
}

func TestFaultTruncatedBodyFailsThenSameAdapterRecovers(t *testing.T) {
	srv, a := newFault(t, 8)
	srv.Route("truncated", Raw(truncated206))
	srv.Route("healthy", Reply(206, "value"))
	getOnce(t, a, "truncated", objstore.CodeDFSServiceUnavailable, "")
	getOnce(t, a, "healthy", objstore.CodeOK, "value")
}

func TestFaultRangeShortReadAndHttpErrorAreRejectedThenRecovers(t *testing.T) {
	srv, a := newFault(t, 8)
	srv.Route("clipped", Reply(206, "abc"))
	srv.Route("range-error", Reply(416, ""))
	srv.Route("healthy", Reply(206, "later"))
	for _, c := range []getCase{{"clipped", objstore.CodeFileReadFail, ""}, {"range-error", objstore.CodeFileReadFail, ""},
		{"healthy", objstore.CodeOK, "later"}} {
		g := newGuarded()
		n, err := a.GetRange(ctx, c.key, g.buf(), 5)
		wantCode(t, c.key, err, c.want)
		g.check(t)
		if c.want == objstore.CodeOK && string(g.buf()[:n]) != c.data {
			t.Fatalf("got %q", g.buf()[:n])
		}
	}
	for _, r := range srv.Requests() {
		if !hasHeader(r.Wire, "Range: bytes=5-9") || !hasHeader(r.Wire, "x-oss-range-behavior: standard") {
			t.Errorf("request %s lacks the range headers:\n%s", r.Key, r.Wire)
		}
	}
}

func TestFaultShortReadAndHttpErrorAreRejectedByDirectAndBatchGet(t *testing.T) {
	srv, a := newFault(t, 8)
	cases := []struct {
		key    string
		action Action
		want   objstore.Code
	}{
		{"ok200short", Reply(200, "val"), objstore.CodeFileReadFail},
		{"ok206short", Reply(206, "val"), objstore.CodeFileReadFail},
		{"range416", Reply(416, "error"), objstore.CodeFileReadFail},
		{"full200", Reply(200, "value"), objstore.CodeFileReadFail},
		{"full206", Reply(206, "value"), objstore.CodeOK},
	}
	for _, c := range cases {
		srv.Route(c.key, c.action)
	}
	for _, c := range cases {
		getOnce(t, a, c.key, c.want, "value")
		g := newGuarded()
		r := a.GetBatch(ctx, []objstore.GetRequest{{Key: c.key, Buf: g.buf()}})
		wantCode(t, c.key+" (batch)", r[0].Err, c.want)
		g.check(t)
	}
}

func TestConcurrentSyncBatchesDoNotWaitForSharedMultiHandle(t *testing.T) {
	srv, a := newFault(t, 1)
	srv.Route("blocked", Gate(Reply(206, "value")))
	srv.Route("free", Reply(206, "value"))
	doneA := make(chan []objstore.GetResult, 1)
	go func() { doneA <- a.GetBatch(ctx, []objstore.GetRequest{{Key: "blocked", Buf: make([]byte, 5)}}) }()
	if !srv.WaitForRequest("blocked", 5*time.Second) {
		t.Fatal("batch A never sent")
	}
	doneB := make(chan []objstore.GetResult, 1)
	go func() { doneB <- a.GetBatch(ctx, []objstore.GetRequest{{Key: "free", Buf: make([]byte, 5)}}) }()
	select {
	case r := <-doneB:
		wantCode(t, "batch B", r[0].Err, objstore.CodeOK)
	case <-time.After(2 * time.Second):
		srv.ReleaseResponses()
		<-doneA
		<-doneB
		t.Fatal("batch B waited for batch A")
	}
	srv.ReleaseResponses()
	wantCode(t, "batch A", (<-doneA)[0].Err, objstore.CodeOK)
}

func TestFaultBatchErrorsRemainIsolatedAndNextBatchRecovers(t *testing.T) {
	srv, a := newFault(t, 8)
	srv.Route("healthy", Reply(206, "value"))
	srv.Route("reset", Reset())
	srv.Route("truncated", Raw(truncated206))
	srv.Route("forbidden", Reply(403, ""))
	srv.Route("unavailable", Reply(503, ""))
	keys := []string{"healthy", "reset", "truncated", "forbidden", "unavailable"}
	want := []objstore.Code{objstore.CodeOK, objstore.CodeDFSServiceUnavailable, objstore.CodeDFSServiceUnavailable,
		objstore.CodeFileReadFail, objstore.CodeFileReadFail}
	guards := make([]*guarded, len(keys))
	var reqs []objstore.GetRequest
	for i, k := range keys {
		guards[i] = newGuarded()
		reqs = append(reqs, objstore.GetRequest{Key: k, Buf: guards[i].buf()})
	}
	for i, r := range a.GetBatch(ctx, reqs) {
		wantCode(t, keys[i], r.Err, want[i])
		guards[i].check(t)
	}
	srv.Route("next1", Reply(206, "value"))
	srv.Route("next2", Reply(206, "value"))
	for _, r := range a.GetBatch(ctx, []objstore.GetRequest{{Key: "next1", Buf: make([]byte, 5)}, {Key: "next2", Buf: make([]byte, 5)}}) {
		wantCode(t, "next", r.Err, objstore.CodeOK)
	}
}

func TestFaultBatchPutFailureDoesNotPoisonNextUpload(t *testing.T) {
	srv, a := newFault(t, 8)
	payload := bytes.Repeat([]byte("0123456789abcdef"), 1024)
	srv.Route("ok", Reply(200, ""))
	srv.Route("unavailable", Reply(503, ""))
	srv.Route("reset", Reset())
	srv.Route("next", Reply(200, ""))
	res := a.PutBatch(ctx, []objstore.PutRequest{{Key: "ok", Bufs: [][]byte{payload}},
		{Key: "unavailable", Bufs: [][]byte{payload}}, {Key: "reset", Bufs: [][]byte{payload}}})
	wantCode(t, "ok", res[0], objstore.CodeOK)
	wantCode(t, "unavailable", res[1], objstore.CodeFileWriteFail)
	wantCode(t, "reset", res[2], objstore.CodeDFSServiceUnavailable)
	wantCode(t, "next", a.PutBatch(ctx, []objstore.PutRequest{{Key: "next", Bufs: [][]byte{payload}}})[0], objstore.CodeOK)
	for _, r := range srv.Requests() {
		if !bytes.Equal(r.Body, payload) {
			t.Errorf("%s body differs (%d bytes)", r.Key, len(r.Body))
		}
	}
}

func TestBatchReusedConnectionPutRewindsIovecsForRetry(t *testing.T) {
	srv, a := newFault(t, 1)
	srv.Script(KeepAlive(Reply(200, "")), CloseConn(), Reply(200, ""))
	a20, b12 := bytes.Repeat([]byte("a"), 20<<10), bytes.Repeat([]byte("b"), 12<<10)
	res := a.PutBatch(ctx, []objstore.PutRequest{{Key: "warmup", Bufs: [][]byte{[]byte("w")}},
		{Key: "payload", Bufs: [][]byte{a20, nil, b12}}})
	wantCode(t, "warmup", res[0], objstore.CodeOK)
	wantCode(t, "payload", res[1], objstore.CodeOK)
	wire := srv.Requests()
	if len(wire) != 3 {
		t.Fatalf("%d wire requests, want 3", len(wire))
	}
	if !strings.HasPrefix(wire[0].Wire, "PUT /fault-bucket/test-prefix/warmup HTTP/1.1\r\n") {
		t.Errorf("warmup request line: %q", strings.SplitN(wire[0].Wire, "\r\n", 2)[0])
	}
	if wire[0].Conn != wire[1].Conn || wire[2].Conn == wire[1].Conn {
		t.Errorf("connections %d,%d,%d: want the payload first on the reused one, then a fresh one",
			wire[0].Conn, wire[1].Conn, wire[2].Conn)
	}
	full := append(append([]byte(nil), a20...), b12...)
	for _, r := range wire[1:] {
		if r.Key != "payload" || !bytes.Equal(r.Body, full) {
			t.Errorf("%s body %d bytes, want the full %d", r.Key, len(r.Body), len(full))
		}
	}
}

func TestFaultRequestTimeoutThenSameAdapterRecovers(t *testing.T) {
	timeout := 300 * time.Millisecond
	if slowTests() {
		timeout = 0
	}
	srv, a := newFault(t, 8, shortTimeout(timeout))
	srv.Route("stalled", Stall())
	srv.Route("healthy", Reply(206, "value"))
	start := time.Now()
	getOnce(t, a, "stalled", objstore.CodeDFSServiceUnavailable, "")
	if el := time.Since(start); slowTests() && (el < 110*time.Second || el >= 130*time.Second) {
		t.Errorf("timeout after %v, want [110s, 130s)", el)
	}
	getOnce(t, a, "healthy", objstore.CodeOK, "value")
}

func TestBatchQueueDoesNotConsumeRequestTimeout(t *testing.T) {
	timeout := 400 * time.Millisecond
	if slowTests() {
		timeout = 0
	}
	srv, a := newFault(t, 1, shortTimeout(timeout))
	srv.Route("stalled", Stall())
	// healthy is admitted only after stalled used up a whole timeout; it
	// succeeds only if its clock starts at admission, not at batch start.
	srv.Route("healthy", Reply(206, "value"))
	res := a.GetBatch(ctx, []objstore.GetRequest{{Key: "stalled", Buf: make([]byte, 5)}, {Key: "healthy", Buf: make([]byte, 5)}})
	wantCode(t, "stalled", res[0].Err, objstore.CodeDFSServiceUnavailable)
	wantCode(t, "healthy", res[1].Err, objstore.CodeOK)
	if n := len(srv.Requests()); n != 2 {
		t.Fatalf("%d wire requests, want 2", n)
	}
}

func TestValidatesVectorAndRangeArguments(t *testing.T) {
	a := New(Options{Lookup: objstore.MapLookup(nil), Prefix: "p"}) // never initialised
	defer a.Close()
	wantCode(t, "PutV long key", a.PutV(ctx, longKey("x"), [][]byte{[]byte("a")}), objstore.CodeInvalidParams)
	_, err := a.GetRange(ctx, "k", make([]byte, 4), -1)
	wantCode(t, "GetRange negative offset", err, objstore.CodeInvalidParams)
	_, err = a.GetRange(ctx, "k", make([]byte, 4), 1<<63-2)
	wantCode(t, "GetRange overflow", err, objstore.CodeInvalidParams)
	_, err = a.GetV(ctx, "k", [][]byte{make([]byte, 2)}, -5)
	wantCode(t, "GetV negative offset", err, objstore.CodeInvalidParams)
	res := a.PutBatch(ctx, []objstore.PutRequest{{Key: longKey("1")}, {Key: longKey("2")}, {Key: longKey("3")}, {Key: longKey("4")}, {Key: "fine"}})
	for i := 0; i < 4; i++ {
		wantCode(t, "PutBatch entry", res[i], objstore.CodeInvalidParams)
	}
	wantCode(t, "PutBatch valid entry before Init", res[4], objstore.CodeInternalError)
	_, err = a.Get(ctx, "k", make([]byte, 4))
	wantCode(t, "Get before Init", err, objstore.CodeInternalError)
	_, err = a.Exists(ctx, "k")
	wantCode(t, "Exists before Init", err, objstore.CodeInternalError)
	gr := a.GetBatch(ctx, []objstore.GetRequest{{Key: "k", Buf: make([]byte, 1), Off: -1}, {Key: "k"}, {Key: "k", Buf: make([]byte, 1)}})
	wantCode(t, "GetBatch invalid", gr[0].Err, objstore.CodeInvalidParams)
	wantCode(t, "GetBatch empty", gr[1].Err, objstore.CodeOK)
	wantCode(t, "GetBatch before Init", gr[2].Err, objstore.CodeInternalError)
}

func TestRejectsIgnoredRangeResponse(t *testing.T) {
	srv, a := newFault(t, 8)
	srv.Route("ignored", Reply(200, "abcd"))
	_, err := a.GetRange(ctx, "ignored", make([]byte, 4), 2)
	wantCode(t, "ignored range", err, objstore.CodeFileReadFail)
	w := srv.Requests()[0].Wire
	if !hasHeader(w, "Range: bytes=2-5") || !hasHeader(w, "x-oss-range-behavior: standard") {
		t.Fatalf("wire lacks range headers:\n%s", w)
	}
}

func TestBatchRejectsIgnoredRangeResponseThenRecovers(t *testing.T) {
	srv, a := newFault(t, 1)
	srv.Script(Reply(200, "abcd"), Reply(206, "abcd"), Reply(206, "abcd"))
	res := a.GetBatch(ctx, []objstore.GetRequest{{Key: "a", Buf: make([]byte, 4)}, {Key: "b", Buf: make([]byte, 4)}})
	wantCode(t, "first", res[0].Err, objstore.CodeFileReadFail)
	wantCode(t, "second", res[1].Err, objstore.CodeOK)
	res = a.GetBatch(ctx, []objstore.GetRequest{{Key: "c", Buf: make([]byte, 4)}})
	wantCode(t, "third", res[0].Err, objstore.CodeOK)
	for _, r := range srv.Requests() {
		if !hasHeader(r.Wire, "Range: bytes=0-3") || !hasHeader(r.Wire, "x-oss-range-behavior: standard") {
			t.Errorf("%s lacks range headers", r.Key)
		}
	}
}

func TestClearsHeadersAtResponseBoundaries(t *testing.T) {
	srv, a := newFault(t, 8)
	srv.Route("hinted", Raw("HTTP/1.1 103 Early Hints\r\nContent-Length: 123\r\n\r\nHTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"))
	_, err := a.GetSize(ctx, "hinted")
	wantCode(t, "GetSize", err, objstore.CodeFileReadFail)
}

func TestDecodesPaginatedLogicalKeys(t *testing.T) {
	srv, a := newFault(t, 8)
	page := func(key, extra string) string {
		return `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Contents><Key>` + key +
			`</Key><Size>7</Size></Contents>` + extra + `</ListBucketResult>`
	}
	srv.Script(Reply(200, page("test-prefix%2Falpha%252Fbeta", "<IsTruncated>true</IsTruncated><NextContinuationToken>next%2Btoken</NextContinuationToken>")),
		Reply(200, page("test-prefix%2Fpercent%2525value", "<IsTruncated>false</IsTruncated>")))
	keys, err := a.ListKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 || keys[0] != (objstore.KeyInfo{Key: "alpha/beta", Size: 7}) || keys[1] != (objstore.KeyInfo{Key: "percent%value", Size: 7}) {
		t.Fatalf("keys %+v", keys)
	}
	w := srv.Requests()
	if len(w) != 2 || !strings.Contains(w[0].Target, "prefix=test-prefix%2F") || !strings.Contains(w[1].Target, "continuation-token=next%2Btoken") {
		t.Fatalf("targets: %q", []string{w[0].Target, w[len(w)-1].Target})
	}
}

func TestListRejectsBadPages(t *testing.T) {
	for name, action := range map[string]Action{
		"status":             Reply(500, ""),
		"malformed":          Reply(200, "<ListBucketResult><Contents><Key>x</Key></Contents>"),
		"outside prefix":     Reply(200, "<ListBucketResult><Contents><Key>other%2Fx</Key><Size>1</Size></Contents><IsTruncated>false</IsTruncated></ListBucketResult>"),
		"truncated no token": Reply(200, "<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>"),
	} {
		t.Run(name, func(t *testing.T) {
			srv, a := newFault(t, 8)
			srv.Script(action)
			_, err := a.ListKeys(ctx)
			wantCode(t, name, err, objstore.CodeFileReadFail)
		})
	}
}

func healthCheck(t *testing.T, get Action, want objstore.Code) {
	srv, a := newFault(t, 8)
	srv.Script(Reply(200, ""), get, Reply(204, ""))
	wantCode(t, "CheckHealth", a.CheckHealth(ctx), want)
	w := srv.Requests()
	var methods []string
	for _, r := range w {
		methods = append(methods, r.Method)
	}
	if strings.Join(methods, ",") != "PUT,GET,DELETE" {
		t.Fatalf("wire methods %v", methods)
	}
	if !strings.Contains(w[0].Target, "/fault-bucket/test-prefix/.mooncake_health_probe_") || string(w[0].Body) != "health_check" {
		t.Fatalf("probe PUT %q body %q", w[0].Target, w[0].Body)
	}
	if !hasHeader(w[1].Wire, "Range: bytes=0-11") || w[1].Target != w[0].Target || w[2].Target != w[0].Target {
		t.Fatalf("probe GET/DELETE do not address the probe")
	}
}

func TestHealthCheckWritesReadsAndDeletesProbe(t *testing.T) {
	healthCheck(t, Reply(206, "health_check"), objstore.CodeOK)
}

func TestHealthCheckCleansUpAfterReadMismatch(t *testing.T) {
	healthCheck(t, Reply(206, "wrong_health"), objstore.CodeDFSServiceUnavailable)
}

func TestDirectGetPreservesNotFoundWithOversizedErrorBody(t *testing.T) {
	srv, a := newFault(t, 8)
	body := "<Error><Code>NoSuchKey</Code>" + strings.Repeat(" ", 512) + "</Error>"
	srv.Route("gone", Reply(404, body))
	srv.Route("healthy", Reply(206, "value"))
	getOnce(t, a, "gone", objstore.CodeFileNotFound, "")
	getOnce(t, a, "healthy", objstore.CodeOK, "value")
}

func TestGetRangeAndBatchDistinguishNotFoundFromTransferFailures(t *testing.T) {
	srv, a := newFault(t, 8)
	cases := []struct {
		key    string
		action Action
		want   objstore.Code
	}{
		{"nf-large", Reply(404, strings.Repeat("x", 512)), objstore.CodeFileNotFound},
		{"nf-truncated", Raw("HTTP/1.1 404 Not Found\r\nContent-Length: 5\r\nConnection: close\r\n\r\nab"), objstore.CodeDFSServiceUnavailable},
		{"unavail-large", Reply(503, strings.Repeat("x", 512)), objstore.CodeDFSServiceUnavailable},
		{"too-long", Reply(206, "too-long"), objstore.CodeDFSServiceUnavailable},
	}
	for _, c := range cases {
		srv.Route(c.key, c.action)
		g := newGuarded()
		_, err := a.GetRange(ctx, c.key, g.buf(), 1)
		wantCode(t, c.key, err, c.want)
		g.check(t)
		g = newGuarded()
		r := a.GetBatch(ctx, []objstore.GetRequest{{Key: c.key, Buf: g.buf()}})
		wantCode(t, c.key+" (batch)", r[0].Err, c.want)
		g.check(t)
	}
}

func TestBatchGetPreservesRequestOrderAndReportsPartialFailures(t *testing.T) {
	srv, a := newFault(t, 3)
	if r := a.GetBatch(ctx, nil); len(r) != 0 {
		t.Fatalf("empty batch gave %d results", len(r))
	}
	srv.Script(Reply(206, "value"), Reply(404, ""), Reply(206, "bad"))
	keys := []string{"first", "invalid", "second", "empty", "third"}
	reqs := []objstore.GetRequest{{Key: "first", Buf: make([]byte, 5)}, {Key: "invalid", Buf: make([]byte, 5), Off: -1},
		{Key: "second", Buf: make([]byte, 5)}, {Key: "empty"}, {Key: "third", Buf: make([]byte, 5)}}
	res := a.GetBatch(ctx, reqs)
	wantCode(t, "invalid", res[1].Err, objstore.CodeInvalidParams)
	wantCode(t, "empty", res[3].Err, objstore.CodeOK)
	if res[3].N != 0 {
		t.Fatal("empty request read bytes")
	}
	wantByArrival := []objstore.Code{objstore.CodeOK, objstore.CodeFileNotFound, objstore.CodeFileReadFail}
	wire := srv.Requests()
	if len(wire) != 3 {
		t.Fatalf("%d wire requests", len(wire))
	}
	for n, r := range wire {
		i := map[string]int{"first": 0, "second": 2, "third": 4}[r.Key]
		wantCode(t, fmt.Sprintf("%s (arrived #%d)", keys[i], n+1), res[i].Err, wantByArrival[n])
		if !hasHeader(r.Wire, "Range: bytes=0-4") {
			t.Errorf("%s lacks Range", r.Key)
		}
		if n == 0 && string(reqs[i].Buf) != "value" {
			t.Errorf("first arrival read %q", reqs[i].Buf)
		}
	}
}

func TestBatchPutStreamsIovecsAndPreservesPartialResults(t *testing.T) {
	srv, a := newFault(t, 3)
	if r := a.PutBatch(ctx, nil); len(r) != 0 {
		t.Fatalf("empty batch gave %d results", len(r))
	}
	srv.Script(Reply(200, ""), Reply(503, ""), Reply(200, ""))
	bodies := map[string][][]byte{"one": {[]byte("ab"), []byte("cd")}, "two": {[]byte("x")}, "three": {nil, []byte("yz"), {}}}
	order := []string{"one", "two", "three"}
	var reqs []objstore.PutRequest
	for _, k := range order {
		reqs = append(reqs, objstore.PutRequest{Key: k, Bufs: bodies[k]})
	}
	res := a.PutBatch(ctx, reqs)
	wire := srv.Requests()
	if len(wire) != 3 {
		t.Fatalf("%d wire requests", len(wire))
	}
	for n, r := range wire {
		i := map[string]int{"one": 0, "two": 1, "three": 2}[r.Key]
		want := objstore.CodeOK
		if n == 1 {
			want = objstore.CodeFileWriteFail
		}
		wantCode(t, r.Key, res[i], want)
		if string(r.Body) != string(bytes.Join(bodies[r.Key], nil)) {
			t.Errorf("%s body %q", r.Key, r.Body)
		}
	}
}
