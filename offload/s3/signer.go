package s3

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"github.com/ferrylabs/ferry/offload/objstore"
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
	creds     objstore.CredentialsProvider
	region    string
	anonymous bool

	key  atomic.Pointer[dayKey]
	bufs sync.Pool // *signScratch
}

type dayKey struct {
	date   string
	secret string
	key    [sha256.Size]byte
}

type signScratch struct {
	buf  []byte
	sha  hash.Hash
	hex  [2 * sha256.Size]byte
	sum  [sha256.Size]byte
	hmac hash.Hash
	hkey [sha256.Size]byte
}

// newSigner signs for region with the credentials creds hands out at each
// signing; anonymous requests carry every header but Authorization.
func newSigner(creds objstore.CredentialsProvider, region string, anonymous bool) *signer {
	return &signer{creds: creds, region: region, anonymous: anonymous}
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
func (s *signer) signingKey(date, secret string) *dayKey {
	if k := s.key.Load(); k != nil && k.date == date && k.secret == secret {
		return k
	}
	k1 := hmacSum([]byte("AWS4"+secret), date)
	k2 := hmacSum(k1[:], s.region)
	k3 := hmacSum(k2[:], "s3")
	k4 := hmacSum(k3[:], "aws4_request")
	k := &dayKey{date: date, secret: secret, key: k4}
	s.key.Store(k)
	return k
}

// header is one extra signed header: a lowercase name and its value.
// Extra headers are x-amz-* headers such as x-amz-checksum-crc32c.
type header struct{ name, value string }

// appendCanonicalHeaders appends the canonical header block (each line
// "name:value\n", sorted by name) and the blank line after it, then the
// signed header names joined by ';'. The fixed headers are host,
// x-amz-content-sha256, x-amz-date and x-amz-security-token (with a
// token); extra must be sorted by name.
func appendCanonicalHeaders(b []byte, token, host, amzDate string, extra []header) []byte {
	var fixed [4]header
	all := fixed[:0]
	all = append(all, header{"host", host}, header{"x-amz-content-sha256", unsignedPayload}, header{"x-amz-date", amzDate})
	if token != "" {
		all = append(all, header{"x-amz-security-token", token})
	}
	// Merge the two sorted lists, writing header lines.
	names := func(b []byte, emit func([]byte, header) []byte) []byte {
		i, j := 0, 0
		for i < len(all) || j < len(extra) {
			if j >= len(extra) || i < len(all) && all[i].name < extra[j].name {
				b = emit(b, all[i])
				i++
			} else {
				b = emit(b, extra[j])
				j++
			}
		}
		return b
	}
	b = names(b, func(b []byte, h header) []byte {
		b = append(b, h.name...)
		b = append(b, ':')
		b = append(b, h.value...)
		return append(b, '\n')
	})
	b = append(b, '\n')
	first := true
	b = names(b, func(b []byte, h header) []byte {
		if !first {
			b = append(b, ';')
		}
		first = false
		return append(b, h.name...)
	})
	return b
}

// authorization returns the Authorization value for a request signed
// with c. uri is the
// canonical URI exactly as sent on the wire, query the canonical query
// (also exactly as sent), host the Host header value, amzDate the
// x-amz-date value (YYYYMMDDTHHMMSSZ) and extra the additional signed
// headers, sorted by name.
func (s *signer) authorization(c objstore.Credentials, method, host, uri, query, amzDate string, extra ...header) string {
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
	b = append(b, '\n')
	b = appendCanonicalHeaders(b, c.SessionToken, host, amzDate, extra)
	namesStart := bytes.LastIndexByte(b, '\n') + 1
	b = append(b, '\n')
	b = append(b, unsignedPayload...)
	sc.sha.Reset()
	sc.sha.Write(b)
	sc.sha.Sum(sc.sum[:0])
	signedNames := string(b[namesStart : len(b)-len(unsignedPayload)-1])
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

	k := s.signingKey(date, c.SecretAccessKey)
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
	b = append(b, c.AccessKeyID...)
	b = append(b, '/')
	b = append(b, date...)
	b = append(b, '/')
	b = append(b, s.region...)
	b = append(b, "/s3/aws4_request, SignedHeaders="...)
	b = append(b, signedNames...)
	b = append(b, ", Signature="...)
	b = append(b, sc.hex[:]...)
	out := string(b)
	sc.buf = b
	return out
}

// apply sets the SigV4 headers on h: x-amz-content-sha256, x-amz-date,
// x-amz-security-token when a token is set, and Authorization unless the
// signer is anonymous. The caller sets the Host header to host.
func (s *signer) apply(h http.Header, now time.Time, method, host, uri, query string, extra ...header) {
	var tsBuf [16]byte
	amzDate := string(now.UTC().AppendFormat(tsBuf[:0], amzDateLayout))
	h[hdrContentSHA] = unsignedPayloadValue
	h[hdrDate] = []string{amzDate}
	c := s.creds.Credentials()
	if c.SessionToken != "" {
		h[hdrToken] = []string{c.SessionToken}
	}
	if !s.anonymous {
		h[hdrAuth] = []string{s.authorization(c, method, host, uri, query, amzDate, extra...)}
	}
}

var unsignedPayloadValue = []string{unsignedPayload}
