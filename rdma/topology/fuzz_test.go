package topology

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

func FuzzParseMatrix(f *testing.F) {
	f.Add([]byte(`{"cpu:0":[["mlx5_0"],["mlx5_1"]],"*":[["mlx5_0","mlx5_1"],[]]}`))
	f.Add([]byte(`{"cpu:0":[[],[]]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseMatrix(data)
		if err != nil {
			return
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseMatrix(b)
		if err != nil {
			t.Fatalf("re-parse of %s: %v", b, err)
		}
		if !reflect.DeepEqual(back, m) {
			t.Fatalf("round trip changed %v to %v", m, back)
		}
		r := m.Resolve(m.HCAs())
		for loc := range m {
			c := r.Lookup(loc)
			for i := 0; i < c.Len(); i++ {
				if c.At(i) < 0 || c.At(i) >= len(m.HCAs()) {
					t.Fatalf("index out of range")
				}
			}
		}
	})
}

// FuzzParseGID: any text either fails with ErrBadGID or parses to a GID
// whose Mooncake form parses back to it; the sysfs form of the same GID
// gives the same bytes.
func FuzzParseGID(f *testing.F) {
	f.Add("00:00:00:00:00:00:00:00:00:00:ff:ff:0a:00:00:05")
	f.Add("fe80:0000:0000:0000:0202:c9ff:fe00:0001")
	f.Add("0000:0000:0000:0000:0000:ffff:0a00:005")
	f.Fuzz(func(t *testing.T, s string) {
		g, err := ParseGID(s)
		if err != nil {
			if !errors.Is(err, ErrBadGID) {
				t.Fatalf("%q: error %v does not wrap ErrBadGID", s, err)
			}
			return
		}
		text := FormatGID(g)
		back, err := ParseGID(text)
		if err != nil || back != g {
			t.Fatalf("%q -> %s -> %x, %v", s, text, back, err)
		}
		var sys []byte
		for i := 0; i < 16; i += 2 {
			if i > 0 {
				sys = append(sys, ':')
			}
			sys = append(sys, text[3*i:3*i+2]...)
			sys = append(sys, text[3*i+3:3*i+5]...)
		}
		if fromSys, err := ParseGID(string(sys)); err != nil || fromSys != g {
			t.Fatalf("sysfs form %s -> %x, %v; want %x", sys, fromSys, err, g)
		}
	})
}
