package s3

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/ferrylabs/ferry/offload/objstore"
	"github.com/ferrylabs/ferry/offload/objstore/objtest"
)

const faultSecret = "fault-test-secret"

// faultAdapter starts an adapter against a fresh fault server with the
// standard fault configuration (path style, signed with fake keys).
func faultAdapter(t *testing.T, prefix string, env map[string]string, log *slog.Logger) (*Adapter, *objtest.Server) {
	return faultAdapterOpts(t, prefix, env, Options{Logger: log})
}

func faultAdapterOpts(t *testing.T, prefix string, env map[string]string, opts Options) (*Adapter, *objtest.Server) {
	t.Helper()
	srv := objtest.NewServer(t)
	m := map[string]string{
		EnvEndpoint: srv.URL(), EnvBucket: "fault-bucket", EnvRegion: "fault-region", EnvPathStyle: "true",
		EnvAccessKeyID: "fault-test-id", EnvSecretAccessKey: faultSecret, EnvSessionToken: "fault-test-token",
		"MOONCAKE_S3_MAX_CONNECTIONS": "8",
	}
	for k, v := range env {
		m[k] = v
	}
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	opts.Prefix, opts.Lookup = prefix, objstore.MapLookup(m)
	a := New(opts)
	if err := a.Init(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a, srv
}

func wantCode(t *testing.T, err error, code objstore.Code) {
	t.Helper()
	if got := objstore.CodeOf(err); got != code {
		t.Fatalf("error %v: code %v, want %v", err, got, code)
	}
}

// guarded returns a 7-byte buffer of '!' and its inner 5 bytes.
func guarded() ([]byte, []byte) {
	b := bytes.Repeat([]byte("!"), 7)
	return b, b[1:6:6]
}

func checkGuards(t *testing.T, b []byte) {
	t.Helper()
	if b[0] != '!' || b[6] != '!' {
		t.Fatalf("guard bytes touched: %q", b)
	}
}

func TestAnonymousRequestsCarryNoAuthorization(t *testing.T) {
	a, srv := faultAdapter(t, "p", map[string]string{EnvAnonymous: "true"}, nil)
	srv.Route("k", objtest.Reply(200, ""))
	if err := a.Put(context.Background(), "k", []byte("x")); err != nil {
		t.Fatal(err)
	}
	r := srv.Requests()[0]
	if _, ok := r.Header["Authorization"]; ok {
		t.Fatalf("anonymous request has Authorization: %s", r.Wire)
	}
	if r.Header.Get("Host") != strings.TrimPrefix(srv.URL(), "http://") || r.Header.Get("X-Amz-Date") == "" ||
		r.Header.Get("X-Amz-Content-Sha256") != "UNSIGNED-PAYLOAD" {
		t.Fatalf("headers missing: %s", r.Wire)
	}
}

func TestSignedRequestWireForm(t *testing.T) {
	a, srv := faultAdapter(t, "/mooncake/", nil, nil)
	srv.Route("a%252Fb%2520c", objtest.Reply(200, ""))
	if err := a.Put(context.Background(), "a/b c", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	r := srv.Requests()[0]
	if !strings.HasPrefix(r.Wire, "PUT /fault-bucket/mooncake/a%252Fb%2520c HTTP/1.1\r\n") {
		t.Fatalf("request line: %q", r.Wire[:strings.IndexByte(r.Wire, '\n')])
	}
	auth := r.Header.Get("Authorization")
	if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=fault-test-id/") ||
		!strings.Contains(auth, "/fault-region/s3/aws4_request, SignedHeaders=host;x-amz-checksum-crc32c;x-amz-content-sha256;x-amz-date;x-amz-security-token, Signature=") {
		t.Fatalf("authorization %q", auth)
	}
	if r.Header.Get("X-Amz-Security-Token") != "fault-test-token" || r.Header.Get("Content-Type") != "" ||
		r.Header.Get("Expect") != "" || string(r.Body) != "hello" {
		t.Fatalf("wire %q", r.Wire)
	}
	crc := make([]byte, 4)
	binary.BigEndian.PutUint32(crc, crc32.Checksum([]byte("hello"), crc32.MakeTable(crc32.Castagnoli)))
	if r.Header.Get("X-Amz-Checksum-Crc32c") != base64.StdEncoding.EncodeToString(crc) {
		t.Fatalf("checksum header %q", r.Header.Get("X-Amz-Checksum-Crc32c"))
	}
	if n := strings.Count(strings.ToLower(r.Wire), "\r\nhost:"); n != 1 {
		t.Fatalf("%d Host headers", n)
	}
}

func TestSendsDotSegmentsInPrefixAndKeyUnchanged(t *testing.T) {
	a, srv := faultAdapter(t, "/mooncake/../tenant", nil, nil)
	srv.Route(".", objtest.Reply(200, ""))
	srv.Route("..", objtest.Reply(200, ""))
	ctx := context.Background()
	if err := a.Put(ctx, ".", []byte("a")); err != nil {
		t.Fatal(err)
	}
	if err := a.Put(ctx, "..", []byte("b")); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if !strings.HasPrefix(reqs[0].Wire, "PUT /fault-bucket/mooncake/../tenant/. HTTP/1.1\r\n") ||
		!strings.HasPrefix(reqs[1].Wire, "PUT /fault-bucket/mooncake/../tenant/.. HTTP/1.1\r\n") {
		t.Fatalf("wire:\n%s\n%s", reqs[0].Wire, reqs[1].Wire)
	}
}

func listPage(keys []string, truncated bool, token string) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">`)
	for _, k := range keys {
		b.WriteString("<Contents><Key>" + k + "</Key><Size>3</Size></Contents>")
	}
	if truncated {
		b.WriteString("<IsTruncated>true</IsTruncated>")
	} else {
		b.WriteString("<IsTruncated>false</IsTruncated>")
	}
	if token != "" {
		b.WriteString("<NextContinuationToken>" + token + "</NextContinuationToken>")
	}
	b.WriteString("</ListBucketResult>")
	return b.String()
}

func TestListKeysSendsContinuationTokenUnchanged(t *testing.T) {
	a, srv := faultAdapter(t, "p", nil, nil)
	srv.Route("", objtest.Reply(200, listPage([]string{"p%2Fa%2520b"}, true, "1/abc%2Fdef+==")),
		objtest.Reply(200, listPage([]string{"p%2Fpercent%2525value"}, false, "")))
	keys, err := a.ListKeys(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 || keys[0] != (objstore.KeyInfo{Key: "a b", Size: 3}) || keys[1] != (objstore.KeyInfo{Key: "percent%value", Size: 3}) {
		t.Fatalf("keys %+v", keys)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	for _, r := range reqs {
		if !strings.HasSuffix(r.Target, "encoding-type=url&list-type=2&max-keys=1000&prefix=p%2F") || !strings.HasPrefix(r.Target, "/fault-bucket/?") {
			t.Fatalf("target %q", r.Target)
		}
		if n := strings.Count(strings.ToLower(r.Wire), "\r\nhost:"); n != 1 {
			t.Fatalf("%d Host headers in %q", n, r.Wire)
		}
	}
	if !strings.Contains(reqs[1].Target, "continuation-token=1%2Fabc%252Fdef%2B%3D%3D") || strings.Contains(reqs[0].Target, "continuation-token") {
		t.Fatalf("targets %q %q", reqs[0].Target, reqs[1].Target)
	}
}

func TestRejectsMalformedListResponses(t *testing.T) {
	bodies := []string{
		`<Other><IsTruncated>false</IsTruncated></Other>`,
		`<ListBucketResult><Contents><Key>p/a</Key><Size>1</Size></Contents></ListBucketResult>`,
		`<ListBucketResult><IsTruncated>maybe</IsTruncated></ListBucketResult>`,
		`<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>p%2Fa</Key></Contents></ListBucketResult>`,
		`<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>p%2Fa</Key><Size>1x</Size></Contents></ListBucketResult>`,
		`<ListBucketResult><IsTruncated>true</IsTruncated><NextContinuationToken>a</NextContinuationToken><NextContinuationToken>b</NextContinuationToken></ListBucketResult>`,
		`<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>junk`,
		`<ListBucketResult><IsTruncated>false</IsTruncated>`,
		// Semantically bad: a key outside the prefix, a truncated page without a token.
		listPage([]string{"other%2Fa"}, false, ""),
		listPage([]string{"p%2Fa"}, true, ""),
	}
	for i, body := range bodies {
		a, srv := faultAdapter(t, "p", nil, nil)
		srv.Route("", objtest.Reply(200, body))
		_, err := a.ListKeys(context.Background())
		if objstore.CodeOf(err) != objstore.CodeFileReadFail {
			t.Errorf("case %d: %v, want FILE_READ_FAIL", i, err)
		}
	}
}

func TestListKeysAcceptsWhitespaceInTags(t *testing.T) {
	a, srv := faultAdapter(t, "p", nil, nil)
	srv.Route("", objtest.Reply(200, "<ListBucketResult >\n <Contents >\n  <Key > p%2Fa%26b</Key >\n  <Size > 7 </Size >\n </Contents>\n <IsTruncated > FALSE </IsTruncated >\n</ListBucketResult >\n"))
	keys, err := a.ListKeys(context.Background())
	// The Key text keeps its leading space, which falls outside the prefix;
	// the XML entity form is checked below.
	if err == nil {
		t.Fatalf("key with leading space accepted: %+v", keys)
	}
	a2, srv2 := faultAdapter(t, "p", nil, nil)
	srv2.Route("", objtest.Reply(200, "<ListBucketResult >\n <Contents >\n  <Key >p/a&amp;b</Key >\n  <Size > 7 </Size >\n </Contents>\n <IsTruncated > FALSE </IsTruncated >\n</ListBucketResult >\n"))
	keys, err = a2.ListKeys(context.Background())
	if err != nil || len(keys) != 1 || keys[0] != (objstore.KeyInfo{Key: "a&b", Size: 7}) {
		t.Fatalf("keys %+v err %v", keys, err)
	}
}

func TestAcceptsEmptyCompleteListResponse(t *testing.T) {
	a, srv := faultAdapter(t, "p", nil, nil)
	srv.Route("", objtest.Reply(200, `<ListBucketResult><KeyCount>0</KeyCount><IsTruncated>false</IsTruncated></ListBucketResult>`))
	keys, err := a.ListKeys(context.Background())
	if err != nil || len(keys) != 0 {
		t.Fatalf("keys %+v err %v", keys, err)
	}
}

func TestRetriesTransientStatusThenSucceeds(t *testing.T) {
	a, srv := faultAdapter(t, "p", nil, nil)
	srv.Route("k", objtest.Reply(503, "<Error><Code>SlowDown</Code><Message>reduce</Message></Error>"), objtest.Reply(200, ""))
	if err := a.Put(context.Background(), "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if n := srv.Count("k"); n != 2 {
		t.Fatalf("%d requests, want 2", n)
	}
	reqs := srv.Requests()
	if reqs[0].Header.Get("X-Amz-Date") == "" || string(reqs[1].Body) != "v" {
		t.Fatalf("retry not a full resend: %q", reqs[1].Wire)
	}
}

func TestDoesNotRetryClientErrors(t *testing.T) {
	a, srv := faultAdapter(t, "p", nil, nil)
	srv.Route("k", objtest.Reply(403, "<Error><Code>AccessDenied</Code></Error>"))
	err := a.Put(context.Background(), "k", []byte("v"))
	wantCode(t, err, objstore.CodeFileWriteFail)
	var oe *objstore.Error
	if !errors.As(err, &oe) || oe.Status != 403 || oe.ServiceCode != "AccessDenied" {
		t.Fatalf("error details %+v", oe)
	}
	if n := srv.Count("k"); n != 1 {
		t.Fatalf("%d requests, want 1", n)
	}
	// A GET answered 403 with a short body is FILE_READ_FAIL; with an
	// error document longer than the buffer the reference engine aborts
	// the transfer (DFS_SERVICE_UNAVAILABLE). Neither is retried.
	srv.Route("g", objtest.Reply(403, "no"))
	g, buf := guarded()
	_, err = a.Get(context.Background(), "g", buf)
	wantCode(t, err, objstore.CodeFileReadFail)
	_, err = a.Get(context.Background(), "k", buf)
	wantCode(t, err, objstore.CodeDFSServiceUnavailable)
	checkGuards(t, g)
	if n, m := srv.Count("k"), srv.Count("g"); n != 2 || m != 1 {
		t.Fatalf("%d and %d requests, want 2 and 1", n, m)
	}
}

func TestGivesUpAfterThreeAttempts(t *testing.T) {
	a, srv := faultAdapter(t, "p", nil, nil)
	srv.Route("k", objtest.Reply(503, "busy"))
	wantCode(t, a.Put(context.Background(), "k", []byte("v")), objstore.CodeFileWriteFail)
	if n := srv.Count("k"); n != 3 {
		t.Fatalf("%d requests, want 3", n)
	}
	srv.Route("r", objtest.Reset())
	wantCode(t, a.Put(context.Background(), "r", []byte("v")), objstore.CodeDFSServiceUnavailable)
	if n := srv.Count("r"); n != 3 {
		t.Fatalf("reset: %d requests, want 3", n)
	}
}

func TestBatchGetRetriesTransientFailure(t *testing.T) {
	a, srv := faultAdapter(t, "p", nil, nil)
	srv.Route("flaky", objtest.Reset(), objtest.Reply(206, "first"))
	srv.Route("slow", objtest.Reply(500, "x"), objtest.Reply(206, "later"))
	srv.Route("missing", objtest.Reply(404, "<Error><Code>NoSuchKey</Code></Error>"))
	srv.Route("short", objtest.Reply(206, "abc"))
	g1, b1 := guarded()
	g2, b2 := guarded()
	g3, b3 := guarded()
	g4, b4 := guarded()
	res := a.GetBatch(context.Background(), []objstore.GetRequest{
		{Key: "flaky", Buf: b1}, {Key: "slow", Buf: b2}, {Key: "missing", Buf: b3}, {Key: "short", Buf: b4}, {Key: "empty"},
	})
	if res[0].Err != nil || res[0].N != 5 || string(b1) != "first" || res[1].Err != nil || string(b2) != "later" {
		t.Fatalf("results %+v %q %q", res, b1, b2)
	}
	wantCode(t, res[2].Err, objstore.CodeFileNotFound)
	wantCode(t, res[3].Err, objstore.CodeFileReadFail)
	if res[4].Err != nil || res[4].N != 0 {
		t.Fatalf("empty request: %+v", res[4])
	}
	for _, g := range [][]byte{g1, g2, g3, g4} {
		checkGuards(t, g)
	}
	if srv.Count("flaky") != 2 || srv.Count("slow") != 2 || srv.Count("missing") != 1 || srv.Count("short") != 1 || srv.Count("empty") != 0 {
		t.Fatalf("counts %d %d %d %d", srv.Count("flaky"), srv.Count("slow"), srv.Count("missing"), srv.Count("short"))
	}
	for _, r := range srv.Requests() {
		if r.Header.Get("Range") != "bytes=0-4" {
			t.Fatalf("range %q", r.Header.Get("Range"))
		}
	}
}

func TestBatchPutRetriesDroppedConnection(t *testing.T) {
	a, srv := faultAdapter(t, "p", nil, nil)
	srv.Route("k", objtest.CloseConn(), objtest.Reply(200, ""))
	srv.Route("j", objtest.Reply(200, ""))
	errs := a.PutBatch(context.Background(), []objstore.PutRequest{
		{Key: "k", Bufs: [][]byte{[]byte("left"), nil, []byte("right")}}, {Key: "j", Bufs: nil},
	})
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("errors %v", errs)
	}
	if n := srv.Count("k"); n != 2 {
		t.Fatalf("%d requests, want 2", n)
	}
	for _, r := range srv.Requests() {
		if r.Key == "k" && string(r.Body) != "leftright" {
			t.Fatalf("body %q", r.Body)
		}
		if r.Key == "j" && len(r.Body) != 0 {
			t.Fatalf("empty body %q", r.Body)
		}
	}
}

func TestTimeoutAfterSendIsNotRetried(t *testing.T) {
	// A per-attempt deadline that fires after the request was written is
	// final: a timed-out PUT may still land.
	o := &objstore.Outcome{Err: context.DeadlineExceeded, Wrote: true}
	c := &objstore.Call{Method: http.MethodPut}
	if transient(c, o) {
		t.Fatal("timeout after send retried")
	}
	o.Wrote = false
	if !transient(c, o) {
		t.Fatal("timeout before send not retried")
	}
	if transient(c, &objstore.Outcome{Err: context.Canceled}) {
		t.Fatal("caller cancellation retried")
	}
	for s, want := range map[int]bool{429: true, 500: true, 502: true, 503: true, 504: true, 400: false, 403: false, 404: false, 416: false, 501: false} {
		if transient(c, &objstore.Outcome{Status: s}) != want {
			t.Errorf("status %d: transient %v", s, !want)
		}
	}
}

func TestChecksumMismatchIsRejected(t *testing.T) {
	a, srv := faultAdapterOpts(t, "p", nil, Options{VerifyGetChecksum: true})
	sum := func(s string) string {
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], crc32.Checksum([]byte(s), castagnoli))
		return base64.StdEncoding.EncodeToString(b[:])
	}
	srv.Route("good", objtest.Reply(206, "value", "Content-Range: bytes 0-4/5", "x-amz-checksum-crc32c: "+sum("value")))
	srv.Route("bad", objtest.Reply(206, "valuE", "Content-Range: bytes 0-4/5", "x-amz-checksum-crc32c: "+sum("value")))
	srv.Route("part", objtest.Reply(206, "valuE", "Content-Range: bytes 0-4/9", "x-amz-checksum-crc32c: "+sum("value")))
	srv.Route("composite", objtest.Reply(206, "valuE", "Content-Range: bytes 0-4/5", "x-amz-checksum-crc32c: "+sum("value")+"-2"))
	ctx := context.Background()
	for key, code := range map[string]objstore.Code{"good": objstore.CodeOK, "bad": objstore.CodeFileReadFail,
		"part": objstore.CodeOK, "composite": objstore.CodeOK} {
		g, buf := guarded()
		_, err := a.Get(ctx, key, buf)
		wantCode(t, err, code)
		checkGuards(t, g)
	}
	for _, r := range srv.Requests() {
		if r.Header.Get("X-Amz-Checksum-Mode") != "ENABLED" || !strings.Contains(r.Header.Get("Authorization"), "x-amz-checksum-mode") {
			t.Fatalf("checksum mode not sent and signed: %q", r.Wire)
		}
	}
	// Without VerifyGetChecksum a mismatch goes unnoticed and no mode header is sent.
	b, srv2 := faultAdapter(t, "p", nil, nil)
	srv2.Route("bad", objtest.Reply(206, "valuE", "Content-Range: bytes 0-4/5", "x-amz-checksum-crc32c: "+sum("value")))
	_, buf := guarded()
	if _, err := b.Get(ctx, "bad", buf); err != nil {
		t.Fatal(err)
	}
	if r := srv2.Requests()[0]; r.Header.Get("X-Amz-Checksum-Mode") != "" {
		t.Fatalf("checksum mode sent without verification: %q", r.Wire)
	}
}

