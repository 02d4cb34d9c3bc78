package oss

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aliyun/alibabacloud-oss-go-sdk-v2/oss/credentials"
	"github.com/aliyun/alibabacloud-oss-go-sdk-v2/oss/signer"

	"github.com/ferrylabs/ferry/offload/objstore"
)

func ptr(s string) *string { return &s }

// sdkVectorInput rebuilds the inputs shared by the SDK's V4 header vectors.
func sdkVectorInput(ts int64) SignInput {
	t := time.Unix(ts, 0).UTC()
	h := http.Header{}
	h.Add("x-oss-head1", "value")
	h.Add("abc", "value")
	h.Add("ZAbc", "value")
	h.Add("XYZ", "value")
	h.Add("content-type", "text/plain")
	h.Add("x-oss-content-sha256", "UNSIGNED-PAYLOAD")
	h.Set("x-oss-date", t.Format(TimeFormat))
	q := objstore.CanonicalQuery([]objstore.QueryParam{{Name: "param1", Value: "value1"}, {Name: "+param1", Value: "value3"},
		{Name: "|param1", Value: "value4"}, {Name: "+param2", Value: ""}, {Name: "|param2", Value: ""}, {Name: "param2", Value: ""}}, false)
	return SignInput{Method: "PUT", Bucket: "bucket", Key: "1234+-/123/1.txt", Query: q, Header: h,
		Region: "cn-hangzhou", Time: t, Credentials: objstore.Credentials{AccessKeyID: "ak", SecretAccessKey: "sk"}}
}

func TestSDKVectors(t *testing.T) {
	in := sdkVectorInput(1702743657)
	if want := "%2Bparam1=value3&%2Bparam2&%7Cparam1=value4&%7Cparam2&param1=value1&param2"; in.Query != want {
		t.Fatalf("canonical query %q, want %q", in.Query, want)
	}
	if got, want := Authorization(&in), "OSS4-HMAC-SHA256 Credential=ak/20231216/cn-hangzhou/oss/aliyun_v4_request,Signature=e21d18daa82167720f9b1047ae7e7f1ce7cb77a31e8203a7d5f4624fa0284afe"; got != want {
		t.Errorf("TestV4AuthHeader:\n got %s\nwant %s", got, want)
	}

	in = sdkVectorInput(1702784856)
	in.Credentials.SessionToken = "token"
	in.Header.Set("x-oss-security-token", "token")
	if got, want := Authorization(&in), "OSS4-HMAC-SHA256 Credential=ak/20231217/cn-hangzhou/oss/aliyun_v4_request,Signature=b94a3f999cf85bcdc00d332fbd3734ba03e48382c36fa4d5af5df817395bd9ea"; got != want {
		t.Errorf("TestV4AuthHeaderToken:\n got %s\nwant %s", got, want)
	}

	in = sdkVectorInput(1702747512)
	in.AdditionalHeaders = []string{"ZAbc", "abc"}
	if got, want := Authorization(&in), "OSS4-HMAC-SHA256 Credential=ak/20231216/cn-hangzhou/oss/aliyun_v4_request,AdditionalHeaders=abc;zabc,Signature=4a4183c187c07c8947db7620deb0a6b38d9fbdd34187b6dbaccb316fa251212f"; got != want {
		t.Errorf("TestV4AuthHeaderWithAdditionalHeaders:\n got %s\nwant %s", got, want)
	}
}

// TestMooncakeShapedVectors drives the adapter's own request preparation
// (URL, headers, signature) for the spec's Mooncake-shaped vectors.
func TestMooncakeShapedVectors(t *testing.T) {
	now, _ := time.Parse(TimeFormat, "20261004T120000Z")
	cases := []struct {
		name, method, prefix, logical, token, query string
		ranged                                      bool
		wantURI, sig                                string
	}{
		{"put", "PUT", "mooncake", "a/b c", "", "", false, "/kv-bucket/mooncake/a%252Fb%2520c",
			"8a37e1526771a77a6a3f9c3110a7e27e0d777ef7459c177543b3170b8c96b738"},
		{"ranged get with token", "GET", "p", "key one", "SESSIONTOKEN/abc+=", "", true, "",
			"d5190f2d8470b7360d12b766dfdbee96dd8a886a5786f0731993748f9f11b47a"},
		{"list", "GET", "p", "", "", "encoding-type=url&list-type=2&max-keys=1000&prefix=p%2F", false, "/kv-bucket/",
			"45316b939313f06e7c2d3b43b95dd9c9a7280214bce50923437c8cc7625f7cde"},
		{"list empty prefix", "GET", "", "", "", "encoding-type=url&list-type=2&max-keys=1000&prefix", false, "/kv-bucket/",
			"3bff2195014eef62b82dc56b6a7d13a9d8a689a35f4fad44299499aa13d912af"},
		{"delete", "DELETE", "x", "tenant\x00/file%one", "", "", false, "/kv-bucket/x/tenant%2500%252Ffile%2525one",
			"44e9fefa554cf0750aba05f5005a22d5e8958dc3a9ec8ef1b09d8806519f29e1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &running{cfg: Config{Bucket: "kv-bucket", Region: "cn-hangzhou", PathStyle: true},
				signer: newFastSigner("kv-bucket", "cn-hangzhou"), scheme: "https", host: "oss-cn-hangzhou.aliyuncs.com", base: "/kv-bucket/",
				creds: objstore.StaticCredentials{AccessKeyID: "AKIDEXAMPLE",
					SecretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", SessionToken: tc.token}}
			keys := objstore.NewKeys(tc.prefix, MaxKeyLength)
			c := objstore.Call{Method: tc.method, Query: tc.query}
			if tc.query == "" {
				c.Key, _ = keys.Physical(tc.logical)
			} else if want := objstore.CanonicalQuery([]objstore.QueryParam{{Name: "encoding-type", Value: "url"}, {Name: "list-type", Value: "2"},
				{Name: "max-keys", Value: "1000"}, {Name: "prefix", Value: keys.PhysicalPrefix()}}, false); want != tc.query {
				t.Fatalf("list query %q, want %q", want, tc.query)
			}
			req := &http.Request{Method: tc.method, Header: http.Header{}}
			if tc.ranged {
				req.Header.Set("Range", "bytes=0-9")
			}
			if err := r.prepare(req, &c, now); err != nil {
				t.Fatal(err)
			}
			if tc.wantURI != "" && req.URL.Opaque != tc.wantURI {
				t.Errorf("wire path %q, want %q", req.URL.Opaque, tc.wantURI)
			}
			want := "OSS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261004/cn-hangzhou/oss/aliyun_v4_request,Signature=" + tc.sig
			if got := req.Header.Get("Authorization"); got != want {
				t.Errorf("Authorization\n got %s\nwant %s", got, want)
			}
			if _, ok := req.Header["Content-Type"]; ok {
				t.Error("Content-Type must not be sent")
			}
		})
	}
}

