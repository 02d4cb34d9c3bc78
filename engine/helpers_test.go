package engine

import (
	"context"
	"testing"
	"time"

	"github.com/ferrylabs/ferry/transport"
	"github.com/ferrylabs/ferry/transport/faketransport"
	"github.com/prometheus/client_golang/prometheus"
)

// newEngine starts an engine on 127.0.0.1 with the given factories.
func newEngine(t testing.TB, reg prometheus.Registerer, fs ...transport.Factory) *Engine {
	t.Helper()
	cfg := Config{LocalServerName: "127.0.0.1:1", Registerer: reg}
	if len(fs) > 0 {
		cfg.Transports = fs
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// pair starts two engines joined by one fake network with one fake
// transport each, and opens b's segment from a.
func pair(t testing.TB) (a, b *Engine, seg SegmentID, net *faketransport.Network) {
	t.Helper()
	net = faketransport.NewNetwork()
	a = newEngine(t, nil, net.Factory(faketransport.Options{}))
	b = newEngine(t, nil, net.Factory(faketransport.Options{}))
	return a, b, openSeg(t, a, b), net
}

func openSeg(t testing.TB, a, b *Engine) SegmentID {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id, err := a.OpenSegment(ctx, b.Name())
	if err != nil {
		t.Fatalf("OpenSegment(%s): %v", b.Name(), err)
	}
	return id
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func mustRegister(t testing.TB, e *Engine, mem []byte) {
	t.Helper()
	if err := e.RegisterMemory(mem, "cpu:0", true); err != nil {
		t.Fatalf("RegisterMemory: %v", err)
	}
}

func fill(b []byte, seed byte) {
	for i := range b {
		b[i] = seed + byte(i*7)
	}
}
