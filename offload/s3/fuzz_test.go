package s3

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ferrylabs/ferry/offload/objstore"
)

// pageTransport answers every request with body (first page) and then
// with an empty final page, without any network.
type pageTransport struct {
	first []byte
	n     atomic.Int32
}

func (p *pageTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	body := p.first
	if p.n.Add(1) > 1 {
		body = []byte(`<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>`)
	}
	if req.Body != nil {
		req.Body.Close()
	}
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)), Request: req}, nil
}

// FuzzListKeys feeds arbitrary first pages to ListKeys: it must never
// panic, must fail only with FILE_READ_FAIL, and every key it returns
// must be a decoded key from under the prefix.
func FuzzListKeys(f *testing.F) {
	f.Add([]byte(`<ListBucketResult><Contents><Key>p%2Fa%2520b</Key><Size>3</Size></Contents><IsTruncated>true</IsTruncated><NextContinuationToken>t</NextContinuationToken></ListBucketResult>`))
	f.Add([]byte(`<ListBucketResult><Contents><Key>p/x&amp;y</Key><Size> 0 </Size></Contents><IsTruncated>False</IsTruncated></ListBucketResult>`))
	f.Add([]byte(`<ListBucketResult><Contents><Key>q/out</Key><Size>1</Size></Contents><IsTruncated>false</IsTruncated></ListBucketResult>`))
	f.Add([]byte(`<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>`))
	f.Fuzz(func(t *testing.T, page []byte) {
		cfg := Config{Endpoint: "http://127.0.0.1:9", Bucket: "b", Region: "r", Anonymous: true}
		a, err := NewFromConfig(cfg, Options{Prefix: "p", Logger: quiet, Transport: &pageTransport{first: page}})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		keys, err := a.ListKeys(context.Background())
		if err != nil {
			if c := objstore.CodeOf(err); c != objstore.CodeFileReadFail {
				t.Fatalf("code %v for %q: %v", c, page, err)
			}
			return
		}
		for _, k := range keys {
			if k.Size < 0 {
				t.Fatalf("negative size %+v", k)
			}
			if !bytes.Contains(page, []byte("p")) {
				t.Fatalf("key %q from a page without the prefix", k.Key)
			}
		}
	})
}

// FuzzLoadConfig checks that any environment yields a config or an
// INVALID_PARAMS error, never a panic, and that neither the error nor
// the config's rendering depends on the secret's or the token's value:
// the same environment with other non-empty values must describe
// itself identically.
func FuzzLoadConfig(f *testing.F) {
	f.Add("http://127.0.0.1:9000", "b", "id", "S3CR3T", " tok ", "true", "64")
	f.Add("HTTPS://[::1]:443/", "", "", "", "", "maybe", "++5")
	f.Add("s3.example.com", "b", "id", "S3CR3T", "", "0", "-1")
	f.Add("http://0", "0", "0", "0000", "", "", "")
	f.Fuzz(func(t *testing.T, ep, bucket, id, secret, token, anon, conns string) {
		load := func(secret, token string) (Config, error) {
			m := map[string]string{EnvEndpoint: ep, EnvBucket: bucket, EnvAccessKeyID: id, EnvSecretAccessKey: secret,
				EnvSessionToken: token, EnvAnonymous: anon, "MOONCAKE_S3_MAX_CONNECTIONS": conns}
			return LoadConfig(objstore.NewEnv(objstore.MapLookup(m), quiet))
		}
		// probe replaces a value by another of the same emptiness.
		probe := func(v, other string) string {
			if objstore.TrimASCIISpace(v) == "" {
				return v
			}
			return other
		}
		c, err := load(secret, token)
		pc, perr := load(probe(secret, "probe-secret-value"), probe(token, "probe-token-value"))
		if err != nil {
			if objstore.CodeOf(err) != objstore.CodeInvalidParams {
				t.Fatalf("code %v: %v", objstore.CodeOf(err), err)
			}
			if perr == nil || perr.Error() != err.Error() {
				t.Fatalf("error depends on the secret or token: %q vs %v", err, perr)
			}
			return
		}
		if c.MaxConnections < 1 || c.Host == "" || c.Scheme == "" || strings.ContainsAny(c.Host, "/?#@") {
			t.Fatalf("bad config %+v", c)
		}
		if perr != nil || pc.String() != c.String() || fmt.Sprintf("%#v", pc) != fmt.Sprintf("%#v", c) {
			t.Fatalf("rendering depends on the secret or token: %s vs %s (%v)", c, pc, perr)
		}
	})
}