func TestFaultErrorsNeverLeakSecrets(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	a, srv := faultAdapter(t, "p", nil, log)
	// An error document that echoes what a real server might (the
	// string-to-sign, the access key): it must not reach errors or logs.
	body := "<Error><Code>SignatureDoesNotMatch</Code><Message>" + faultSecret + "</Message><StringToSign>" + faultSecret + "</StringToSign></Error>"
	srv.Route("k", objtest.Reply(403, body))
	srv.Route("r", objtest.Reset())
	ctx := context.Background()
	var errs []error
	errs = append(errs, a.Put(ctx, "k", []byte("v")))
	_, err := a.Get(ctx, "k", make([]byte, 4))
	errs = append(errs, err)
	_, err = a.GetSize(ctx, "k")
	errs = append(errs, err)
	errs = append(errs, a.Put(ctx, "r", []byte("v")))
	for _, err := range errs {
		if err == nil {
			t.Fatal("expected an error")
		}
		if strings.Contains(err.Error(), faultSecret) || strings.Contains(err.Error(), "fault-test-token") {
			t.Fatalf("secret in error: %v", err)
		}
	}
	if strings.Contains(logs.String(), faultSecret) || strings.Contains(logs.String(), "fault-test-token") {
		t.Fatalf("secret in logs: %s", logs.String())
	}
	if !strings.Contains(logs.String(), "SignatureDoesNotMatch") {
		t.Fatalf("debug log lacks the service code: %s", logs.String())
	}
}

