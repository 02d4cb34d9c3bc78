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

// shortWriter takes at most max bytes per Write and never errs, which an
// io.Writer must not do.
type shortWriter struct {
	bytes.Buffer
	max int
}

func (w *shortWriter) Write(p []byte) (int, error) { return w.Buffer.Write(p[:min(len(p), w.max)]) }

func TestVecReaderWriteToAllAndShortWrite(t *testing.T) {
	var b bytes.Buffer
	r := NewVecReader([][]byte{[]byte("abc"), nil, []byte("defg"), []byte("h")})
	r.Read(make([]byte, 1))
	if n, err := r.WriteTo(&b); err != nil || n != 7 || b.String() != "bcdefgh" {
		t.Fatal(n, err, b.String())
	}
	if n, err := r.WriteTo(&b); err != nil || n != 0 {
		t.Fatalf("WriteTo at the end = %d, %v", n, err)
	}
	w := &shortWriter{max: 2}
	r = NewVecReader([][]byte{[]byte("abc"), []byte("d")})
	if n, err := r.WriteTo(w); err != io.ErrShortWrite || n != 2 || w.String() != "ab" {
		t.Fatalf("short write = %d, %v, %q", n, err, w.String())
	}
	if rest, _ := io.ReadAll(r); string(rest) != "cd" {
		t.Fatalf("after a short write the reader is at %q, want \"cd\"", rest)
	}
}
