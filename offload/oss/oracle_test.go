package oss

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferrylabs/ferry/offload/objstore"
	"github.com/ferrylabs/ferry/offload/objstore/objtest"
)

const (
	oracleAK     = "oracle-ak"
	oracleSecret = "oracle-secret-Zx9/+q"
	oracleRegion = "cn-oracle"
	oracleBucket = "oracle-bucket"
)

// sdkVerifier re-signs each request with the official SDK signer (time
// from x-oss-date, region from the credential scope, bucket and key from
// the path-style path) and rejects any mismatch.
type sdkVerifier struct {
	mu      sync.Mutex
	secrets map[string]string // access key id -> secret
	checked int
}

func (v *sdkVerifier) verify(r *http.Request) error {
	auth := r.Header.Get("Authorization")
	rest, ok := strings.CutPrefix(auth, "OSS4-HMAC-SHA256 Credential=")
	if !ok {
		return errors.New("missing or foreign Authorization")
	}
	cred, _, _ := strings.Cut(rest, ",")
	scope := strings.Split(cred, "/")
	if len(scope) != 5 || scope[3] != "oss" || scope[4] != "aliyun_v4_request" {
		return fmt.Errorf("bad credential scope %q", cred)
	}
	v.mu.Lock()
	secret, ok := v.secrets[scope[0]]
	v.mu.Unlock()
	if !ok {
		return errors.New("unknown access key")
	}
	at, err := time.Parse(TimeFormat, r.Header.Get("x-oss-date"))
	if err != nil || at.Format("20060102") != scope[1] {
		return errors.New("bad x-oss-date")
	}
	if _, ok := r.Header["Content-Type"]; ok {
		return errors.New("Content-Type must not be sent")
	}
	path, rawq, _ := strings.Cut(r.RequestURI, "?")
	bk, wireKey, ok := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	if !ok {
		return errors.New("path-style path expected")
	}
	req := &http.Request{Method: r.Method, URL: r.URL, Header: r.Header.Clone()}
	req.URL.RawQuery = rawq
	want, sts := sdkSign(req, objstore.URIDecode(bk), objstore.URIDecode(wireKey), scope[2],
		objstore.Credentials{AccessKeyID: scope[0], SecretAccessKey: secret, SessionToken: r.Header.Get("x-oss-security-token")}, at)
	if want != auth {
		return fmt.Errorf("signature mismatch; SDK string to sign %q", sts)
	}
	v.mu.Lock()
	v.checked++
	v.mu.Unlock()
	return nil
}

type oracle struct {
	bucket *objtest.MemBucket
	ver    *sdkVerifier
	srv    *httptest.Server
}

func newOracle(t *testing.T) *oracle {
	o := &oracle{ver: &sdkVerifier{secrets: map[string]string{oracleAK: oracleSecret}}}
	o.bucket = &objtest.MemBucket{Bucket: oracleBucket, Authorize: o.ver.verify, CRC64Header: CRC64Header, PageSize: 3}
	o.srv = httptest.NewServer(o.bucket)
	t.Cleanup(o.srv.Close)
	return o
}

func (o *oracle) env() map[string]string {
	return map[string]string{EnvEndpoint: o.srv.URL + "/", EnvBucket: oracleBucket, EnvRegion: oracleRegion,
		EnvAccessKeyID: oracleAK, EnvAccessSecret: oracleSecret, EnvPathStyle: "1", EnvSecurityToken: "sts/tok+en=="}
}

