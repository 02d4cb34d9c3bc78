package oss

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/ferrylabs/ferry/offload/objstore"
)

// Algorithm is the OSS V4 signature algorithm name.
const Algorithm = "OSS4-HMAC-SHA256"

// UnsignedPayload is the x-oss-content-sha256 value Ferry sends.
const UnsignedPayload = "UNSIGNED-PAYLOAD"

// TimeFormat is the x-oss-date layout.
const TimeFormat = "20060102T150405Z"

// SignInput is everything an OSS V4 signature covers.
type SignInput struct {
	Method      string
	Bucket      string
	Key         string // physical key ("" for the bucket)
	Query       string // canonical query (OSS form: empty values as bare names)
	Header      http.Header
	Region      string
	Time        time.Time
	Credentials objstore.Credentials
	// AdditionalHeaders lists other headers to sign (lowercase names);
	// Ferry signs none.
	AdditionalHeaders []string
}

// CanonicalURI returns UriEncode("/" + bucket + "/" + key, keepSlash):
// the bucket is always included, in virtual-host style too.
func CanonicalURI(bucket, key string) string {
	return objstore.URIEncode("/"+bucket+"/"+key, true)
}

type hdr struct{ name, value string }

// signedHeaders returns the headers OSS V4 signs by default (every
// x-oss-*, content-type and content-md5 when present) plus the listed
// additional ones, lowercase, sorted, values trimmed.
func signedHeaders(h http.Header, additional []string) []hdr {
	var out []hdr
	for name, vals := range h {
		ln := strings.ToLower(name)
		signed := strings.HasPrefix(ln, "x-oss-") || ln == "content-type" || ln == "content-md5"
		for _, a := range additional {
			if strings.ToLower(a) == ln {
				signed = true
			}
		}
		if !signed || len(vals) == 0 {
			continue
		}
		out = append(out, hdr{ln, strings.TrimSpace(strings.Join(vals, ","))})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// CanonicalRequest builds the V4 canonical request text.
func CanonicalRequest(in *SignInput) string {
	var b strings.Builder
	b.WriteString(in.Method)
	b.WriteByte('\n')
	b.WriteString(CanonicalURI(in.Bucket, in.Key))
	b.WriteByte('\n')
	b.WriteString(in.Query)
	b.WriteByte('\n')
	for _, h := range signedHeaders(in.Header, in.AdditionalHeaders) {
		b.WriteString(h.name)
		b.WriteByte(':')
		b.WriteString(h.value)
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	b.WriteString(additionalList(in.Header, in.AdditionalHeaders))
	b.WriteByte('\n')
	b.WriteString(UnsignedPayload)
	return b.String()
}

// additionalList returns the sorted additional header names present in h,
// joined by ';'.
func additionalList(h http.Header, additional []string) string {
	var names []string
	for _, a := range additional {
		a = strings.ToLower(a)
		if strings.HasPrefix(a, "x-oss-") || a == "content-type" || a == "content-md5" {
			continue
		}
		if _, ok := h[http.CanonicalHeaderKey(a)]; ok {
			names = append(names, a)
		}
	}
	sort.Strings(names)
	return strings.Join(names, ";")
}

// Scope returns "<date>/<region>/oss/aliyun_v4_request".
func Scope(t time.Time, region string) string {
	return t.UTC().Format("20060102") + "/" + region + "/oss/aliyun_v4_request"
}

// StringToSign returns the V4 string to sign.
func StringToSign(in *SignInput) string {
	sum := sha256.Sum256([]byte(CanonicalRequest(in)))
	return Algorithm + "\n" + in.Time.UTC().Format(TimeFormat) + "\n" + Scope(in.Time, in.Region) + "\n" + hex.EncodeToString(sum[:])
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

// Signature returns the hex V4 signature.
func Signature(in *SignInput) string {
	k := hmacSHA256([]byte("aliyun_v4"+in.Credentials.SecretAccessKey), in.Time.UTC().Format("20060102"))
	k = hmacSHA256(k, in.Region)
	k = hmacSHA256(k, "oss")
	k = hmacSHA256(k, "aliyun_v4_request")
	return hex.EncodeToString(hmacSHA256(k, StringToSign(in)))
}

// Authorization returns the Authorization header value:
// "OSS4-HMAC-SHA256 Credential=<AK>/<scope>[,AdditionalHeaders=a;b],Signature=<hex>".
func Authorization(in *SignInput) string {
	s := Algorithm + " Credential=" + in.Credentials.AccessKeyID + "/" + Scope(in.Time, in.Region)
	if a := additionalList(in.Header, in.AdditionalHeaders); a != "" {
		s += ",AdditionalHeaders=" + a
	}
	return s + ",Signature=" + Signature(in)
}
