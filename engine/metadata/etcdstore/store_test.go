package etcdstore

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/ferrylabs/ferry/engine/metadata"
	"github.com/ferrylabs/ferry/engine/metadata/etcdstore/etcdtest"
	"github.com/ferrylabs/ferry/engine/metadata/storetest"
)

func open(t testing.TB, ep string, opts Options) *Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := Open(ctx, []string{ep}, opts)
	if err != nil {
		t.Fatalf("Open %s: %v", ep, err)
	}
	return s
}

func TestConformance(t *testing.T) {
	ep := etcdtest.Start(t)
	storetest.Run(t, func(t *testing.T) metadata.Store { return open(t, ep, Options{}) })
}

// TestMooncakeLayout checks that values are the key's own value with no
// lease, as Mooncake's etcd plugin reads and writes them.
func TestMooncakeLayout(t *testing.T) {
	ep := etcdtest.Start(t)
	s := open(t, ep, Options{})
	defer s.Close()
	raw, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	keys := metadata.NewKeys("")
	k := keys.RPCMeta("10.0.0.1:15001")
	v := `{"ip_or_host_name":"10.0.0.1","rpc_port":15002}`
	if err := s.Put(ctx, k, []byte(v)); err != nil {
		t.Fatal(err)
	}
	resp, err := raw.Get(ctx, "mooncake/rpc_meta/10.0.0.1:15001")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("raw Get: %v, %v", resp, err)
	}
	if got := string(resp.Kvs[0].Value); got != v {
		t.Fatalf("stored value %q, want %q", got, v)
	}
	if resp.Kvs[0].Lease != 0 {
		t.Fatalf("key has lease %d, want none", resp.Kvs[0].Lease)
	}

	// A value another engine wrote directly is read verbatim.
	seg := keys.Segment("10.0.0.2:15001")
	desc := `{"name":"10.0.0.2:15001","protocol":"tcp"}`
	if _, err := raw.Put(ctx, seg, desc); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, seg)
	if err != nil || string(got) != desc {
		t.Fatalf("Get of a raw value: %q, %v", got, err)
	}
	if err := s.Delete(ctx, seg); err != nil {
		t.Fatal(err)
	}
	if resp, err := raw.Get(ctx, seg); err != nil || len(resp.Kvs) != 0 {
		t.Fatalf("raw Get after Delete: %v, %v", resp.Kvs, err)
	}
}

// TestPutDoesNotRetain checks the caller may reuse value after Put.
func TestPutDoesNotRetain(t *testing.T) {
	s := open(t, etcdtest.Start(t), Options{})
	defer s.Close()
	ctx := context.Background()
	buf := []byte(`{"a":1}`)
	if err := s.Put(ctx, "k", buf); err != nil {
		t.Fatal(err)
	}
	copy(buf, `{"b":2}`)
	got, err := s.Get(ctx, "k")
	if err != nil || string(got) != `{"a":1}` {
		t.Fatalf("Get: %q, %v", got, err)
	}
}

func TestEmptyKey(t *testing.T) {
	s := open(t, etcdtest.Start(t), Options{})
	defer s.Close()
	ctx := context.Background()
	_, err := s.Get(ctx, "")
	if !errors.Is(err, metadata.ErrStore) || !errors.Is(err, ErrEmptyKey) {
		t.Fatalf("Get of empty key: %v", err)
	}
	if err := s.Put(ctx, "", []byte("{}")); !errors.Is(err, ErrEmptyKey) {
		t.Fatalf("Put of empty key: %v", err)
	}
	if err := s.Delete(ctx, ""); !errors.Is(err, ErrEmptyKey) {
		t.Fatalf("Delete of empty key: %v", err)
	}
}

