package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ferrylabs/ferry/engine/metadata"
	"github.com/ferrylabs/ferry/transport"
	"github.com/ferrylabs/ferry/transport/faketransport"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func TestConcurrentBatches(t *testing.T) {
	a, b, seg, _ := pair(t)
	const workers, per, block = 6, 16, 4099
	local := make([]byte, workers*per*block)
	back := make([]byte, len(local))
	remote := make([]byte, len(local))
	mustRegister(t, a, local)
	mustRegister(t, a, back)
	mustRegister(t, b, remote)
	fill(local, 3)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bt, err := a.AllocateBatch(per)
			if err != nil {
				errs <- err
				return
			}
			for round := 0; round < 5; round++ {
				op := transport.Write
				src := local
				if round%2 == 1 {
					op, src = transport.Read, back
				}
				reqs := make([]Request, per)
				for i := range reqs {
					off := uint64((w*per + i) * block)
					reqs[i] = Request{Op: op, Local: Addr(src) + off, Target: seg, TargetAddr: Addr(remote) + off, Length: block}
				}
				if err := bt.Submit(reqs); err != nil {
					errs <- err
					return
				}
				if err := bt.Wait(ctxT(t)); err != nil {
					errs <- err
					return
				}
				for i := 0; i < per; i++ {
					if st, err := bt.Status(i); err != nil || st.State != Completed || st.Transferred != block {
						errs <- fmt.Errorf("worker %d request %d: %+v %v", w, i, st, err)
						return
					}
				}
				if err := bt.Reset(); err != nil {
					errs <- err
					return
				}
			}
			errs <- bt.Free()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(remote, local) || !bytes.Equal(back, local) {
		t.Fatal("bytes differ after concurrent batches")
	}
}

