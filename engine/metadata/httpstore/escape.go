package httpstore

// appendEscaped appends key to dst percent-encoded the way libcurl's
// curl_easy_escape does (and so Mooncake's HTTP plugin): every byte but
// the RFC 3986 unreserved characters A-Z a-z 0-9 - . _ ~ becomes %XX.
// The result is safe as a query parameter value whatever the key holds.
func appendEscaped(dst []byte, key string) []byte {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(key); i++ {
		c := key[i]
		if unreserved(c) {
			dst = append(dst, c)
			continue
		}
		dst = append(dst, '%', hex[c>>4], hex[c&0xf])
	}
	return dst
}

func unreserved(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return c == '-' || c == '.' || c == '_' || c == '~'
}