func TestUseBeforeInitAndAfterClose(t *testing.T) {
	a := New(Options{Logger: quiet, Lookup: objstore.MapLookup(nil)})
	ctx := context.Background()
	wantCode(t, a.Put(ctx, "k", nil), objstore.CodeInternalError)
	_, err := a.GetRange(ctx, "k", make([]byte, 1), -1)
	wantCode(t, err, objstore.CodeInvalidParams)
	res := a.GetBatch(ctx, []objstore.GetRequest{{Key: "a", Buf: make([]byte, 1)}, {Key: "b", Off: -1, Buf: make([]byte, 1)}, {Key: "c"}})
	wantCode(t, res[0].Err, objstore.CodeInternalError)
	wantCode(t, res[1].Err, objstore.CodeInvalidParams)
	wantCode(t, res[2].Err, objstore.CodeOK)
	wantCode(t, a.Init(ctx), objstore.CodeInvalidParams)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = a.ListKeys(ctx)
	wantCode(t, err, objstore.CodeInternalError)
}

func TestHealthCheckWireSequence(t *testing.T) {
	a, srv := faultAdapter(t, "test-prefix", nil, nil)
	srv.Script(objtest.Reply(200, ""), objtest.Reply(206, "health_check"), objtest.Reply(204, ""))
	if err := a.CheckHealth(context.Background()); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 || reqs[0].Method != "PUT" || reqs[1].Method != "GET" || reqs[2].Method != "DELETE" ||
		!strings.HasPrefix(reqs[0].Target, "/fault-bucket/test-prefix/.mooncake_health_probe_") ||
		reqs[1].Header.Get("Range") != "bytes=0-11" || string(reqs[0].Body) != "health_check" {
		t.Fatalf("requests %+v", reqs)
	}
	a2, s2 := faultAdapter(t, "test-prefix", nil, nil)
	s2.Script(objtest.Reply(200, ""), objtest.Reply(206, "wrong_health"), objtest.Reply(204, ""))
	wantCode(t, a2.CheckHealth(context.Background()), objstore.CodeDFSServiceUnavailable)
	if r := s2.Requests(); len(r) != 3 || r[2].Method != "DELETE" {
		t.Fatalf("mismatch: requests %d", len(r))
	}
}

