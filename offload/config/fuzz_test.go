package config

import (
	"strconv"
	"strings"
	"testing"
)

// FuzzParseInt checks Mooncake's integer grammar against strconv: a value
// is accepted only if, after trimming and one optional '+', strconv
// parses it too, to the same number.
func FuzzParseInt(f *testing.F) {
	for _, s := range []string{"", "5", "+5", "++5", "+-5", "-0", " 7 ", "65536bytes", "2147483648", "\t-2147483648\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, ok := parseInt(s, 32)
		tr := strings.Trim(s, asciiSpace)
		tr = strings.TrimPrefix(tr, "+")
		want, err := strconv.ParseInt(tr, 10, 32)
		if strings.HasPrefix(tr, "+") || strings.HasPrefix(strings.Trim(s, asciiSpace), "+-") {
			err = strconv.ErrSyntax
		}
		if ok != (err == nil) || ok && v != want {
			t.Fatalf("parseInt(%q) = %d, %v; strconv says %d, %v", s, v, ok, want, err)
		}
	})
}
