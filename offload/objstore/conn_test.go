package objstore

import (
	"bytes"
	"io"
	"testing"
)

func TestVecReaderWriteToLimit(t *testing.T) {
	r := NewVecReader([][]byte{[]byte("abc"), nil, []byte("defg"), []byte("h")})
	one := make([]byte, 2)
	r.Read(one) // position 2
	var b bytes.Buffer
	lr := &io.LimitedReader{R: r, N: 4}
	n, err := r.writeToLimit(&b, lr.N)
	if err != nil || n != 4 || b.String() != "cdef" {
		t.Fatal(n, err, b.String())
	}
	rest, _ := io.ReadAll(r)
	if string(rest) != "gh" {
		t.Fatalf("rest %q", rest)
	}
}
