package redisstore

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ferrylabs/ferry/engine/metadata"
	"github.com/ferrylabs/ferry/engine/metadata/storetest"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func mustOpen(t *testing.T, addr string, o Options) *Store {
	t.Helper()
	s, err := Open(testCtx(t), addr, o)
	if err != nil {
		t.Fatalf("Open %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	srv := startRedis(t, "")
	storetest.Run(t, func(t *testing.T) metadata.Store { return mustOpen(t, srv.addr, Options{}) })
}

// Mooncake's plugin keeps the JSON text as the plain string value of the
// key (SET/GET/DEL): check the layout with a client that is not go-redis.
func TestMooncakeLayout(t *testing.T) {
	srv := startRedis(t, "")
	s := mustOpen(t, srv.addr, Options{})
	keys := metadata.NewKeys("")
	k := keys.RPCMeta("node-a")
	v := []byte(`{"ip_or_host_name":"10.0.0.1","rpc_port":15123}`)
	if err := s.Put(testCtx(t), k, v); err != nil {
		t.Fatal(err)
	}
	if r, err := rawCmd(srv.addr, "TYPE", k); err != nil || r != "+string" {
		t.Fatalf("TYPE %s = %q, %v; want +string", k, r, err)
	}
	if r, err := rawCmd(srv.addr, "GET", k); err != nil || r != string(v) {
		t.Fatalf("raw GET %s = %q, %v; want %q", k, r, err, v)
	}
	// A value as Mooncake writes it (Json::FastWriter ends it with a
	// newline) comes back verbatim and decodes.
	seg := keys.Segment("10.0.0.2:15001")
	mc := `{"ip_or_host_name":"10.0.0.2","rpc_port":15001}` + "\n"
	if r, err := rawCmd(srv.addr, "SET", seg, mc); err != nil || r != "+OK" {
		t.Fatalf("raw SET: %q, %v", r, err)
	}
	got, err := s.Get(testCtx(t), seg)
	if err != nil || string(got) != mc {
		t.Fatalf("Get of a Mooncake value: %q, %v; want %q", got, err, mc)
	}
	if d, err := metadata.DecodeRPCMeta(got); err != nil || d.Addr() != "10.0.0.2:15001" {
		t.Fatalf("DecodeRPCMeta: %+v, %v", d, err)
	}
	if err := s.Delete(testCtx(t), k); err != nil {
		t.Fatal(err)
	}
	if r, err := rawCmd(srv.addr, "EXISTS", k); err != nil || r != ":0" {
		t.Fatalf("EXISTS after Delete = %q, %v; want :0", r, err)
	}
}

func TestPassword(t *testing.T) {
	const pw = "s3cr3t-Pa55word"
	srv := startRedis(t, "", "--requirepass", pw)

	s := mustOpen(t, srv.addr, Options{Password: pw})
	v := []byte(`{"auth":true}`)
	if err := s.Put(testCtx(t), "auth/k", v); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(testCtx(t), "auth/k"); err != nil || !bytes.Equal(got, v) {
		t.Fatalf("Get with the right password: %q, %v", got, err)
	}

	const wrong = "wr0ng-Pa55word-xyz"
	for _, o := range []Options{{Password: wrong}, {Password: wrong, Username: "default"}, {}} {
		s, err := Open(testCtx(t), srv.addr, o)
		if err == nil {
			s.Close()
			t.Fatalf("Open with password %q succeeded", o.Password)
		}
		if !errors.Is(err, metadata.ErrStore) {
			t.Fatalf("Open with a bad password: %v, want ErrStore", err)
		}
		msg := err.Error()
		if strings.Contains(msg, wrong) || strings.Contains(msg, pw) {
			t.Fatalf("error reveals a password: %s", msg)
		}
		if !strings.Contains(msg, srv.addr) {
			t.Fatalf("error does not name the server %s: %s", srv.addr, msg)
		}
	}
}

func TestRedact(t *testing.T) {
	err := redact(errors.New("AUTH hunter2 failed: hunter2"), "hunter2")
	if strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "<redacted>") {
		t.Fatalf("redact: %q", err)
	}
	orig := errors.New("plain")
	if redact(orig, "hunter2") != orig || redact(orig, "") != orig {
		t.Fatal("redact changed an error without the secret")
	}
}

func TestDBIndex(t *testing.T) {
	srv := startRedis(t, "")
	s1 := mustOpen(t, srv.addr, Options{DB: 1})
	s0 := mustOpen(t, srv.addr, Options{})
	v := []byte(`{"db":1}`)
	if err := s1.Put(testCtx(t), "db/k", v); err != nil {
		t.Fatal(err)
	}
	if _, err := s0.Get(testCtx(t), "db/k"); !errors.Is(err, metadata.ErrNotFound) {
		t.Fatalf("DB 0 sees DB 1's key: %v", err)
	}
	if got, err := s1.Get(testCtx(t), "db/k"); err != nil || !bytes.Equal(got, v) {
		t.Fatalf("DB 1 Get: %q, %v", got, err)
	}
	if r, err := rawCmd(srv.addr, "EXISTS", "db/k"); err != nil || r != ":0" {
		t.Fatalf("raw EXISTS in db 0 = %q, %v; want :0", r, err)
	}
	// A DB the server does not have fails at Open.
	if s, err := Open(testCtx(t), srv.addr, Options{DB: 200}); err == nil {
		s.Close()
		t.Fatal("Open of DB 200 on a 16-database server succeeded")
	} else if !errors.Is(err, metadata.ErrStore) || !strings.Contains(err.Error(), "db 200") {
		t.Fatalf("Open of DB 200: %v", err)
	}
}

func TestBadOptions(t *testing.T) {
	for _, c := range []struct {
		addr string
		o    Options
		want string
	}{
		{"127.0.0.1", Options{}, `"127.0.0.1"`},
		{":6379", Options{}, `":6379"`},
		{"127.0.0.1:6379", Options{DB: 256}, "DB 256"},
		{"127.0.0.1:6379", Options{DB: -1}, "DB -1"},
		{"127.0.0.1:6379", Options{Timeout: -time.Second}, "Timeout"},
		{"127.0.0.1:6379", Options{DialTimeout: -time.Second}, "DialTimeout"},
	} {
		s, err := Open(testCtx(t), c.addr, c.o)
		if err == nil {
			s.Close()
			t.Fatalf("Open(%q, %+v) succeeded", c.addr, c.o)
		}
		if !errors.Is(err, ErrBadOptions) || !errors.Is(err, metadata.ErrStore) || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("Open(%q, %+v): %v; want ErrBadOptions naming %s", c.addr, c.o, err, c.want)
		}
	}
}