func TestFreeRefusedInFlight(t *testing.T) {
	a, b, seg, net := pair(t)
	local := make([]byte, 4096)
	remote := make([]byte, 4096)
	mustRegister(t, a, local)
	mustRegister(t, b, remote)
	net.Lookup("fake", a.Name()).SetDelay(300 * time.Millisecond)
	bt, err := a.AllocateBatch(2)
	if err != nil {
		t.Fatal(err)
	}
	if err := bt.Submit([]Request{{Op: transport.Write, Local: Addr(local), Target: seg, TargetAddr: Addr(remote), Length: 4096}}); err != nil {
		t.Fatal(err)
	}
	if err := bt.Free(); !errors.Is(err, ErrBatchBusy) || Code(err) != -4 {
		t.Fatalf("Free in flight = %v, want ErrBatchBusy", err)
	}
	if err := bt.Reset(); !errors.Is(err, ErrBatchBusy) {
		t.Fatalf("Reset in flight = %v", err)
	}
	if st := bt.BatchStatus(); st.State != Waiting {
		t.Fatalf("BatchStatus in flight = %v", st.State)
	}
	short, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := bt.Wait(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait with short deadline = %v", err)
	}
	if err := bt.Wait(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if st := bt.BatchStatus(); st.State != Completed || st.Transferred != 4096 {
		t.Fatalf("BatchStatus = %+v", st)
	}
	if err := bt.Free(); err != nil {
		t.Fatal(err)
	}
	if err := bt.Free(); !errors.Is(err, ErrBatchFreed) {
		t.Fatalf("second Free = %v", err)
	}
	if err := bt.Submit(nil); !errors.Is(err, ErrBatchFreed) {
		t.Fatalf("Submit after Free = %v", err)
	}
}

func TestRegisterAndSubmitErrors(t *testing.T) {
	a, b, seg, _ := pair(t)
	mem := make([]byte, 8192)
	if err := a.RegisterMemory(mem[:0], "", true); !errors.Is(err, ErrInvalidArgument) || Code(err) != -1 {
		t.Fatalf("zero length: %v", err)
	}
	mustRegister(t, a, mem[:4096])
	for _, m := range [][]byte{mem[:4096], mem[100:200], mem[4095:5000]} {
		if err := a.RegisterMemory(m, "", true); !errors.Is(err, ErrAddressOverlapped) || Code(err) != -7 {
			t.Fatalf("overlap: %v", err)
		}
	}
	mustRegister(t, a, mem[4096:]) // adjacent is fine
	if err := a.UnregisterMemory(mem[10:20]); !errors.Is(err, ErrAddressNotRegistered) {
		t.Fatalf("unregister unknown: %v", err)
	}
	remote := make([]byte, 1024)
	mustRegister(t, b, remote)
	bt, err := a.AllocateBatch(2)
	if err != nil {
		t.Fatal(err)
	}
	ok := Request{Op: transport.Write, Local: Addr(mem), Target: seg, TargetAddr: Addr(remote), Length: 1024}
	bad := []struct {
		name string
		reqs []Request
		want error
	}{
		{"too many", []Request{ok, ok, ok}, ErrTooManyRequests},
		{"bad opcode", []Request{{Op: 7, Local: ok.Local, Target: seg, TargetAddr: ok.TargetAddr, Length: 1}}, ErrInvalidArgument},
		{"unknown segment", []Request{{Local: ok.Local, Target: 99, TargetAddr: ok.TargetAddr, Length: 1}}, ErrInvalidArgument},
		{"unregistered local", []Request{{Local: Addr(remote), Target: seg, TargetAddr: ok.TargetAddr, Length: 1}}, ErrAddressNotRegistered},
		{"local past the end", []Request{{Local: Addr(mem) + 8000, Target: seg, TargetAddr: ok.TargetAddr, Length: 500}}, ErrAddressNotRegistered},
		{"wrapping", []Request{{Local: ok.Local, Target: seg, TargetAddr: ^uint64(0), Length: 2}}, ErrInvalidArgument},
	}
	for _, c := range bad {
		if err := bt.Submit(c.reqs); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	if bt.Len() != 0 {
		t.Fatalf("rejected submits left %d requests", bt.Len())
	}
	// A remote range outside every peer buffer fails that request only.
	reqs := []Request{ok, {Op: transport.Read, Local: Addr(mem), Target: seg, TargetAddr: Addr(remote) + 1000, Length: 100}}
	if err := bt.Submit(reqs); err != nil {
		t.Fatal(err)
	}
	err = bt.Wait(ctxT(t))
	if !errors.Is(err, ErrAddressNotRegistered) || Code(err) != -3 {
		t.Fatalf("Wait = %v, want ErrAddressNotRegistered", err)
	}
	if st, _ := bt.Status(0); st.State != Completed {
		t.Fatalf("request 0: %+v", st)
	}
	if st, _ := bt.Status(1); st.State != Failed || st.Err == nil {
		t.Fatalf("request 1: %+v", st)
	}
	if _, err := bt.Status(2); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Status(2) = %v", err)
	}
	if st := bt.BatchStatus(); st.State != Failed {
		t.Fatalf("BatchStatus = %+v", st)
	}
	if _, err := a.AllocateBatch(0); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("AllocateBatch(0) = %v", err)
	}
	// Unregistered memory is refused at once.
	if err := a.UnregisterMemory(mem[:4096]); err != nil {
		t.Fatal(err)
	}
	if err := a.Transfer(ctxT(t), []Request{ok}); !errors.Is(err, ErrAddressNotRegistered) {
		t.Fatalf("after unregister: %v", err)
	}
}

// failoverPair builds two engines with transports "fa" (preferred) and
// "fb" over one network.
func failoverPair(t *testing.T, reg prometheus.Registerer) (a, b *Engine, seg SegmentID, net *faketransport.Network) {
	net = faketransport.NewNetwork()
	fs := []transport.Factory{net.Factory(faketransport.Options{Name: "fa"}), net.Factory(faketransport.Options{Name: "fb"})}
	a = newEngine(t, reg, fs...)
	b = newEngine(t, nil, fs...)
	return a, b, openSeg(t, a, b), net
}

