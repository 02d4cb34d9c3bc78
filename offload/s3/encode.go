package s3

import "strings"

const upperHex = "0123456789ABCDEF"

// unreserved reports whether b passes through URI encoding unchanged.
func unreserved(b byte) bool {
	return 'A' <= b && b <= 'Z' || 'a' <= b && b <= 'z' || '0' <= b && b <= '9' ||
		b == '-' || b == '_' || b == '.' || b == '~'
}

// appendURIEncode appends the SigV4 URI encoding of s to dst: every byte
// other than A-Z a-z 0-9 - _ . ~ (and '/' when keepSlash) becomes %XX with
// uppercase hex. It works byte by byte, so NUL and non-ASCII bytes are
// encoded individually.
func appendURIEncode(dst []byte, s string, keepSlash bool) []byte {
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

// uriEncode returns the SigV4 URI encoding of s (see appendURIEncode).
func uriEncode(s string, keepSlash bool) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if !unreserved(s[i]) && !(keepSlash && s[i] == '/') {
			n++
		}
	}
	if n == 0 {
		return s
	}
	return string(appendURIEncode(make([]byte, 0, len(s)+2*n), s, keepSlash))
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

// uriDecode undoes uriEncode: %XX (either case) becomes the byte XX. A '%'
// not followed by two hex digits is kept literally, and '+' stays '+'.
func uriDecode(s string) string {
	if strings.IndexByte(s, '%') < 0 {
		return s
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			hi, ok1 := unhex(s[i+1])
			lo, ok2 := unhex(s[i+2])
			if ok1 && ok2 {
				out = append(out, hi<<4|lo)
				i += 2
				continue
			}
		}
		out = append(out, s[i])
	}
	return string(out)
}

// queryParam is one name=value pair of a canonical query.
type queryParam struct{ name, value string }

// canonicalQuery encodes each name and value (with '/' encoded as %2F),
// sorts by encoded name and joins them with '&'. An empty value is written
// as "name=" (the S3 form). The same string goes into the URL and into the
// signature.
func canonicalQuery(params []queryParam) string {
	enc := make([]queryParam, len(params))
	for i, p := range params {
		enc[i] = queryParam{uriEncode(p.name, false), uriEncode(p.value, false)}
	}
	// Insertion sort: queries here have at most a handful of parameters.
	for i := 1; i < len(enc); i++ {
		for j := i; j > 0 && (enc[j].name < enc[j-1].name ||
			enc[j].name == enc[j-1].name && enc[j].value < enc[j-1].value); j-- {
			enc[j], enc[j-1] = enc[j-1], enc[j]
		}
	}
	var b strings.Builder
	for i, p := range enc {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(p.name)
		b.WriteByte('=')
		b.WriteString(p.value)
	}
	return b.String()
}
