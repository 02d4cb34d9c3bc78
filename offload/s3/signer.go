package s3

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

const (
	algorithm       = "AWS4-HMAC-SHA256"
	unsignedPayload = "UNSIGNED-PAYLOAD"
	amzDateLayout   = "20060102T150405Z"

	hdrContentSHA = "X-Amz-Content-Sha256"
	hdrDate       = "X-Amz-Date"
	hdrToken      = "X-Amz-Security-Token"
	hdrAuth       = "Authorization"
)

// signer computes SigV4 Authorization values for one set of credentials
// and one region. It is safe for concurrent use. The derived signing key
// is cached per UTC date.
type signer struct {
	accessKey string
	secret    string
	token     string
	region    string
	anonymous bool

	key  atomic.Pointer[dayKey]
	bufs sync.Pool // *signScratch
}

type dayKey struct {
	date string
	key  [sha256.Size]byte
}

type signScratch struct {
	buf  []byte
	sha  hash.Hash
	hex  [2 * sha256.Size]byte
	sum  [sha256.Size]byte
	hmac hash.Hash
	hkey [sha256.Size]byte
}

func newSigner(accessKey, secret, token, region string, anonymous bool) *signer {
	return &signer{accessKey: accessKey, secret: secret, token: token, region: region, anonymous: anonymous}
}

func hmacSum(key []byte, data string) [sha256.Size]byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	var out [sha256.Size]byte
	m.Sum(out[:0])
	return out
}

// signingKey returns the HMAC key for date (YYYYMMDD), deriving it from the
// secret with the chain "AWS4"+secret -> date -> region -> "s3" ->
// "aws4_request" on the first use of each date.
func (s *signer) signingKey(date string) *dayKey {
	if k := s.key.Load(); k != nil && k.date == date {
		return k
	}
	k1 := hmacSum([]byte("AWS4"+s.secret), date)
	k2 := hmacSum(k1[:], s.region)
	k3 := hmacSum(k2[:], "s3")
	k4 := hmacSum(k3[:], "aws4_request")
	k := &dayKey{date: date, key: k4}
	s.key.Store(k)
	return k
}

// signedHeaderNames lists the headers the signer covers, sorted.
func (s *signer) signedHeaderNames() string {
	if s.token != "" {
		return "host;x-amz-content-sha256;x-amz-date;x-amz-security-token"
	}
	return "host;x-amz-content-sha256;x-amz-date"
}

// authorization returns the Authorization value for a request. uri is the
// canonical URI exactly as sent on the wire, query the canonical query
// (also exactly as sent), host the Host header value and amzDate the
// x-amz-date value (YYYYMMDDTHHMMSSZ).
func (s *signer) authorization(method, host, uri, query, amzDate string) string {
	sc, _ := s.bufs.Get().(*signScratch)
	if sc == nil {
		sc = &signScratch{buf: make([]byte, 0, 512), sha: sha256.New()}
	}
	defer s.bufs.Put(sc)
	date := amzDate[:8]

	// Canonical request.
	b := sc.buf[:0]
	b = append(b, method...)
	b = append(b, '\n')
	b = append(b, uri...)
	b = append(b, '\n')
	b = append(b, query...)
	b = append(b, "\nhost:"...)
	b = append(b, host...)
	b = append(b, "\nx-amz-content-sha256:"+unsignedPayload+"\nx-amz-date:"...)
	b = append(b, amzDate...)
	b = append(b, '\n')
	if s.token != "" {
		b = append(b, "x-amz-security-token:"...)
		b = append(b, s.token...)
		b = append(b, '\n')
	}
	b = append(b, '\n')
	b = append(b, s.signedHeaderNames()...)
	b = append(b, '\n')
	b = append(b, unsignedPayload...)
	sc.sha.Reset()
	sc.sha.Write(b)
	sc.sha.Sum(sc.sum[:0])
	hex.Encode(sc.hex[:], sc.sum[:])

	// String to sign.
	b = b[:0]
	b = append(b, algorithm+"\n"...)
	b = append(b, amzDate...)
	b = append(b, '\n')
	b = append(b, date...)
	b = append(b, '/')
	b = append(b, s.region...)
	b = append(b, "/s3/aws4_request\n"...)
	b = append(b, sc.hex[:]...)

	k := s.signingKey(date)
	if sc.hmac == nil || sc.hkey != k.key {
		sc.hkey = k.key
		sc.hmac = hmac.New(sha256.New, sc.hkey[:])
	}
	sc.hmac.Reset()
	sc.hmac.Write(b)
	sc.hmac.Sum(sc.sum[:0])
	hex.Encode(sc.hex[:], sc.sum[:])

	b = b[:0]
	b = append(b, algorithm+" Credential="...)
	b = append(b, s.accessKey...)
	b = append(b, '/')
	b = append(b, date...)
	b = append(b, '/')
	b = append(b, s.region...)
	b = append(b, "/s3/aws4_request, SignedHeaders="...)
	b = append(b, s.signedHeaderNames()...)
	b = append(b, ", Signature="...)
	b = append(b, sc.hex[:]...)
	out := string(b)
	sc.buf = b
	return out
}

// apply sets the SigV4 headers on h: x-amz-content-sha256, x-amz-date,
// x-amz-security-token when a token is set, and Authorization unless the
// signer is anonymous. The caller sets the Host header to host.
func (s *signer) apply(h http.Header, now time.Time, method, host, uri, query string) {
	var tsBuf [16]byte
	amzDate := string(now.UTC().AppendFormat(tsBuf[:0], amzDateLayout))
	h[hdrContentSHA] = unsignedPayloadValue
	h[hdrDate] = []string{amzDate}
	if s.token != "" {
		h[hdrToken] = []string{s.token}
	}
	if !s.anonymous {
		h[hdrAuth] = []string{s.authorization(method, host, uri, query, amzDate)}
	}
}

var unsignedPayloadValue = []string{unsignedPayload}