func TestFailover(t *testing.T) {
	reg := prometheus.NewRegistry()
	a, b, seg, net := failoverPair(t, reg)
	if d, _ := a.SegmentDesc(seg); d.Protocol != "fa" {
		t.Fatalf("peer protocol %q, want fa", d.Protocol)
	}
	local := make([]byte, 64<<10)
	remote := make([]byte, 64<<10)
	mustRegister(t, a, local)
	mustRegister(t, b, remote)
	fill(local, 9)
	fa, fb := net.Lookup("fa", a.Name()), net.Lookup("fb", a.Name())
	fa.FailAll(true)
	const n = 8
	reqs := make([]Request, n)
	for i := range reqs {
		off := uint64(i) * 8192
		reqs[i] = Request{Op: transport.Write, Local: Addr(local) + off, Target: seg, TargetAddr: Addr(remote) + off, Length: 8192}
	}
	if err := a.Transfer(ctxT(t), reqs); err != nil {
		t.Fatalf("transfer with failing preferred transport: %v", err)
	}
	if !bytes.Equal(local, remote) {
		t.Fatal("bytes differ after failover")
	}
	if fa.Submitted() != n || fb.Submitted() != n {
		t.Fatalf("submitted fa=%d fb=%d, want %d each", fa.Submitted(), fb.Submitted(), n)
	}
	if got := metricValue(a.metrics.failovers.WithLabelValues("fa")); got != n {
		t.Fatalf("failovers metric = %v, want %d", got, n)
	}
	if got := metricValue(a.metrics.bytes.WithLabelValues("fb", "write")); got != n*8192 {
		t.Fatalf("bytes metric = %v", got)
	}
	if got := metricValue(a.metrics.inflight.WithLabelValues("fa")) + metricValue(a.metrics.inflight.WithLabelValues("fb")); got != 0 {
		t.Fatalf("inflight = %v after completion", got)
	}
	// Both failing: one retry only, then the request fails.
	fb.FailAll(true)
	err := a.Transfer(ctxT(t), reqs[:1])
	if !errors.Is(err, faketransport.ErrInjected) {
		t.Fatalf("both failing: %v", err)
	}
	if fa.Submitted() != n+1 || fb.Submitted() != n+1 {
		t.Fatalf("submitted fa=%d fb=%d, want %d each", fa.Submitted(), fb.Submitted(), n+1)
	}
	// A transport that does not reach the peer is skipped.
	fa.FailAll(false)
	fb.FailAll(false)
	fa.SetUnreachable(true)
	if err := a.Transfer(ctxT(t), reqs[:1]); err != nil || fb.Submitted() != n+2 {
		t.Fatalf("unreachable preferred: %v, fb=%d", err, fb.Submitted())
	}
}

func TestRefetchOnMiss(t *testing.T) {
	a, b, seg, _ := pair(t)
	local := make([]byte, 4096)
	mustRegister(t, a, local)
	first := make([]byte, 4096)
	mustRegister(t, b, first)
	if err := a.Transfer(ctxT(t), []Request{{Op: transport.Write, Local: Addr(local), Target: seg, TargetAddr: Addr(first), Length: 4096}}); err != nil {
		t.Fatal(err)
	}
	d, _ := a.SegmentDesc(seg)
	if len(d.Buffers) != 1 {
		t.Fatalf("cached %d buffers, want 1", len(d.Buffers))
	}
	second := make([]byte, 4096)
	mustRegister(t, b, second)
	if d2, _ := a.SegmentDesc(seg); d2 != d {
		t.Fatal("descriptor changed without a miss")
	}
	fill(local, 1)
	if err := a.Transfer(ctxT(t), []Request{{Op: transport.Write, Local: Addr(local), Target: seg, TargetAddr: Addr(second), Length: 4096}}); err != nil {
		t.Fatalf("transfer to a newly registered peer buffer: %v", err)
	}
	if !bytes.Equal(second, local) {
		t.Fatal("bytes differ")
	}
	if d3, _ := a.SegmentDesc(seg); len(d3.Buffers) != 2 {
		t.Fatalf("after miss: %d buffers, want 2", len(d3.Buffers))
	}
}

