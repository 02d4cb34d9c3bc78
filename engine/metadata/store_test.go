package metadata

import (
	"errors"
	"net"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseServer(t *testing.T) {
	good := []struct {
		in   string
		want Server
	}{
		{"", Server{Kind: KindP2P}},
		{"P2PHANDSHAKE", Server{Kind: KindP2P}},
		{"etcd://10.0.0.1:2379", Server{Kind: KindEtcd, Endpoints: []string{"10.0.0.1:2379"}}},
		{"etcd://a:1, b:2", Server{Kind: KindEtcd, Endpoints: []string{"a:1", "b:2"}}},
		{"192.168.3.77:2379", Server{Kind: KindEtcd, Endpoints: []string{"192.168.3.77:2379"}}},
		{"redis://127.0.0.1:6379", Server{Kind: KindRedis, Endpoints: []string{"127.0.0.1:6379"}}},
		{"http://127.0.0.1:8080/metadata", Server{Kind: KindHTTP, URL: "http://127.0.0.1:8080/metadata"}},
	}
	for _, c := range good {
		got, err := ParseServer(c.in)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseServer(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"etcd://", "etcd://nohost", "redis://a:1,b:2", "http://", "zk://a:1", "p2phandshake", "a:1,,:2"} {
		if _, err := ParseServer(in); !errors.Is(err, ErrBadServer) {
			t.Errorf("ParseServer(%q): %v, want ErrBadServer", in, err)
		}
	}
}

func TestKeys(t *testing.T) {
	for _, c := range []struct{ cluster, rpc, seg string }{
		{"", "mooncake/rpc_meta/n1", "mooncake/ram/n1"},
		{"c1", "mooncake/c1/rpc_meta/n1", "mooncake/c1/ram/n1"},
		{"c1/", "mooncake/c1/rpc_meta/n1", "mooncake/c1/ram/n1"},
	} {
		k := NewKeys(c.cluster)
		if got := k.RPCMeta("n1"); got != c.rpc {
			t.Errorf("cluster %q RPCMeta = %q, want %q", c.cluster, got, c.rpc)
		}
		if got := k.Segment("n1"); got != c.seg {
			t.Errorf("cluster %q Segment = %q, want %q", c.cluster, got, c.seg)
		}
	}
	if got := NewKeys("").Segment("custom/seg"); got != "mooncake/custom/seg" {
		t.Errorf("a name with a slash: %q", got)
	}
	var zero Keys
	if zero.RPCMeta("x") != NewKeys("").RPCMeta("x") {
		t.Error("the zero Keys is not the default cluster")
	}
}

func TestDecodeRPCMeta(t *testing.T) {
	d, err := DecodeRPCMeta([]byte(`{"ip_or_host_name":"10.0.0.1","rpc_port":15123}`))
	if err != nil || d.Addr() != "10.0.0.1:15123" {
		t.Fatalf("%+v %v", d, err)
	}
	for _, in := range []string{`{`, `{"ip_or_host_name":"","rpc_port":1}`, `{"ip_or_host_name":"h","rpc_port":0}`, `{"ip_or_host_name":"h","rpc_port":70000}`} {
		if _, err := DecodeRPCMeta([]byte(in)); !errors.Is(err, ErrMalformedJSON) && !errors.Is(err, ErrInvalidDescriptor) {
			t.Errorf("%s: %v", in, err)
		}
	}
}

// FuzzParseServer checks that any server string parses to a known kind
// with well-formed endpoints or fails with ErrBadServer, and that a
// parsed value's keys and RPC metadata survive encoding.
func FuzzParseServer(f *testing.F) {
	for _, s := range []string{"", "P2PHANDSHAKE", "etcd://a:1,b:2", "10.0.0.1:2379", "redis://h:6379/", "http://h:8080/metadata", "zk://x", "etcd://[::1]:2379", "a:1,,:2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sv, err := ParseServer(s)
		if err != nil {
			if !errors.Is(err, ErrBadServer) {
				t.Fatalf("%q: error %v does not wrap ErrBadServer", s, err)
			}
			return
		}
		switch sv.Kind {
		case KindP2P:
		case KindEtcd, KindRedis:
			if len(sv.Endpoints) == 0 || (sv.Kind == KindRedis && len(sv.Endpoints) != 1) {
				t.Fatalf("%q: endpoints %v", s, sv.Endpoints)
			}
			for _, ep := range sv.Endpoints {
				if h, p, err := net.SplitHostPort(ep); err != nil || h == "" || p == "" {
					t.Fatalf("%q: endpoint %q is not host:port", s, ep)
				}
			}
		case KindHTTP:
			if sv.URL == "" {
				t.Fatalf("%q: no URL", s)
			}
		default:
			t.Fatalf("%q: kind %q", s, sv.Kind)
		}
		d := RPCMetaDesc{IPOrHostName: s, RPCPort: 1 + len(s)%65535}
		if strings.TrimSpace(s) == "" || !utf8.ValidString(s) {
			return // JSON carries text: host names are valid UTF-8
		}
		got, err := DecodeRPCMeta(AppendRPCMeta(nil, d))
		if err != nil || got != d {
			t.Fatalf("rpc_meta round trip of %+v: %+v %v", d, got, err)
		}
	})
}
