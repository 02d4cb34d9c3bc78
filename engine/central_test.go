package engine

import (
	"bytes"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ferrylabs/ferry/engine/metadata"
	"github.com/ferrylabs/ferry/engine/metadata/etcdstore/etcdtest"
	"github.com/ferrylabs/ferry/engine/metadata/httpstore"
	"github.com/ferrylabs/ferry/transport"
)

// httpMetadataServer starts Ferry's HTTP metadata server on loopback and
// returns its metadata URL.
func httpMetadataServer(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(httpstore.NewServer())
	t.Cleanup(srv.Close)
	return srv.URL + "/metadata"
}

// centralEngine starts an engine named name publishing 127.0.0.1 to the
// metadata server.
func centralEngine(t *testing.T, server, cluster, name string) *Engine {
	t.Helper()
	e, err := New(Config{LocalServerName: name, MetadataServer: server, MetadataClusterID: cluster, RPCHost: "127.0.0.1"})
	if err != nil {
		t.Fatalf("New(%s, %s): %v", name, server, err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// storeFor opens a client of the same store for checks.
func storeFor(t *testing.T, server string) metadata.Store {
	t.Helper()
	s, err := OpenMetadataStore(ctxT(t), server)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestCentralStores(t *testing.T) {
	for _, tc := range []struct {
		kind   string
		server func(t *testing.T) string
	}{
		{"http", httpMetadataServer},
		{"etcd", func(t *testing.T) string { return "etcd://" + etcdtest.Start(t) }},
	} {
		t.Run(tc.kind, func(t *testing.T) { testCentral(t, tc.server(t)) })
	}
}

// testCentral runs two engines that find each other only through the
// store: transfers both ways, notifications by name, a region registered
// after the peer opened the segment, and the keys' life cycle.
func testCentral(t *testing.T, server string) {
	const cluster = "ferry-test"
	a := centralEngine(t, server, cluster, "prefill-0")
	b := centralEngine(t, server, cluster, "decode-0")
	if a.Name() != "prefill-0" || b.Name() != "decode-0" {
		t.Fatalf("segment names %q %q, want the configured names", a.Name(), b.Name())
	}
	st := storeFor(t, server)
	keys := metadata.NewKeys(cluster)
	raw, err := st.Get(ctxT(t), keys.RPCMeta("decode-0"))
	if err != nil {
		t.Fatalf("rpc_meta of decode-0: %v", err)
	}
	rm, err := metadata.DecodeRPCMeta(raw)
	if err != nil || rm.IPOrHostName != "127.0.0.1" || rm.RPCPort != b.daemon.Port() {
		t.Fatalf("rpc_meta %s (%v); want 127.0.0.1:%d", raw, err, b.daemon.Port())
	}

	const n = 256<<10 + 3
	src, dst, remote := make([]byte, n), make([]byte, n), make([]byte, n)
	mustRegister(t, a, src)
	mustRegister(t, a, dst)
	mustRegister(t, b, remote)
	raw, err = st.Get(ctxT(t), keys.Segment("decode-0"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := metadata.DecodeDesc(raw)
	if err != nil || d.Name != "decode-0" || len(d.Buffers) != 1 || d.Buffers[0].Addr != Addr(remote) || d.TCPDataPort == 0 {
		t.Fatalf("published descriptor %s (%v)", raw, err)
	}

	seg, err := a.OpenSegment(ctxT(t), "decode-0")
	if err != nil {
		t.Fatal(err)
	}
	fill(src, 5)
	if err := a.Transfer(ctxT(t), []Request{{Op: transport.Write, Local: Addr(src), Target: seg, TargetAddr: Addr(remote), Length: n}}); err != nil {
		t.Fatal(err)
	}
	if err := a.Transfer(ctxT(t), []Request{{Op: transport.Read, Local: Addr(dst), Target: seg, TargetAddr: Addr(remote), Length: n}}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(remote, src) || !bytes.Equal(dst, src) {
		t.Fatal("bytes differ after a transfer through a central store")
	}

	// A region b registers after a opened the segment: a's miss refetches
	// the descriptor from the store.
	later := make([]byte, 4096)
	mustRegister(t, b, later)
	if err := a.Transfer(ctxT(t), []Request{{Op: transport.Write, Local: Addr(src), Target: seg, TargetAddr: Addr(later), Length: 4096}}); err != nil {
		t.Fatalf("write to a region registered later: %v", err)
	}
	if !bytes.Equal(later, src[:4096]) {
		t.Fatal("bytes differ in the later region")
	}

	// Notifications go to the daemon named in rpc_meta.
	if err := a.SendNotifyByName(ctxT(t), "decode-0", Notify{Name: "prefill-0", NotifyMsg: "done"}); err != nil {
		t.Fatal(err)
	}
	if got := b.Notifies(); len(got) != 1 || got[0].NotifyMsg != "done" {
		t.Fatalf("notifies %+v", got)
	}
	if err := a.Probe(ctxT(t), "decode-0"); err != nil {
		t.Fatal(err)
	}

	// An unknown segment is a metadata error that says not found.
	if _, err := a.OpenSegment(ctxT(t), "nobody"); !errors.Is(err, ErrMetadata) || !errors.Is(err, metadata.ErrNotFound) {
		t.Fatalf("OpenSegment of an unknown name: %v", err)
	}

	// Close removes the engine's keys.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{keys.RPCMeta("decode-0"), keys.Segment("decode-0")} {
		if _, err := st.Get(ctxT(t), k); !errors.Is(err, metadata.ErrNotFound) {
			t.Fatalf("%s after Close: %v", k, err)
		}
	}
	if _, err := st.Get(ctxT(t), keys.RPCMeta("prefill-0")); err != nil {
		t.Fatalf("the other engine's key went too: %v", err)
	}
}

// Two running engines cannot share a name; the second leaves the first's
// keys alone. A name whose engine died is taken over.
func TestCentralNameInUse(t *testing.T) {
	server := httpMetadataServer(t)
	a := centralEngine(t, server, "", "node")
	_, err := New(Config{LocalServerName: "node", MetadataServer: server, RPCHost: "127.0.0.1"})
	if !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("second engine named node: %v", err)
	}
	st := storeFor(t, server)
	raw, err := st.Get(ctxT(t), metadata.NewKeys("").RPCMeta("node"))
	if err != nil {
		t.Fatalf("the first engine's rpc_meta is gone: %v", err)
	}
	if rm, _ := metadata.DecodeRPCMeta(raw); rm.RPCPort != a.daemon.Port() {
		t.Fatalf("rpc_meta %s now names another daemon than %d", raw, a.daemon.Port())
	}
	// An entry left by a dead engine (its port answers nothing).
	dead := metadata.AppendRPCMeta(nil, metadata.RPCMetaDesc{IPOrHostName: "127.0.0.1", RPCPort: 1})
	if err := st.Put(ctxT(t), metadata.NewKeys("").RPCMeta("crashed"), dead); err != nil {
		t.Fatal(err)
	}
	b := centralEngine(t, server, "", "crashed")
	raw, _ = st.Get(ctxT(t), metadata.NewKeys("").RPCMeta("crashed"))
	if rm, _ := metadata.DecodeRPCMeta(raw); rm.RPCPort != b.daemon.Port() {
		t.Fatalf("stale entry not taken over: %s", raw)
	}
}

// A caller-owned store is used as is and left open by Close.
func TestCentralCallerStore(t *testing.T) {
	server := httpMetadataServer(t)
	st := storeFor(t, server)
	e, err := New(Config{LocalServerName: "node", MetadataStore: st, RPCHost: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(ctxT(t), metadata.NewKeys("").RPCMeta("node")); err != nil {
		t.Fatalf("rpc_meta under the default cluster: %v", err)
	}
	e.Close()
	if err := st.Put(ctxT(t), "still/open", []byte("{}")); err != nil {
		t.Fatalf("the caller's store was closed by the engine: %v", err)
	}
}

func TestCentralBadServers(t *testing.T) {
	for _, s := range []string{"zk://10.0.0.1:2181", "etcd://nohost", "redis://a:1,b:2"} {
		if _, err := New(Config{LocalServerName: "n", MetadataServer: s, RPCHost: "127.0.0.1"}); !errors.Is(err, ErrInvalidArgument) || !errors.Is(err, metadata.ErrBadServer) {
			t.Errorf("%s: %v", s, err)
		}
	}
	// Nothing listens there: a bounded, clear failure.
	start := time.Now()
	_, err := New(Config{LocalServerName: "n", MetadataServer: "http://127.0.0.1:1/metadata", RPCHost: "127.0.0.1"})
	if !errors.Is(err, ErrMetadata) || !errors.Is(err, metadata.ErrStore) {
		t.Fatalf("unreachable store: %v", err)
	}
	if time.Since(start) > 15*time.Second {
		t.Fatalf("took %v", time.Since(start))
	}
	if _, err := New(Config{LocalServerName: "n", MetadataServer: MetadataP2P, MetadataStore: storeFor(t, httpMetadataServer(t))}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("a store with P2PHANDSHAKE: %v", err)
	}
}

// A store that fails while memory is registered: the registration is
// undone, so peers never see a region the store does not describe.
func TestCentralRegisterRollsBackWhenThePublicationFails(t *testing.T) {
	srv := httptest.NewServer(httpstore.NewServer())
	defer srv.Close()
	e := centralEngine(t, srv.URL+"/metadata", "", "node")
	srv.CloseClientConnections()
	srv.Listener.Close()
	mem := make([]byte, 8192)
	err := e.RegisterMemory(mem, "cpu:0", true)
	if !errors.Is(err, ErrMetadata) {
		t.Fatalf("RegisterMemory with the store down: %v", err)
	}
	if len(e.LocalDesc().Buffers) != 0 {
		t.Fatalf("the region stayed registered: %+v", e.LocalDesc().Buffers)
	}
	if err := e.RegisterMemory(mem, "cpu:0", true); !errors.Is(err, ErrMetadata) {
		t.Fatalf("second attempt: %v (want the same failure, not an overlap)", err)
	}
}

// An engine restarted under the same name listens on another port: a
// peer that cached the old address looks the name up again.
func TestCentralPeerRestartedUnderItsName(t *testing.T) {
	server := httpMetadataServer(t)
	a := centralEngine(t, server, "", "prefill-0")
	b := centralEngine(t, server, "", "decode-0")
	if err := a.SendNotifyByName(ctxT(t), "decode-0", Notify{Name: "prefill-0", NotifyMsg: "one"}); err != nil {
		t.Fatal(err)
	}
	old := b.daemon.Port()
	b.Close()
	b2 := centralEngine(t, server, "", "decode-0")
	if b2.daemon.Port() == old {
		t.Skip("the restarted engine got the same port; nothing to look up again")
	}
	if err := a.SendNotifyByName(ctxT(t), "decode-0", Notify{Name: "prefill-0", NotifyMsg: "two"}); err != nil {
		t.Fatalf("notify after the peer restarted: %v", err)
	}
	if got := b2.Notifies(); len(got) != 1 || got[0].NotifyMsg != "two" {
		t.Fatalf("the restarted engine got %+v", got)
	}
	if err := a.Probe(ctxT(t), "decode-0"); err != nil {
		t.Fatal(err)
	}
}
