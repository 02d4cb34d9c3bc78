package topology

import (
	"encoding/json"
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