func TestClosed(t *testing.T) {
	s := open(t, etcdtest.Start(t), Options{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := s.Get(context.Background(), "mooncake/ram/x")
	if !errors.Is(err, metadata.ErrStore) || !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "mooncake/ram/x") {
		t.Fatalf("Get after Close: %v", err)
	}
	if err := s.Delete(context.Background(), "k"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Delete after Close: %v", err)
	}
}

// TestStoppedServer checks requests to a dead server fail with ErrStore
// within about RequestTimeout, naming the key and the endpoint.
func TestStoppedServer(t *testing.T) {
	srv := etcdtest.StartServer(t)
	const rt = time.Second
	s := open(t, srv.Endpoint(), Options{RequestTimeout: rt})
	defer s.Close()
	ctx := context.Background()
	if err := s.Put(ctx, "k", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	srv.Stop()

	check := func(op string, f func() error) {
		t.Helper()
		start := time.Now()
		err := f()
		took := time.Since(start)
		if !errors.Is(err, metadata.ErrStore) || errors.Is(err, metadata.ErrNotFound) {
			t.Fatalf("%s on a stopped server: %v, want ErrStore", op, err)
		}
		if !errors.Is(err, ErrNoAnswer) {
			t.Errorf("%s on a stopped server: %v, want ErrNoAnswer", op, err)
		}
		if msg := err.Error(); !strings.Contains(msg, `"mooncake/ram/n1"`) || !strings.Contains(msg, srv.Endpoint()) {
			t.Errorf("%s error %q does not name the key and the endpoint", op, msg)
		}
		if took > rt+3*time.Second {
			t.Errorf("%s took %v with RequestTimeout %v", op, took, rt)
		}
	}
	check("Get", func() error { _, err := s.Get(ctx, "mooncake/ram/n1"); return err })
	check("Put", func() error { return s.Put(ctx, "mooncake/ram/n1", []byte("{}")) })
	check("Delete", func() error { return s.Delete(ctx, "mooncake/ram/n1") })
}

// deadEndpoint returns a loopback endpoint nothing listens on.
func deadEndpoint(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ep := l.Addr().String()
	l.Close()
	return ep
}

func TestOpenUnreachable(t *testing.T) {
	ep := deadEndpoint(t)
	const dt = 500 * time.Millisecond
	start := time.Now()
	s, err := Open(context.Background(), []string{ep}, Options{DialTimeout: dt})
	took := time.Since(start)
	if err == nil {
		s.Close()
		t.Fatalf("Open of %s with nothing listening succeeded", ep)
	}
	if !errors.Is(err, metadata.ErrStore) || !errors.Is(err, ErrNoAnswer) || !strings.Contains(err.Error(), ep) {
		t.Fatalf("Open of %s: %v, want ErrStore/ErrNoAnswer naming the endpoint", ep, err)
	}
	if took > dt+3*time.Second {
		t.Fatalf("Open took %v with DialTimeout %v", took, dt)
	}
}

func TestOpenBadEndpoints(t *testing.T) {
	for _, eps := range [][]string{nil, {}, {"nohost"}, {"127.0.0.1:2379", "h:"}, {"https://127.0.0.1:2379"}, {"127.0.0.1:2379/x"}} {
		s, err := Open(context.Background(), eps, Options{DialTimeout: time.Second})
		if err == nil {
			s.Close()
			t.Fatalf("Open %q succeeded", eps)
		}
		if !errors.Is(err, metadata.ErrStore) || !errors.Is(err, metadata.ErrBadServer) {
			t.Fatalf("Open %q: %v, want ErrStore and ErrBadServer", eps, err)
		}
	}
}

func TestOpenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	s, err := Open(ctx, []string{deadEndpoint(t)}, Options{DialTimeout: 30 * time.Second})
	if err == nil {
		s.Close()
		t.Fatal("Open succeeded")
	}
	if !errors.Is(err, metadata.ErrStore) || errors.Is(err, ErrNoAnswer) {
		t.Fatalf("cancelled Open: %v, want ErrStore and not ErrNoAnswer", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("cancelled Open took %v", took)
	}
}

// TestCancel checks a cancelled context ends a request promptly, both
// before the call and while it waits for a dead server.
func TestCancel(t *testing.T) {
	srv := etcdtest.StartServer(t)
	s := open(t, srv.Endpoint(), Options{RequestTimeout: 30 * time.Second})
	defer s.Close()

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Get(ctx, "k"); !errors.Is(err, metadata.ErrStore) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Get with a cancelled context: %v, want ErrStore and context.Canceled", err)
	}
	if err := s.Put(ctx, "k", []byte("{}")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Put with a cancelled context: %v", err)
	}

	srv.Stop()
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	_, err := s.Get(ctx, "k")
	if !errors.Is(err, metadata.ErrStore) || !errors.Is(err, context.Canceled) || errors.Is(err, ErrNoAnswer) {
		t.Fatalf("Get cancelled while waiting: %v, want ErrStore and context.Canceled", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("cancelled Get took %v", took)
	}

	// A caller deadline earlier than RequestTimeout wins.
	dctx, dcancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer dcancel()
	start = time.Now()
	err = s.Put(dctx, "k", []byte("{}"))
	if !errors.Is(err, metadata.ErrStore) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Put past the caller's deadline: %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("Put with a 300ms deadline took %v", took)
	}
}

func BenchmarkGet(b *testing.B) {
	s := open(b, etcdtest.Start(b), Options{})
	defer s.Close()
	ctx := context.Background()
	v := []byte(`{"ip_or_host_name":"10.0.0.1","rpc_port":15002}`)
	if err := s.Put(ctx, "mooncake/rpc_meta/bench", v); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.Get(ctx, "mooncake/rpc_meta/bench"); err != nil {
			b.Fatal(err)
		}
	}
}

// TestOneDeadEndpoint checks a cluster list with a dead endpoint still
// works through the live one.
func TestOneDeadEndpoint(t *testing.T) {
	live := etcdtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := Open(ctx, []string{deadEndpoint(t), live}, Options{DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("Open with one live endpoint: %v", err)
	}
	defer s.Close()
	for i := range 5 {
		k := "mooncake/ram/n" + string(rune('0'+i))
		if err := s.Put(ctx, k, []byte(`{}`)); err != nil {
			t.Fatalf("Put %d: %v", i, err)
		}
		if got, err := s.Get(ctx, k); err != nil || string(got) != `{}` {
			t.Fatalf("Get %d: %q, %v", i, got, err)
		}
	}
}
