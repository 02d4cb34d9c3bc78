package client

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/ferrylabs/ferry/engine/metadata/etcdstore/etcdtest"
	"github.com/ferrylabs/ferry/offload/config"
	"github.com/ferrylabs/ferry/offload/master"
	"github.com/ferrylabs/ferry/offload/owner"
)

// haMaster is one master campaigning through etcd.
type haMaster struct {
	srv     *master.Server
	cancel  context.CancelFunc
	elected chan string
	done    chan error
	once    sync.Once
}

func startHAMaster(t *testing.T, etcd, cluster string, ttl time.Duration) *haMaster {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := master.NewServer(master.Config{Options: master.Options{EnableOffload: true, ClientTTL: ttl, Logger: quiet}, Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &haMaster{srv: srv, cancel: cancel, elected: make(chan string, 1), done: make(chan error, 1)}
	go func() {
		m.done <- master.RunHA(ctx, srv, master.HAConfig{Endpoints: []string{etcd}, ClusterID: cluster,
			SessionTTL: 2 * time.Second, DialTimeout: 2 * time.Second, Logger: quiet,
			OnElected: func(a string) { m.elected <- a }})
	}()
	t.Cleanup(m.stop)
	return m
}

// stop steps down (if leading) and closes the server; idempotent.
func (m *haMaster) stop() {
	m.once.Do(func() {
		m.cancel()
		if err := <-m.done; err != nil {
			slog.Warn("RunHA", "err", err)
		}
		m.srv.Close()
	})
}

// TestHAFailoverThroughEtcd: an owner and a requester reach the masters
// through "etcd://.../cluster"; the leader serves a put and a get; the
// standby does not serve meanwhile; the leader stops, the standby takes
// over, the owner re-mounts and rescans, and the same requester
// connection reads the objects again.
func TestHAFailoverThroughEtcd(t *testing.T) {
	ep := etcdtest.Start(t)
	a := startHAMaster(t, ep, "ha-e2e", 3*time.Second)
	select {
	case <-a.elected:
	case <-time.After(20 * time.Second):
		t.Fatal("first master not elected")
	}
	b := startHAMaster(t, ep, "ha-e2e", 3*time.Second)

	c := newCluster(t, 3*time.Second) // its own master stays unused
	c.maddr = "etcd://" + ep + "/ha-e2e"
	c.cfg.RPCTimeout = 2 * time.Second
	conn, closer, err := DialMaster(c.maddr, c.cfg)
	if err != nil {
		t.Fatal(err)
	}
	eng := tcpEngine(t)
	w, err := owner.New(c.ctx, owner.Options{Config: c.ownerConfig("ha-a"), Engine: eng, Master: owner.NewMasterClient(conn),
		Lookup: c.lookup(nil), UnlockedStaging: true, PingInterval: 100 * time.Millisecond})
	if err != nil {
		closer.Close()
		t.Fatalf("owner through etcd: %v", err)
	}
	t.Cleanup(func() {
		w.Close(context.Background())
		closer.Close()
	})

	reng := tcpEngine(t)
	buf, err := NewBuffer(reng, 16<<20, true)
	if err != nil {
		t.Fatal(err)
	}
	rconn, rcloser, err := DialMaster(c.maddr, c.cfg)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := New(Options{Config: c.cfg, Engine: reng, Master: NewMasterClient(rconn), MinStoreRate: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cl.Close()
		rcloser.Close()
		buf.Close()
	})
	r := &requester{Client: cl, eng: reng, buf: buf, conn: rconn}

	sizes := []int{100, 70000, 1 << 20}
	keys, srcs := putAll(t, c.ctx, r, "ha", sizes)
	readAll := func(within time.Duration) {
		t.Helper()
		deadline := time.Now().Add(within)
		for {
			res, dst := getAll(t, c.ctx, r, keys, sizes)
			var bad error
			for i, g := range res {
				if g.Err != nil {
					bad = g.Err
				} else if !bytes.Equal(dst[i][:sizes[i]], srcs[i]) {
					t.Fatalf("key %q: wrong bytes", keys[i])
				}
			}
			if bad == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("keys not readable within %v: %v", within, bad)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	readAll(10 * time.Second)
	if b.srv.Leading() {
		t.Fatal("standby leads while the leader lives")
	}

	a.stop()
	select {
	case <-b.elected:
	case <-time.After(15 * time.Second):
		t.Fatal("standby did not take over")
	}
	readAll(30 * time.Second)
	keysAtB, err := NewMasterClient(rconn).List(c.ctx, c.cfg.TenantID, []byte("ha"))
	if err != nil || len(keysAtB) != len(keys) {
		t.Fatalf("new leader lists %d keys (%v), want %d after the owner's rescan", len(keysAtB), err, len(keys))
	}
}

func TestDialMasterEtcdUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	cfg := config.Default()
	cfg.RPCConnectTimeout = time.Second
	start := time.Now()
	_, _, err = DialMaster("etcd://"+dead, cfg)
	if !errors.Is(err, ErrEtcd) {
		t.Fatalf("DialMaster with etcd down = %v, want ErrEtcd", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("took %v to give up", d)
	}
	if _, _, err := DialMaster("redis://r:6379", cfg); !errors.Is(err, config.ErrMasterAddress) {
		t.Fatalf("redis:// = %v, want config.ErrMasterAddress", err)
	}
	// A plain address is dialled lazily, as by Dial.
	conn, closer, err := DialMaster(dead, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if conn.Target() != dead {
		t.Fatalf("target %q, want %q", conn.Target(), dead)
	}
	if err := closer.Close(); err != nil {
		t.Fatal(err)
	}
}

// A read-only call made while no master leads is retried until one does
// (within its deadline), so a get during a failover does not fail.
func TestHARetriesReadsBetweenLeaders(t *testing.T) {
	ep := etcdtest.Start(t)
	a := startHAMaster(t, ep, "ha-gap", 3*time.Second)
	select {
	case <-a.elected:
	case <-time.After(20 * time.Second):
		t.Fatal("first master not elected")
	}
	cfg := config.Default()
	conn, closer, err := DialMaster("etcd://"+ep+"/ha-gap", cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	m := NewMasterClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := m.List(ctx, "default", nil); err != nil {
		t.Fatalf("List at the first leader: %v", err)
	}
	a.stop() // no master leads now
	done := make(chan error, 1)
	go func() {
		_, err := m.List(ctx, "default", nil)
		done <- err
	}()
	time.Sleep(time.Second)
	select {
	case err := <-done:
		t.Fatalf("List ended while no master led: %v", err)
	default:
	}
	b := startHAMaster(t, ep, "ha-gap", 3*time.Second)
	select {
	case <-b.elected:
	case <-time.After(20 * time.Second):
		t.Fatal("second master not elected")
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("List across the gap: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("List did not finish after the new leader was elected")
	}
}
