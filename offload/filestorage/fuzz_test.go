package filestorage

import (
	"bytes"
	"testing"
)

// FuzzPosixNames checks that every key that encodes decodes back to
// itself, never to a name starting with '.', and that decoding arbitrary
// file names never panics.
func FuzzPosixNames(f *testing.F) {
	for _, s := range []string{"a", "default\x00k", "%2F", "..", "%", "%zz", "héllo", ".tmp-1"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if n, err := encodeName(b); err == nil {
			if n[0] == '.' {
				t.Fatalf("encoded name %q starts with '.'", n)
			}
			back, ok := decodeName(n)
			if !ok || !bytes.Equal(back, b) {
				t.Fatalf("%q -> %q -> %q (%v)", b, n, back, ok)
			}
		}
		if k, ok := decodeName(string(b)); ok {
			if n, err := encodeName(k); err == nil && n != string(b) && !bytes.ContainsRune(b, '%') {
				t.Fatalf("plain name %q re-encodes to %q", b, n)
			}
		}
	})
}
