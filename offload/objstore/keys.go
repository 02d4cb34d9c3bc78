package objstore

import (
	"sort"
	"strings"
)

const upperHex = "0123456789ABCDEF"

// unreserved reports whether b passes through URI encoding unchanged.
func unreserved(b byte) bool {
	return 'A' <= b && b <= 'Z' || 'a' <= b && b <= 'z' || '0' <= b && b <= '9' ||
		b == '-' || b == '_' || b == '.' || b == '~'
}

// AppendURIEncode appends the URI encoding of s to dst and returns the
// extended slice. It works byte by byte: A-Z a-z 0-9 - _ . ~ pass through,
// and so does '/' when keepSlash; every other byte (including '%', '+',
// space, NUL and bytes >= 0x80) becomes %XX with uppercase hex.
func AppendURIEncode(dst []byte, s string, keepSlash bool) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if unreserved(c) || keepSlash && c == '/' {
			dst = append(dst, c)
			continue
		}
		dst = append(dst, '%', upperHex[c>>4], upperHex[c&15])
	}
	return dst
}

// URIEncode returns the URI encoding of s (see AppendURIEncode). It does
// not allocate when s needs no encoding.
func URIEncode(s string, keepSlash bool) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if !unreserved(s[i]) && !(keepSlash && s[i] == '/') {
			n++
		}
	}
	if n == 0 {
		return s
	}
	return string(AppendURIEncode(make([]byte, 0, len(s)+2*n), s, keepSlash))
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// URIDecode reverses URIEncode: '%' followed by two hex digits (either
// case) becomes that byte. A malformed '%' is kept literally and '+' is not
// turned into a space. It never fails and does not allocate when s holds
// no escape.
func URIDecode(s string) string {
	i := strings.IndexByte(s, '%')
	if i < 0 {
		return s
	}
	b := make([]byte, 0, len(s))
	b = append(b, s[:i]...)
	for ; i < len(s); i++ {
		c := s[i]
		if c == '%' && i+2 < len(s) {
			hi, ok1 := unhex(s[i+1])
			lo, ok2 := unhex(s[i+2])
			if ok1 && ok2 {
				b = append(b, hi<<4|lo)
				i += 2
				continue
			}
		}
		b = append(b, c)
	}
	return string(b)
}

// NormalizePrefix strips every leading and trailing '/' from a key prefix.
// Inner text, including "..", is kept verbatim and is not encoded.
func NormalizePrefix(p string) string {
	return strings.Trim(p, "/")
}

// Keys maps opaque logical keys to physical object keys:
// physical = prefix + "/" + URIEncode(logical, false), or just the encoded
// logical key when the prefix is empty. The zero value has no prefix and
// no length limit. Keys is immutable and safe for concurrent use.
type Keys struct {
	prefix string // "" or normalised prefix + "/"
	maxLen int
}

// NewKeys returns the mapping for prefix (normalised by NormalizePrefix).
// maxLen bounds the physical key length in bytes (0: no bound); a longer
// key is rejected locally with INVALID_PARAMS instead of being sent (OSS
// rejects keys over 1023 bytes, S3 over 1024).
func NewKeys(prefix string, maxLen int) Keys {
	p := NormalizePrefix(prefix)
	if p != "" {
		p += "/"
	}
	return Keys{prefix: p, maxLen: maxLen}
}

// PhysicalPrefix returns "" or the normalised prefix followed by "/".
func (k Keys) PhysicalPrefix() string { return k.prefix }

// Physical returns the physical key of a logical key, or an
// INVALID_PARAMS *Error when the result exceeds the length bound.
func (k Keys) Physical(logical string) (string, error) {
	p := k.prefix + URIEncode(logical, false)
	if k.maxLen > 0 && len(p) > k.maxLen {
		return "", &Error{Code: CodeInvalidParams, Key: logical,
			Msg: "physical key is longer than the service limit"}
	}
	return p, nil
}

// Logical maps a physical key back to its logical key. A key outside the
// prefix gives a FILE_READ_FAIL *Error.
func (k Keys) Logical(physical string) (string, error) {
	if !strings.HasPrefix(physical, k.prefix) {
		return "", &Error{Code: CodeFileReadFail, Op: "LIST",
			Msg: "listed key " + quote(physical) + " is outside the prefix " + quote(k.prefix)}
	}
	return URIDecode(physical[len(k.prefix):]), nil
}

func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == '"' || c == '\\' || c >= 0x7f {
			b.WriteString(`\x`)
			b.WriteByte(upperHex[c>>4])
			b.WriteByte(upperHex[c&15])
			continue
		}
		b.WriteByte(c)
	}
	b.WriteByte('"')
	return b.String()
}

// QueryParam is one query parameter, unencoded.
type QueryParam struct {
	Name, Value string
}

// CanonicalQuery encodes each name and value (with '/' encoded), sorts by
// the encoded name (then value) in byte order and joins the pairs with
// '&'. An empty value is written as "name=" when equalsForEmpty (S3) and as
// a bare "name" otherwise (OSS). The result serves both the URL and the
// signature.
func CanonicalQuery(params []QueryParam, equalsForEmpty bool) string {
	type enc struct{ n, v string }
	e := make([]enc, len(params))
	for i, p := range params {
		e[i] = enc{URIEncode(p.Name, false), URIEncode(p.Value, false)}
	}
	sort.Slice(e, func(i, j int) bool {
		if e[i].n != e[j].n {
			return e[i].n < e[j].n
		}
		return e[i].v < e[j].v
	})
	var b strings.Builder
	for i, p := range e {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(p.n)
		if p.v != "" || equalsForEmpty {
			b.WriteByte('=')
			b.WriteString(p.v)
		}
	}
	return b.String()
}
