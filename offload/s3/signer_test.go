package s3

import (
	"github.com/ferrylabs/ferry/offload/objstore"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

const (
	vecAK = "AKIDEXAMPLE"
	vecSK = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
	vecTS = "20261004T120000Z"
)

func sigOf(t *testing.T, auth string) string {
	t.Helper()
	i := strings.Index(auth, "Signature=")
	if i < 0 {
		t.Fatalf("no Signature in %q", auth)
	}
	return auth[i+len("Signature="):]
}

// Vectors computed upstream with botocore (spec §2.4).
func TestSignsPathStylePutLikeBotocore(t *testing.T) {
	s := newSigner(objstore.StaticCredentials{AccessKeyID: vecAK, SecretAccessKey: vecSK}, "us-east-1", false)
	uri := "/" + objstore.URIEncode("kv-bucket", false) + "/" + objstore.URIEncode("mooncake/a%2Fb%20c", true)
	if uri != "/kv-bucket/mooncake/a%252Fb%2520c" {
		t.Fatalf("uri %q", uri)
	}
	auth := s.authorization(s.creds.Credentials(), "PUT", "127.0.0.1:8333", uri, "", vecTS)
	want := "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261004/us-east-1/s3/aws4_request, " +
		"SignedHeaders=host;x-amz-content-sha256;x-amz-date, " +
		"Signature=2647eaf330ae5eaa05f5579325ee243b4a0cee98cafde0d940fd3c6f65560fac"
	if auth != want {
		t.Fatalf("got  %s\nwant %s", auth, want)
	}
}

func TestSignsEmptyQueryValueWithEqualsSign(t *testing.T) {
	s := newSigner(objstore.StaticCredentials{AccessKeyID: vecAK, SecretAccessKey: vecSK}, "us-east-1", false)
	q := objstore.CanonicalQuery([]objstore.QueryParam{{Name: "prefix"}, {Name: "list-type", Value: "2"}, {Name: "max-keys", Value: "1000"}, {Name: "encoding-type", Value: "url"}}, true)
	if q != "encoding-type=url&list-type=2&max-keys=1000&prefix=" {
		t.Fatalf("query %q", q)
	}
	got := sigOf(t, s.authorization(s.creds.Credentials(), "GET", "127.0.0.1:8333", "/kv-bucket/", q, vecTS))
	if got != "9865884cab1e39c4552e33b0fcd6f3cf6450619d664dc9327b40624dd3b11409" {
		t.Fatalf("signature %s", got)
	}
}

func TestSignsVirtualHostedRequestWithSessionToken(t *testing.T) {
	s := newSigner(objstore.StaticCredentials{AccessKeyID: vecAK, SecretAccessKey: vecSK, SessionToken: "SESSIONTOKEN/abc+="}, "us-west-2", false)
	auth := s.authorization(s.creds.Credentials(), "GET", "kv-bucket.s3.us-west-2.amazonaws.com", "/"+objstore.URIEncode("p/key one", true), "", vecTS)
	if !strings.Contains(auth, "SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token, ") {
		t.Fatalf("signed headers in %q", auth)
	}
	if got := sigOf(t, auth); got != "bf221ce4cddae3cb8b5e1d86a22908177b5e5ac78713a0d0c9a2b441ffe12382" {
		t.Fatalf("signature %s", got)
	}
}

func TestOmitsDefaultPortFromSignedHost(t *testing.T) {
	ep, err := parseEndpoint("https://S3.Example.com:443")
	if err != nil {
		t.Fatal(err)
	}
	if ep.host != "s3.example.com" {
		t.Fatalf("host %q", ep.host)
	}
	s := newSigner(objstore.StaticCredentials{AccessKeyID: vecAK, SecretAccessKey: vecSK}, "eu-central-1", false)
	got := sigOf(t, s.authorization(s.creds.Credentials(), "HEAD", ep.host, "/kv-bucket/k", "", vecTS))
	if got != "6dc495469ec643cac87c6b99dd1302e6421a12a4efefb0f7d32eccf4ffe2464c" {
		t.Fatalf("signature %s", got)
	}
}

func TestSigningKeyFollowsDate(t *testing.T) {
	s := newSigner(objstore.StaticCredentials{AccessKeyID: vecAK, SecretAccessKey: vecSK}, "us-east-1", false)
	a := s.authorization(s.creds.Credentials(), "GET", "h", "/b/k", "", "20261004T120000Z")
	b := s.authorization(s.creds.Credentials(), "GET", "h", "/b/k", "", "20261005T120000Z")
	c := s.authorization(s.creds.Credentials(), "GET", "h", "/b/k", "", "20261004T120000Z")
	if a == b || a != c {
		t.Fatalf("date change must change the key and return: %s %s %s", a, b, c)
	}
}

func TestApplySetsHeaders(t *testing.T) {
	s := newSigner(objstore.StaticCredentials{AccessKeyID: vecAK, SecretAccessKey: vecSK, SessionToken: "tok"}, "us-east-1", false)
	h := http.Header{}
	now := time.Date(2026, 10, 4, 12, 0, 0, 0, time.UTC)
	s.apply(h, now, "GET", "h", "/b/k", "")
	if h.Get("X-Amz-Date") != vecTS || h.Get("X-Amz-Content-Sha256") != "UNSIGNED-PAYLOAD" ||
		h.Get("X-Amz-Security-Token") != "tok" || !strings.HasPrefix(h.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
		t.Fatalf("headers %v", h)
	}
	anon := newSigner(objstore.StaticCredentials{}, "us-east-1", true)
	h = http.Header{}
	anon.apply(h, now, "GET", "h", "/b/k", "")
	if _, ok := h["Authorization"]; ok {
		t.Fatal("anonymous request carries Authorization")
	}
}

func BenchmarkAuthorization(b *testing.B) {
	s := newSigner(objstore.StaticCredentials{AccessKeyID: vecAK, SecretAccessKey: vecSK, SessionToken: "tok"}, "us-east-1", false)
	b.ReportAllocs()
	for b.Loop() {
		_ = s.authorization(s.creds.Credentials(), "GET", "127.0.0.1:7070", "/bucket/prefix/key-000001", "", vecTS)
	}
}

// BenchmarkPrepare measures the adapter's own per-request work (URL,
// headers, signature) on top of the executor.
func BenchmarkPrepare(b *testing.B) {
	cfg := Config{Endpoint: "http://127.0.0.1:7070", Bucket: "bench", Region: "us-east-1", AccessKeyID: vecAK, SecretAccessKey: vecSK}
	a, err := NewFromConfig(cfg, Options{Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	r := a.run.Load()
	c := &objstore.Call{Method: http.MethodGet, Key: "prefix/object-000123", Ranged: true, Buf: make([]byte, 4<<20)}
	req := &http.Request{Method: http.MethodGet, URL: &url.URL{}, Header: make(http.Header, 8)}
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		if err := r.prepare(req, c, now); err != nil {
			b.Fatal(err)
		}
	}
}