func TestNotifyProbeAndLocal(t *testing.T) {
	a, b, seg, _ := pair(t)
	local := make([]byte, 256)
	mustRegister(t, a, local)
	remote := make([]byte, 256)
	mustRegister(t, b, remote)
	bt, err := a.AllocateBatch(1)
	if err != nil {
		t.Fatal(err)
	}
	n := Notify{Name: a.Name(), NotifyMsg: "kv ready"}
	if err := bt.SubmitWithNotify([]Request{{Op: transport.Write, Local: Addr(local), Target: seg, TargetAddr: Addr(remote), Length: 256}}, n); err != nil {
		t.Fatal(err)
	}
	if err := bt.Wait(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	bt.BatchStatus() // a second look must not send it again
	if got := b.Notifies(); len(got) != 1 || got[0] != n {
		t.Fatalf("notifies %+v", got)
	}
	if got := b.Notifies(); got != nil {
		t.Fatalf("queue not drained: %+v", got)
	}
	if err := a.SendNotifyByName(ctxT(t), b.Name(), Notify{Name: "x", NotifyMsg: "y"}); err != nil {
		t.Fatal(err)
	}
	if err := a.SendNotify(ctxT(t), seg, Notify{Name: "z"}); err != nil {
		t.Fatal(err)
	}
	if got := b.Notifies(); len(got) != 2 {
		t.Fatalf("notifies %+v", got)
	}
	if err := a.Probe(ctxT(t), b.Name()); err != nil {
		t.Fatal(err)
	}
	// The engine's own segment: a loopback transfer inside a.
	if id, err := a.OpenSegment(ctxT(t), "/"+a.Name()); err != nil || id != LocalSegmentID {
		t.Fatalf("OpenSegment(self) = %d, %v", id, err)
	}
	other := make([]byte, 256)
	mustRegister(t, a, other)
	fill(local, 5)
	if err := a.Transfer(ctxT(t), []Request{{Op: transport.Write, Local: Addr(local), Target: LocalSegmentID, TargetAddr: Addr(other), Length: 256}}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(local, other) {
		t.Fatal("local transfer bytes differ")
	}
	if _, err := a.OpenSegment(ctxT(t), "127.0.0.1:1"); Code(err) != -102 {
		t.Fatalf("open unreachable: %v (code %d)", err, Code(err))
	}
}

func TestDisableMetaCache(t *testing.T) {
	net := faketransport.NewNetwork()
	a, err := New(Config{LocalServerName: "127.0.0.1", Transports: []transport.Factory{net.Factory(faketransport.Options{})}, DisableMetaCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b := newEngine(t, nil, net.Factory(faketransport.Options{}))
	id := openSeg(t, a, b)
	d1, _ := a.SegmentDesc(id)
	mem := make([]byte, 64)
	mustRegister(t, b, mem)
	if id2 := openSeg(t, a, b); id2 != id {
		t.Fatalf("reopen gave id %d, want %d", id2, id)
	}
	if d2, _ := a.SegmentDesc(id); d2 == d1 || len(d2.Buffers) != 1 {
		t.Fatalf("OpenSegment did not refetch: %+v", d2)
	}
}

func TestConfigAndLifecycle(t *testing.T) {
	if _, err := New(Config{LocalServerName: "127.0.0.1", MetadataServer: "etcd://127.0.0.1:1", RPCHost: "127.0.0.1"}); !errors.Is(err, ErrMetadata) || Code(err) != -200 {
		t.Fatalf("etcd with nothing listening: %v", err)
	}
	if _, err := New(Config{LocalServerName: "127.0.0.1", Transports: []transport.Factory{}}); !errors.Is(err, ErrNoTransport) {
		t.Fatalf("no transports: %v", err)
	}
	net := faketransport.NewNetwork()
	if _, err := New(Config{LocalServerName: "127.0.0.1", Protocol: "tcp", Transports: []transport.Factory{net.Factory(faketransport.Options{})}}); !errors.Is(err, ErrNoTransport) {
		t.Fatalf("protocol filter: %v", err)
	}
	e, err := New(Config{LocalServerName: "127.0.0.1:12345", MinRPCPort: 16100, MaxRPCPort: 16200, Transports: []transport.Factory{net.Factory(faketransport.Options{})}})
	if err != nil {
		t.Fatal(err)
	}
	host, port, err := metadata.SplitSegmentName(e.Name())
	if err != nil || host != "127.0.0.1" || port < 16100 || port > 16200 {
		t.Fatalf("name %q", e.Name())
	}
	mem := make([]byte, 64)
	mustRegister(t, e, mem)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.AllocateBatch(1); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
	if _, err := e.OpenSegment(context.Background(), "127.0.0.1:5"); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

func TestCloseWithRequestsInFlight(t *testing.T) {
	net := faketransport.NewNetwork()
	a, err := New(Config{LocalServerName: "127.0.0.1", Transports: []transport.Factory{net.Factory(faketransport.Options{})}})
	if err != nil {
		t.Fatal(err)
	}
	b := newEngine(t, nil, net.Factory(faketransport.Options{}))
	seg := openSeg(t, a, b)
	local, remote := make([]byte, 64), make([]byte, 64)
	mustRegister(t, a, local)
	mustRegister(t, b, remote)
	net.Lookup("fake", a.Name()).SetDelay(time.Hour)
	bt, _ := a.AllocateBatch(1)
	if err := bt.Submit([]Request{{Op: transport.Read, Local: Addr(local), Target: seg, TargetAddr: Addr(remote), Length: 64}}); err != nil {
		t.Fatal(err)
	}
	a.Close()
	if err := bt.Wait(ctxT(t)); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("Wait after Close = %v", err)
	}
}

func TestConfigFromEnv(t *testing.T) {
	t.Setenv("MC_MIN_RPC_PORT", "16000")
	t.Setenv("MC_MAX_RPC_PORT", "banana")
	t.Setenv("MC_HANDSHAKE_MAX_LENGTH", "999999999999")
	t.Setenv("MC_HANDSHAKE_CONNECT_TIMEOUT", "2")
	t.Setenv("MC_DISABLE_METACACHE", "1")
	t.Setenv("MC_FORCE_TCP", "1")
	cfg, err := ConfigFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MinRPCPort != 16000 || cfg.MaxRPCPort != 0 || cfg.HandshakeMaxLength != 0 ||
		cfg.HandshakeConnectTimeout != 2*time.Second || !cfg.DisableMetaCache || cfg.Protocol != "tcp" {
		t.Fatalf("cfg %+v", cfg)
	}
	t.Setenv("MC_FORCE_HCA", "1")
	if _, err := ConfigFromEnv(); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("both forced: %v", err)
	}
	t.Setenv("MC_FORCE_HCA", "")
	t.Setenv("MC_MIN_RPC_PORT", "17000")
	t.Setenv("MC_MAX_RPC_PORT", "16000")
	if cfg, _ := ConfigFromEnv(); cfg.MinRPCPort != 0 || cfg.MaxRPCPort != 0 {
		t.Fatalf("inverted range kept: %+v", cfg)
	}
}

// metricValue reads a counter or gauge.
func metricValue(c prometheus.Metric) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		panic(err)
	}
	if m.Counter != nil {
		return m.Counter.GetValue()
	}
	return m.Gauge.GetValue()
}

func TestPeriodicRefreshAndMissBackoff(t *testing.T) {
	net := faketransport.NewNetwork()
	f := net.Factory(faketransport.Options{})
	a, err := New(Config{LocalServerName: "127.0.0.1", Transports: []transport.Factory{f}, MetadataRefreshInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b := newEngine(t, nil, f)
	seg := openSeg(t, a, b)
	d0, _ := a.SegmentDesc(seg)
	time.Sleep(60 * time.Millisecond)
	if d, _ := a.SegmentDesc(seg); d != d0 {
		t.Fatal("unchanged descriptor was replaced (timestamps must be ignored)")
	}
	mem := make([]byte, 128)
	mustRegister(t, b, mem)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if d, _ := a.SegmentDesc(seg); len(d.Buffers) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("periodic refresh never picked up the new buffer")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A peer whose daemon is gone: the miss refetch fails and the next
	// miss within the backoff fails without dialing.
	local := make([]byte, 128)
	mustRegister(t, a, local)
	b.Close()
	miss := []Request{{Op: transport.Read, Local: Addr(local), Target: seg, TargetAddr: Addr(mem) + 4096, Length: 1}}
	if err := a.Transfer(ctxT(t), miss); !errors.Is(err, ErrAddressNotRegistered) {
		t.Fatalf("miss on a dead peer: %v", err)
	}
	a.segMu.Lock()
	until := a.failUntil[uint64(seg)]
	a.segMu.Unlock()
	if time.Until(until) <= 0 || time.Until(until) > missBackoff {
		t.Fatalf("backoff until %v", until)
	}
}