func TestUnreachable(t *testing.T) {
	addr := freeAddr(t) // nothing listens there
	start := time.Now()
	s, err := Open(testCtx(t), addr, Options{DialTimeout: time.Second})
	if err == nil {
		s.Close()
		t.Fatal("Open of a closed port succeeded")
	}
	if !errors.Is(err, metadata.ErrStore) || !strings.Contains(err.Error(), addr) {
		t.Fatalf("Open of a closed port: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Open of a closed port took %v with DialTimeout 1s", d)
	}
}

func TestHungServerAtOpen(t *testing.T) {
	srv := startRedis(t, "")
	srv.pause(t)
	start := time.Now()
	s, err := Open(testCtx(t), srv.addr, Options{DialTimeout: 300 * time.Millisecond})
	if err == nil {
		s.Close()
		t.Fatal("Open of a hung server succeeded")
	}
	if !errors.Is(err, metadata.ErrStore) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), srv.addr) {
		t.Fatalf("Open of a hung server: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Open of a hung server took %v with DialTimeout 300ms", d)
	}
}

func TestServerKilled(t *testing.T) {
	srv := startRedis(t, "")
	s := mustOpen(t, srv.addr, Options{Timeout: time.Second})
	if err := s.Put(testCtx(t), "k", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	srv.stop()
	for _, op := range []struct {
		name string
		do   func() error
	}{
		{"GET", func() error { _, err := s.Get(testCtx(t), "gone/k"); return err }},
		{"SET", func() error { return s.Put(testCtx(t), "gone/k", []byte("{}")) }},
		{"DEL", func() error { return s.Delete(testCtx(t), "gone/k") }},
	} {
		start := time.Now()
		err := op.do()
		if !errors.Is(err, metadata.ErrStore) || errors.Is(err, metadata.ErrNotFound) {
			t.Fatalf("%s with the server killed: %v, want ErrStore", op.name, err)
		}
		if msg := err.Error(); !strings.Contains(msg, srv.addr) || !strings.Contains(msg, `"gone/k"`) || !strings.Contains(msg, op.name) {
			t.Fatalf("%s error does not name the server, the command and the key: %s", op.name, msg)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Fatalf("%s with the server killed took %v with Timeout 1s", op.name, d)
		}
	}
}

func TestHungServerTimeout(t *testing.T) {
	srv := startRedis(t, "")
	s := mustOpen(t, srv.addr, Options{Timeout: 300 * time.Millisecond})
	srv.pause(t)
	start := time.Now()
	_, err := s.Get(testCtx(t), "hung/k")
	if !errors.Is(err, metadata.ErrStore) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Get from a hung server: %v, want ErrStore and DeadlineExceeded", err)
	}
	if !strings.Contains(err.Error(), `"hung/k"`) || !strings.Contains(err.Error(), srv.addr) {
		t.Fatalf("error does not name the key and the server: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("Get from a hung server took %v with Timeout 300ms", d)
	}
}

func TestContextHonoured(t *testing.T) {
	srv := startRedis(t, "")
	s := mustOpen(t, srv.addr, Options{Timeout: 30 * time.Second})
	srv.pause(t)

	// An earlier caller deadline wins over the store's Timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := s.Put(ctx, "ctx/k", []byte("{}"))
	if !errors.Is(err, metadata.ErrStore) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Put past the caller's deadline: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Put ignored a 200ms caller deadline: %v", d)
	}

	// Cancellation without a deadline.
	ctx2, cancel2 := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel2)
	start = time.Now()
	_, err = s.Get(ctx2, "ctx/k")
	if !errors.Is(err, metadata.ErrStore) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Get cancelled: %v, want ErrStore and Canceled", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Get ignored cancellation for %v", d)
	}

	// An already cancelled context fails Open at once.
	ctx3, cancel3 := context.WithCancel(context.Background())
	cancel3()
	if s, err := Open(ctx3, srv.addr, Options{}); err == nil {
		s.Close()
		t.Fatal("Open with a cancelled context succeeded")
	} else if !errors.Is(err, metadata.ErrStore) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Open with a cancelled context: %v", err)
	}
}

// A restarted server is reached again without reopening the store.
func TestServerRestart(t *testing.T) {
	srv := startRedis(t, "")
	s := mustOpen(t, srv.addr, Options{Timeout: 2 * time.Second})
	if err := s.Put(testCtx(t), "r/k", []byte(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	srv.stop()
	srv2 := startRedis(t, srv.addr)
	if err := s.Put(testCtx(t), "r/k", []byte(`{"a":2}`)); err != nil {
		t.Fatalf("Put after a restart on %s: %v", srv2.addr, err)
	}
	if got, err := s.Get(testCtx(t), "r/k"); err != nil || string(got) != `{"a":2}` {
		t.Fatalf("Get after a restart: %q, %v", got, err)
	}
}

func TestCloseIdempotent(t *testing.T) {
	srv := startRedis(t, "")
	s, err := Open(testCtx(t), srv.addr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := s.Close(); err != nil {
			t.Fatalf("Close #%d: %v", i+1, err)
		}
	}
	err = s.Delete(testCtx(t), "c/k")
	if !errors.Is(err, ErrClosed) || !errors.Is(err, metadata.ErrStore) || !strings.Contains(err.Error(), `"c/k"`) {
		t.Fatalf("Delete after Close: %v", err)
	}
}
