package verbs

import (
	"encoding/json"
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestGIDText(t *testing.T) {
	g := GIDFromAddr(netip.MustParseAddr("10.1.2.3"))
	const want = "00:00:00:00:00:00:00:00:00:00:ff:ff:0a:01:02:03"
	if s := g.String(); s != want {
		t.Fatalf("String() = %q, want %q", s, want)
	}
	back, err := ParseGID(strings.ToUpper(want))
	if err != nil || back != g {
		t.Fatalf("ParseGID(upper) = %v, %v", back, err)
	}
	if a := g.Addr(); a.String() != "10.1.2.3" {
		t.Fatalf("Addr() = %v", a)
	}
	ll := GIDFromAddr(netip.MustParseAddr("fe80::1"))
	if !strings.HasPrefix(ll.String(), "fe:80:00") || ll.Addr().String() != "fe80::1" {
		t.Fatalf("link-local GID %s / %v", ll, ll.Addr())
	}
	if !(GID{}).IsZero() || g.IsZero() {
		t.Fatal("IsZero wrong")
	}
	// JSON uses the text form, as the handshake's local_gid does.
	b, err := json.Marshal(struct{ G GID }{g})
	if err != nil || string(b) != `{"G":"`+want+`"}` {
		t.Fatalf("json = %s, %v", b, err)
	}
	var v struct{ G GID }
	if err := json.Unmarshal(b, &v); err != nil || v.G != g {
		t.Fatalf("json back = %v, %v", v.G, err)
	}
}

func TestParseGIDErrors(t *testing.T) {
	for _, s := range []string{
		"",
		"00:00",
		"00:00:00:00:00:00:00:00:00:00:ff:ff:0a:01:02:0",    // short
		"00:00:00:00:00:00:00:00:00:00:ff:ff:0a:01:02:033",  // long
		"00-00:00:00:00:00:00:00:00:00:ff:ff:0a:01:02:03",   // separator
		"00:00:00:00:00:00:00:00:00:00:ff:ff:0a:01:02:0g",   // digit
		"fe80:0000:0000:0000:0000:0000:0000:0001:0000:00:0", // IPv6 form
	} {
		if _, err := ParseGID(s); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("ParseGID(%q) = %v; want ErrInvalidArgument", s, err)
		}
	}
}

func FuzzGID(f *testing.F) {
	f.Add("00:00:00:00:00:00:00:00:00:00:ff:ff:0a:01:02:03")
	f.Add("FE:80:00:00:00:00:00:00:00:00:00:00:00:00:00:01")
	f.Add("zz")
	f.Fuzz(func(t *testing.T, s string) {
		g, err := ParseGID(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("error %v does not wrap ErrInvalidArgument", err)
			}
			return
		}
		out := g.String()
		if !strings.EqualFold(out, s) {
			t.Fatalf("ParseGID(%q).String() = %q", s, out)
		}
		if again, err := ParseGID(out); err != nil || again != g {
			t.Fatalf("round trip of %q: %v, %v", out, again, err)
		}
	})
}