// sdkSign signs a copy of req with the official SDK signer and returns its
// Authorization header and string to sign.
func sdkSign(req *http.Request, bucket, key, region string, creds objstore.Credentials, at time.Time) (string, string) {
	r := req.Clone(context.Background())
	r.Header.Del("Authorization")
	cred := credentials.Credentials{AccessKeyID: creds.AccessKeyID, AccessKeySecret: creds.SecretAccessKey,
		SecurityToken: creds.SessionToken}
	sc := &signer.SigningContext{Product: ptr("oss"), Region: ptr(region), Bucket: ptr(bucket), Key: ptr(key),
		Request: r, Credentials: &cred, Time: at}
	_ = (&signer.SignerV4{}).Sign(context.Background(), sc)
	return r.Header.Get("Authorization"), sc.StringToSign
}

// TestSignerMatchesSDKOnRandomInputs compares the adapter's Authorization
// with the SDK's for random keys, methods, queries, tokens and styles.
func TestSignerMatchesSDKOnRandomInputs(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("aZ09-_.~/%+ =&?#\x00\xff\xe4\xbd\xa0!*'();:@$,[]")
	randStr := func(n int) string {
		b := make([]byte, rng.IntN(n+1))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	methods := []string{"GET", "PUT", "HEAD", "DELETE", "POST"}
	runners := map[string]*running{}
	for i := 0; i < 500; i++ {
		prefix := randStr(6)
		keys := objstore.NewKeys(prefix, 0)
		phys, _ := keys.Physical(randStr(12))
		var params []objstore.QueryParam
		// Distinct names: the SDK keeps one value per name.
		for j := rng.IntN(3); j > 0; j-- {
			params = append(params, objstore.QueryParam{Name: fmt.Sprintf("n%d%s", j, randStr(4)), Value: randStr(5)})
		}
		creds := objstore.Credentials{AccessKeyID: "AK" + fmt.Sprint(i), SecretAccessKey: "secret/" + fmt.Sprint(i/3)}
		if rng.IntN(2) == 0 {
			creds.SessionToken = "tok+" + fmt.Sprint(i)
		}
		pathStyle := rng.IntN(2) == 0
		// Runners are reused so the derived-key cache sees changing
		// secrets and dates.
		rk := fmt.Sprint(i%7, i%3, pathStyle)
		r := runners[rk]
		if r == nil {
			bucket, region := "bkt-"+fmt.Sprint(i%7), "cn-r"+fmt.Sprint(i%3)
			r = &running{cfg: Config{Bucket: bucket, Region: region, PathStyle: pathStyle},
				signer: newFastSigner(bucket, region), scheme: "http", host: "127.0.0.1:1", base: "/" + bucket + "/"}
			if !pathStyle {
				r.host, r.base = bucket+".127.0.0.1:1", "/"
			}
			runners[rk] = r
		}
		r.creds = objstore.StaticCredentials(creds)
		c := objstore.Call{Method: methods[rng.IntN(len(methods))], Key: phys, Query: objstore.CanonicalQuery(params, false)}
		req := &http.Request{Method: c.Method, Header: http.Header{}}
		if rng.IntN(2) == 0 {
			req.Header.Set("Range", "bytes=1-2")
		}
		at := time.Unix(1700000000+int64(i/5)*86399, 0).UTC()
		if err := r.prepare(req, &c, at); err != nil {
			t.Fatal(err)
		}
		// The SDK reads the query from the URL exactly as it goes on the wire.
		sdkReq := &http.Request{Method: c.Method, URL: &url.URL{RawQuery: req.URL.RawQuery}, Header: req.Header.Clone()}
		want, sts := sdkSign(sdkReq, r.cfg.Bucket, phys, r.cfg.Region, creds, at)
		if got := req.Header.Get("Authorization"); got != want {
			t.Fatalf("case %d (%s %q ?%s):\n got %s\nwant %s\nSDK string to sign:\n%s", i, c.Method, phys, c.Query, got, want, sts)
		}
		if strings.Contains(req.Header.Get("Authorization"), "secret/") {
			t.Fatal("secret in Authorization")
		}
	}
}