func asError(err error, target **objstore.Error) bool { return errors.As(err, target) }

func TestMultipartFailureAbortsUpload(t *testing.T) {
	srv := objtest.NewServer(t)
	cfg := Config{Endpoint: srv.URL(), Bucket: "fault-bucket", Region: "r", AccessKeyID: "id", SecretAccessKey: faultSecret,
		MaxConnections: 1, MultipartThreshold: 6 << 20, PartSize: 5 << 20}
	a, err := NewFromConfig(cfg, Options{Prefix: "p", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	srv.Script(
		objtest.Reply(200, `<InitiateMultipartUploadResult><Bucket>fault-bucket</Bucket><Key>p/big</Key><UploadId>up/1+=</UploadId></InitiateMultipartUploadResult>`),
		objtest.Reply(200, "", `ETag: "e1"`),
		objtest.Reply(403, "<Error><Code>AccessDenied</Code></Error>"),
		objtest.Reply(204, ""),
	)
	data := make([]byte, 7<<20)
	err = a.Put(context.Background(), "big", data)
	wantCode(t, err, objstore.CodeFileWriteFail)
	reqs := srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests", len(reqs))
	}
	if reqs[0].Method != "POST" || reqs[0].Target != "/fault-bucket/p/big?uploads=" ||
		reqs[1].Target != "/fault-bucket/p/big?partNumber=1&uploadId=up%2F1%2B%3D" || len(reqs[1].Body) != 5<<20 ||
		reqs[2].Target != "/fault-bucket/p/big?partNumber=2&uploadId=up%2F1%2B%3D" || len(reqs[2].Body) != 2<<20 ||
		reqs[3].Method != "DELETE" || reqs[3].Target != "/fault-bucket/p/big?uploadId=up%2F1%2B%3D" {
		for _, r := range reqs {
			t.Logf("%s %s (%d bytes)", r.Method, r.Target, len(r.Body))
		}
		t.Fatal("unexpected multipart sequence")
	}
	for _, r := range reqs {
		if r.Header.Get("X-Amz-Checksum-Crc32c") != "" {
			t.Fatalf("checksum header on a multipart request: %s %s", r.Method, r.Target)
		}
		if !strings.Contains(r.Header.Get("Authorization"), "Signature=") {
			t.Fatalf("unsigned %s %s", r.Method, r.Target)
		}
	}
}