func (o *oracle) adapter(t *testing.T, opts Options) *Adapter {
	t.Helper()
	if opts.Lookup == nil {
		opts.Lookup = objstore.MapLookup(o.env())
	}
	a := New(opts)
	if err := a.Init(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

func TestObjectLifecycleAndVectorIOAgainstSDKOracle(t *testing.T) {
	o := newOracle(t)
	a := o.adapter(t, Options{Prefix: "/tenant/../live//", VerifyCRC64: true})
	key := "tenant\x00/file%one"
	if err := a.Put(ctx, key, []byte("hello oss")); err != nil {
		t.Fatal(err)
	}
	if ok, err := a.Exists(ctx, key); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if n, err := a.GetSize(ctx, key); n != 9 || err != nil {
		t.Fatal(n, err)
	}
	buf := make([]byte, 9)
	if n, err := a.Get(ctx, key, buf); n != 9 || err != nil || string(buf) != "hello oss" {
		t.Fatal(n, err, string(buf))
	}
	if err := a.PutV(ctx, "file-two", [][]byte{[]byte("abc"), nil, []byte("def")}); err != nil {
		t.Fatal(err)
	}
	b1, b2 := make([]byte, 2), make([]byte, 2)
	if n, err := a.GetV(ctx, "file-two", [][]byte{b1, b2}, 1); n != 4 || err != nil || string(b1)+string(b2) != "bcde" {
		t.Fatal(n, err, string(b1), string(b2))
	}
	keys, err := a.ListKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].Key < keys[j].Key })
	if fmt.Sprint(keys) != fmt.Sprint([]objstore.KeyInfo{{Key: "file-two", Size: 6}, {Key: key, Size: 9}}) {
		t.Fatalf("ListKeys %v", keys)
	}
	if err := a.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	if ok, err := a.Exists(ctx, key); ok || err != nil {
		t.Fatal(ok, err)
	}
	_, err = a.Get(ctx, key, buf)
	wantCode(t, "deleted", err, objstore.CodeFileNotFound)
	if err := a.Delete(ctx, key); err != nil {
		t.Fatal("deleting a missing key:", err)
	}
	if _, ok := o.bucket.Objects()["tenant/../live/file-two"]; !ok {
		t.Fatalf("physical keys %v", o.bucket.Objects())
	}
	if o.ver.checked < 10 {
		t.Fatalf("only %d requests verified", o.ver.checked)
	}
	if err := a.CheckHealth(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestAwkwardKeysRangesBatchesAndPagesAgainstSDKOracle(t *testing.T) {
	o := newOracle(t)
	a := o.adapter(t, Options{Prefix: "p"})
	keys := []string{"plain", "a/b c", "100%+x", "你好", ".", "..", "q?x=1&y", "#frag", "tab\tnl\n", "~-_.", "%2F", "%zz%"}
	payload := func(i int) []byte { return bytes.Repeat([]byte{byte('A' + i)}, 100+i) }
	var puts []objstore.PutRequest
	for i, k := range keys {
		p := payload(i)
		puts = append(puts, objstore.PutRequest{Key: k, Bufs: [][]byte{p[:10], p[10:]}})
	}
	for i, err := range a.PutBatch(ctx, puts) {
		if err != nil {
			t.Fatalf("PUT %q: %v", keys[i], err)
		}
	}
	var gets []objstore.GetRequest
	for i, k := range keys {
		gets = append(gets, objstore.GetRequest{Key: k, Buf: make([]byte, 50), Off: int64(i)})
	}
	for i, r := range a.GetBatch(ctx, gets) {
		if r.Err != nil || r.N != 50 || !bytes.Equal(gets[i].Buf, payload(i)[i:i+50]) {
			t.Fatalf("GET %q: n=%d err=%v", keys[i], r.N, r.Err)
		}
	}
	// Past the end: 416 InvalidRange. Its XML error body overflows a
	// small buffer (DFS_SERVICE_UNAVAILABLE, as the reference) and fits a
	// large one (FILE_READ_FAIL). Straddling the end: a clipped 206.
	_, err := a.GetRange(ctx, "plain", make([]byte, 5), 100)
	wantCode(t, "past end, small buffer", err, objstore.CodeDFSServiceUnavailable)
	_, err = a.GetRange(ctx, "plain", make([]byte, 4096), 100)
	wantCode(t, "past end, large buffer", err, objstore.CodeFileReadFail)
	var oe *objstore.Error
	if !errors.As(err, &oe) || oe.Status != 416 || oe.ServiceCode != "InvalidRange" || oe.RequestID != "memreq" {
		t.Fatalf("416 details: %#v", oe)
	}
	_, err = a.GetRange(ctx, "plain", make([]byte, 5), 98)
	wantCode(t, "straddling end", err, objstore.CodeFileReadFail)
	listed, err := a.ListKeys(ctx) // PageSize 3: several pages
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, k := range listed {
		got[k.Key] = k.Size
	}
	for i, k := range keys {
		if got[k] != int64(100+i) {
			t.Fatalf("listing lacks %q (got %v)", k, got)
		}
	}
	if len(listed) != len(keys) {
		t.Fatalf("listed %d keys, want %d", len(listed), len(keys))
	}
}

func TestWrongSecretIsRejectedByOracle(t *testing.T) {
	o := newOracle(t)
	env := o.env()
	env[EnvAccessSecret] = "wrong"
	a := o.adapter(t, Options{Lookup: objstore.MapLookup(env)})
	err := a.Put(ctx, "k", []byte("v"))
	wantCode(t, "wrong secret", err, objstore.CodeFileWriteFail)
	var oe *objstore.Error
	if !errors.As(err, &oe) || oe.Status != 403 {
		t.Fatalf("error %#v", err)
	}
}

func TestSplitGetsAndMultipartUploadAgainstSDKOracle(t *testing.T) {
	o := newOracle(t)
	a := o.adapter(t, Options{SplitThreshold: 1000, SplitPartSize: 333, MultipartThreshold: 1000, MultipartPartSize: 400, VerifyCRC64: true})
	data := make([]byte, 2500)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if err := a.PutV(ctx, "big", [][]byte{data[:1], data[1:1700], data[1700:]}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(o.bucket.Objects()["big"], data) {
		t.Fatal("multipart object differs")
	}
	var parts int
	for _, l := range o.bucket.Log() {
		if strings.HasPrefix(l, "PUT /oracle-bucket/big?partNumber=") {
			parts++
		}
	}
	if parts != 7 {
		t.Fatalf("%d parts uploaded, want 7", parts)
	}
	buf := make([]byte, 2500)
	if n, err := a.Get(ctx, "big", buf); err != nil || n != 2500 || !bytes.Equal(buf, data) {
		t.Fatal(n, err)
	}
	gets := 0
	for _, l := range o.bucket.Log() {
		if strings.HasPrefix(l, "GET /oracle-bucket/big") {
			gets++
		}
	}
	if gets != 8 {
		t.Fatalf("%d ranged GETs, want 8", gets)
	}
}

func TestCRC64MismatchIsDetected(t *testing.T) {
	o := newOracle(t)
	a := o.adapter(t, Options{VerifyCRC64: true})
	if err := a.Put(ctx, "k", []byte("12345")); err != nil {
		t.Fatal(err)
	}
	// Corrupt the stored object behind the service's back: the served
	// CRC header is computed from the corrupted bytes, so flip the
	// header instead with a proxying handler.
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(CRC64Header, "12345")
		w.Header().Set("Content-Range", "bytes 0-4/5")
		w.Header().Set("Content-Length", "5")
		w.WriteHeader(206)
		w.Write([]byte("12345"))
	}))
	defer bad.Close()
	env := o.env()
	env[EnvEndpoint] = bad.URL
	b := o.adapter(t, Options{Lookup: objstore.MapLookup(env), VerifyCRC64: true})
	_, err := b.Get(ctx, "k", make([]byte, 5))
	wantCode(t, "crc mismatch", err, objstore.CodeFileReadFail)
	if n, err := a.Get(ctx, "k", make([]byte, 5)); err != nil || n != 5 {
		t.Fatal("matching CRC rejected:", err)
	}
}

