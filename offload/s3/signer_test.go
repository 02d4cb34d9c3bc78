package s3

import (
	"net/http"
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
	s := newSigner(vecAK, vecSK, "", "us-east-1", false)
	uri := "/" + uriEncode("kv-bucket", false) + "/" + uriEncode("mooncake/a%2Fb%20c", true)
	if uri != "/kv-bucket/mooncake/a%252Fb%2520c" {
		t.Fatalf("uri %q", uri)
	}
	auth := s.authorization("PUT", "127.0.0.1:8333", uri, "", vecTS)
	want := "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261004/us-east-1/s3/aws4_request, " +
		"SignedHeaders=host;x-amz-content-sha256;x-amz-date, " +
		"Signature=2647eaf330ae5eaa05f5579325ee243b4a0cee98cafde0d940fd3c6f65560fac"
	if auth != want {
		t.Fatalf("got  %s\nwant %s", auth, want)
	}
}

func TestSignsEmptyQueryValueWithEqualsSign(t *testing.T) {
	s := newSigner(vecAK, vecSK, "", "us-east-1", false)
	q := canonicalQuery([]queryParam{{"prefix", ""}, {"list-type", "2"}, {"max-keys", "1000"}, {"encoding-type", "url"}})
	if q != "encoding-type=url&list-type=2&max-keys=1000&prefix=" {
		t.Fatalf("query %q", q)
	}
	got := sigOf(t, s.authorization("GET", "127.0.0.1:8333", "/kv-bucket/", q, vecTS))
	if got != "9865884cab1e39c4552e33b0fcd6f3cf6450619d664dc9327b40624dd3b11409" {
		t.Fatalf("signature %s", got)
	}
}

func TestSignsVirtualHostedRequestWithSessionToken(t *testing.T) {
	s := newSigner(vecAK, vecSK, "SESSIONTOKEN/abc+=", "us-west-2", false)
	auth := s.authorization("GET", "kv-bucket.s3.us-west-2.amazonaws.com", "/"+uriEncode("p/key one", true), "", vecTS)
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
	s := newSigner(vecAK, vecSK, "", "eu-central-1", false)
	got := sigOf(t, s.authorization("HEAD", ep.host, "/kv-bucket/k", "", vecTS))
	if got != "6dc495469ec643cac87c6b99dd1302e6421a12a4efefb0f7d32eccf4ffe2464c" {
		t.Fatalf("signature %s", got)
	}
}

func TestSigningKeyFollowsDate(t *testing.T) {
	s := newSigner(vecAK, vecSK, "", "us-east-1", false)
	a := s.authorization("GET", "h", "/b/k", "", "20261004T120000Z")
	b := s.authorization("GET", "h", "/b/k", "", "20261005T120000Z")
	c := s.authorization("GET", "h", "/b/k", "", "20261004T120000Z")
	if a == b || a != c {
		t.Fatalf("date change must change the key and return: %s %s %s", a, b, c)
	}
}

func TestApplySetsHeaders(t *testing.T) {
	s := newSigner(vecAK, vecSK, "tok", "us-east-1", false)
	h := http.Header{}
	now := time.Date(2026, 10, 4, 12, 0, 0, 0, time.UTC)
	s.apply(h, now, "GET", "h", "/b/k", "")
	if h.Get("X-Amz-Date") != vecTS || h.Get("X-Amz-Content-Sha256") != "UNSIGNED-PAYLOAD" ||
		h.Get("X-Amz-Security-Token") != "tok" || !strings.HasPrefix(h.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
		t.Fatalf("headers %v", h)
	}
	anon := newSigner("", "", "", "us-east-1", true)
	h = http.Header{}
	anon.apply(h, now, "GET", "h", "/b/k", "")
	if _, ok := h["Authorization"]; ok {
		t.Fatal("anonymous request carries Authorization")
	}
}

func TestURIEncodeAndDecode(t *testing.T) {
	cases := []struct{ in, slash, noslash string }{
		{"a/b c", "a/b%20c", "a%2Fb%20c"},
		{"tenant\x00/file%one", "tenant%00/file%25one", "tenant%00%2Ffile%25one"},
		{"你", "%E4%BD%A0", "%E4%BD%A0"},
		{"A-z_0.9~+", "A-z_0.9~%2B", "A-z_0.9~%2B"},
	}
	for _, c := range cases {
		if got := uriEncode(c.in, true); got != c.slash {
			t.Errorf("uriEncode(%q, true) = %q, want %q", c.in, got, c.slash)
		}
		if got := uriEncode(c.in, false); got != c.noslash {
			t.Errorf("uriEncode(%q, false) = %q, want %q", c.in, got, c.noslash)
		}
		if got := uriDecode(c.noslash); got != c.in {
			t.Errorf("uriDecode(%q) = %q", c.noslash, got)
		}
	}
	for in, want := range map[string]string{"%": "%", "%4": "%4", "%zz": "%zz", "a+b": "a+b", "%4a%4A": "JJ", "x%": "x%"} {
		if got := uriDecode(in); got != want {
			t.Errorf("uriDecode(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzURIRoundTrip(f *testing.F) {
	f.Add("tenant\x00/file%one")
	f.Add("你好/%+ ")
	f.Fuzz(func(t *testing.T, s string) {
		for _, keep := range []bool{false, true} {
			e := uriEncode(s, keep)
			if uriDecode(e) != s {
				t.Fatalf("round trip of %q via %q", s, e)
			}
			for i := 0; i < len(e); i++ {
				if !unreserved(e[i]) && e[i] != '%' && !(keep && e[i] == '/') {
					t.Fatalf("byte %q left in %q", e[i], e)
				}
			}
		}
	})
}

func BenchmarkAuthorization(b *testing.B) {
	s := newSigner(vecAK, vecSK, "tok", "us-east-1", false)
	b.ReportAllocs()
	for b.Loop() {
		_ = s.authorization("GET", "127.0.0.1:7070", "/bucket/prefix/key-000001", "", vecTS)
	}
}
