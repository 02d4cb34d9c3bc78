package oss

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrylabs/ferry/offload/objstore"
)

// Header values shared by every request. Their length equals their
// capacity, so a later Header.Add copies instead of writing into them.
var (
	unsignedPayloadValue = []string{UnsignedPayload}
	standardRangeValue   = []string{"standard"}
)

// fastSigner signs the adapter's own requests (whose signed headers are
// exactly x-oss-content-sha256, x-oss-date and optionally
// x-oss-range-behavior and x-oss-security-token) without per-request heap
// work beyond the header strings: the derived key is cached per (secret,
// date) and hashing state and buffers are pooled. Its output equals
// Authorization(&SignInput{...}) for the same request.
type fastSigner struct {
	bucketURI string // UriEncode("/" + bucket + "/", keepSlash)
	region    string
	key       atomic.Pointer[derivedKey]
	bufs      sync.Pool // *signBuf
}

type derivedKey struct {
	secret, date string
	macs         sync.Pool // hash.Hash: HMAC-SHA256 keyed with the derived key
}

type signBuf struct {
	b   []byte
	sha hash.Hash
	sum [64]byte
}

func newFastSigner(bucket, region string) *fastSigner {
	s := &fastSigner{bucketURI: objstore.URIEncode("/"+bucket+"/", true), region: region}
	s.bufs.New = func() any { return &signBuf{b: make([]byte, 0, 1024), sha: sha256.New()} }
	return s
}

// derived returns the signing key state for secret and the scope date.
func (s *fastSigner) derived(secret string, date []byte) *derivedKey {
	if k := s.key.Load(); k != nil && k.secret == secret && k.date == string(date) {
		return k
	}
	d := string(date)
	k := hmacSHA256([]byte("aliyun_v4"+secret), d)
	k = hmacSHA256(k, s.region)
	k = hmacSHA256(k, "oss")
	k = hmacSHA256(k, "aliyun_v4_request")
	dk := &derivedKey{secret: secret, date: d}
	dk.macs.New = func() any { return hmac.New(sha256.New, k) }
	s.key.Store(dk)
	return dk
}

// fastPathOK reports whether h holds no signed header other than the ones
// the fast path writes.
func fastPathOK(h http.Header) bool {
	for name := range h {
		switch name {
		case "X-Oss-Content-Sha256", "X-Oss-Date", "X-Oss-Range-Behavior", "X-Oss-Security-Token":
			continue
		}
		if len(name) >= 6 && strings.EqualFold(name[:6], "x-oss-") ||
			strings.EqualFold(name, "content-type") || strings.EqualFold(name, "content-md5") {
			return false
		}
	}
	return true
}

// authorization returns the Authorization value for a request whose
// x-oss headers were set by prepare. ts is the x-oss-date value.
func (s *fastSigner) authorization(method, key, query, ts string, ranged bool, creds objstore.Credentials) string {
	sb := s.bufs.Get().(*signBuf)
	defer s.bufs.Put(sb)
	b := sb.b[:0]
	// Canonical request.
	b = append(b, method...)
	b = append(b, '\n')
	b = append(b, s.bucketURI...)
	b = objstore.AppendURIEncode(b, key, true)
	b = append(b, '\n')
	b = append(b, query...)
	b = append(b, "\nx-oss-content-sha256:"+UnsignedPayload+"\nx-oss-date:"...)
	b = append(b, ts...)
	b = append(b, '\n')
	if ranged {
		b = append(b, "x-oss-range-behavior:standard\n"...)
	}
	if creds.SessionToken != "" {
		b = append(b, "x-oss-security-token:"...)
		b = append(b, strings.TrimSpace(creds.SessionToken)...)
		b = append(b, '\n')
	}
	b = append(b, "\n\n"+UnsignedPayload...)
	sb.sha.Reset()
	sb.sha.Write(b)
	crHash := sb.sha.Sum(sb.sum[:0])
	// String to sign.
	b = b[:0]
	b = append(b, Algorithm+"\n"...)
	b = append(b, ts...)
	b = append(b, '\n')
	scopeStart := len(b)
	b = append(b, ts[:8]...)
	b = append(b, '/')
	b = append(b, s.region...)
	b = append(b, "/oss/aliyun_v4_request"...)
	scopeEnd := len(b)
	b = append(b, '\n')
	b = hex.AppendEncode(b, crHash)
	dk := s.derived(creds.SecretAccessKey, b[scopeStart:scopeStart+8])
	mac := dk.macs.Get().(hash.Hash)
	mac.Reset()
	mac.Write(b)
	sig := mac.Sum(sb.sum[32:32])
	dk.macs.Put(mac)
	// Authorization, reusing the scope bytes already in b.
	stsLen := len(b)
	b = append(b, Algorithm+" Credential="...)
	b = append(b, creds.AccessKeyID...)
	b = append(b, '/')
	b = append(b, b[scopeStart:scopeEnd]...)
	b = append(b, ",Signature="...)
	b = hex.AppendEncode(b, sig)
	out := string(b[stsLen:])
	sb.b = b
	return out
}

// signFast sets the x-oss headers and the Authorization on req.
func (r *running) signFast(req *http.Request, c *objstore.Call, now time.Time, creds objstore.Credentials) {
	h := req.Header
	var tsb [16]byte
	ts := string(now.UTC().AppendFormat(tsb[:0], TimeFormat))
	vals := make([]string, 3)
	h["X-Oss-Content-Sha256"] = unsignedPayloadValue
	vals[0] = ts
	h["X-Oss-Date"] = vals[0:1:1]
	if creds.SessionToken != "" {
		vals[1] = creds.SessionToken
		h["X-Oss-Security-Token"] = vals[1:2:2]
	}
	_, ranged := h["Range"]
	if ranged {
		h["X-Oss-Range-Behavior"] = standardRangeValue
	}
	if !r.cfg.Anonymous {
		vals[2] = r.signer.authorization(c.Method, c.Key, c.Query, ts, ranged, creds)
		h["Authorization"] = vals[2:3:3]
	}
}