func TestCredentialsRefreshWithoutRestart(t *testing.T) {
	o := newOracle(t)
	path := filepath.Join(t.TempDir(), "creds")
	write := func(id, secret string) {
		if err := os.WriteFile(path, []byte("# rotated\nACCESS_KEY_ID="+id+"\nACCESS_KEY_SECRET = "+secret+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(oracleAK, oracleSecret)
	fc, err := objstore.NewFileCredentials(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := o.adapter(t, Options{Credentials: fc})
	if err := a.Put(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	o.ver.mu.Lock()
	o.ver.secrets = map[string]string{"rotated-ak": "rotated-secret"}
	o.ver.mu.Unlock()
	wantCode(t, "old credentials", a.Put(ctx, "k", []byte("v")), objstore.CodeFileWriteFail)
	write("rotated-ak", "rotated-secret")
	if err := fc.Reload(); err != nil {
		t.Fatal(err)
	}
	if err := a.Put(ctx, "k", []byte("v")); err != nil {
		t.Fatal("after reload:", err)
	}
}

// TestNoSecretInLogsOrErrors drives failures of every kind with debug
// logging on and checks that neither the secret nor the token appears in
// any log line, error string or formatted configuration.
func TestNoSecretInLogsOrErrors(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	o := newOracle(t)
	env := o.env()
	env[EnvAccessSecret] = "wrong-" + oracleSecret
	env[EnvAnonymous] = "bogus"
	env["MOONCAKE_OSS_MAX_CONNECTIONS"] = "nope"
	a := o.adapter(t, Options{Lookup: objstore.MapLookup(env), Logger: log})
	var errs []error
	errs = append(errs, a.Put(ctx, "k", []byte("v")))
	_, err := a.Get(ctx, "k", make([]byte, 3))
	errs = append(errs, err)
	_, err = a.ListKeys(ctx)
	errs = append(errs, err, a.CheckHealth(ctx))
	srv, f := newFault(t, 2, func(op *Options) { op.Logger = log })
	srv.Route("reset", objtest.Reset())
	_, err = f.Get(ctx, "reset", make([]byte, 3))
	errs = append(errs, err)
	cfg, _ := a.Config()
	text := logs.String() + fmt.Sprint(errs) + fmt.Sprintf("%v %+v %#v %s", cfg, cfg, cfg, cfg.Credentials)
	for _, s := range []string{oracleSecret, "sts/tok+en==", "fault-test-secret", "fault-test-token"} {
		if strings.Contains(text, s) {
			t.Fatalf("secret %q leaked:\n%s", s, text)
		}
	}
	for _, e := range errs {
		if e == nil {
			t.Fatal("expected every call to fail")
		}
	}
}
