package redisstore

import (
	"context"
	"testing"
)

// BenchmarkGet is one GET of a 64-byte descriptor from a local
// redis-server: the cost of a metadata cache miss.
func BenchmarkGet(b *testing.B) {
	srv := startRedis(b, "")
	s, err := Open(context.Background(), srv.addr, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	v := []byte(`{"ip_or_host_name":"10.0.0.1","rpc_port":15001,"pad":"0123456"}`)
	if err := s.Put(ctx, "bench/k", v); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.Get(ctx, "bench/k"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPut is one SET of the same descriptor.
func BenchmarkPut(b *testing.B) {
	srv := startRedis(b, "")
	s, err := Open(context.Background(), srv.addr, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	v := []byte(`{"ip_or_host_name":"10.0.0.1","rpc_port":15001,"pad":"0123456"}`)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := s.Put(ctx, "bench/k", v); err != nil {
			b.Fatal(err)
		}
	}
}
