package httpstore

import (
	"context"
	"testing"
)

// BenchmarkGet is one Get of a 200-byte descriptor over loopback.
func BenchmarkGet(b *testing.B) {
	u := serve(b, NewServer())
	s := open(b, u, Options{})
	ctx := context.Background()
	v := make([]byte, 200)
	if err := s.Put(ctx, "mooncake/ram/bench", v); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Get(ctx, "mooncake/ram/bench"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPut is one Put of a 200-byte descriptor over loopback.
func BenchmarkPut(b *testing.B) {
	u := serve(b, NewServer())
	s := open(b, u, Options{})
	ctx := context.Background()
	v := make([]byte, 200)
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Put(ctx, "mooncake/ram/bench", v); err != nil {
			b.Fatal(err)
		}
	}
}
