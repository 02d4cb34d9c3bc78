package config

import (
	"errors"
	"net"
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

// FuzzParseMaster checks that any MOONCAKE_MASTER value gives either an
// error wrapping ErrMasterAddress or exactly one of a direct target and
// a non-empty list of etcd host:port endpoints.
func FuzzParseMaster(f *testing.F) {
	for _, s := range []string{"", "10.0.0.1:50051", "etcd://a:1,b:2/prod", "ETCD://a:1;b:2", "dns:///m:1", "redis://h:1", "etcd://", "etcd:///x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMaster(s)
		if err != nil {
			if !errors.Is(err, ErrMasterAddress) {
				t.Fatalf("%q: error %v does not wrap ErrMasterAddress", s, err)
			}
			return
		}
		if (m.Direct == "") == (len(m.Etcd) == 0) {
			t.Fatalf("%q: want exactly one of a direct target and etcd endpoints: %+v", s, m)
		}
		for _, ep := range m.Etcd {
			if h, p, err := net.SplitHostPort(ep); err != nil || h == "" || p == "" {
				t.Fatalf("%q: etcd endpoint %q is not host:port", s, ep)
			}
		}
	})
}
