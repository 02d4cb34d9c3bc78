package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ferrylabs/ferry/engine/metadata/etcdstore/etcdtest"
	"github.com/ferrylabs/ferry/offload/client"
	"github.com/ferrylabs/ferry/offload/config"
)

// haMasterCmd runs `ferry master --enable_ha` in process until cancel.
type haMasterCmd struct {
	lines  chan string
	done   chan error
	cancel context.CancelFunc
}

func startHAMasterCmd(t *testing.T, args ...string) *haMasterCmd {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	root := newRootCmd()
	root.SetArgs(append([]string{"master", "--enable_offload", "--enable_ha", "--rpc_address", "127.0.0.1", "--rpc_port", "0",
		"--ha_session_ttl", "2", "--log-level", "error"}, args...))
	root.SetOut(pw)
	root.SetErr(io.Discard)
	m := &haMasterCmd{lines: make(chan string, 8), done: make(chan error, 1), cancel: cancel}
	go func() {
		err := root.ExecuteContext(ctx)
		pw.Close()
		m.done <- err
	}()
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			m.lines <- sc.Text()
		}
		close(m.lines)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-m.done:
		case <-time.After(20 * time.Second):
			t.Error("ferry master did not stop")
		}
	})
	return m
}

// line waits for the next output line starting with prefix.
func (m *haMasterCmd) line(t *testing.T, prefix string, within time.Duration) string {
	t.Helper()
	timer := time.After(within)
	for {
		select {
		case l, ok := <-m.lines:
			if !ok {
				t.Fatalf("output ended before %q", prefix)
			}
			if strings.HasPrefix(l, prefix) {
				return l
			}
		case <-timer:
			t.Fatalf("no %q line within %v", prefix, within)
		}
	}
}

// TestMasterHACommandFailover runs two `ferry master --enable_ha` and an
// `etcd://` client connection: the first leads and answers, the second
// stays standby; stopping the first hands leadership to the second and
// the same client connection reaches it.
func TestMasterHACommandFailover(t *testing.T) {
	ep := etcdtest.Start(t)
	a := startHAMasterCmd(t, "--etcd_endpoints", ep, "--cluster_id", "cmdtest")
	aAddr := strings.Fields(strings.TrimPrefix(a.line(t, "master listening on ", 20*time.Second), "master listening on "))[0]
	if l := a.line(t, "master elected leader", 20*time.Second); !strings.HasSuffix(l, aAddr) {
		t.Fatalf("leader line %q does not name %s", l, aAddr)
	}
	b := startHAMasterCmd(t, "--etcd_endpoints", "127.0.0.1:1;"+ep, "--cluster_id", "cmdtest")
	bAddr := strings.Fields(strings.TrimPrefix(b.line(t, "master listening on ", 20*time.Second), "master listening on "))[0]

	cfg := config.Default()
	cfg.RPCConnectTimeout = 2 * time.Second
	conn, closer, err := client.DialMaster("etcd://"+ep+"/cmdtest", cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	mc := client.NewMasterClient(conn)
	list := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := mc.List(ctx, "default", nil)
		return err
	}
	if err := list(); err != nil {
		t.Fatalf("list through etcd at leader %s: %v", aAddr, err)
	}
	select {
	case l := <-b.lines:
		t.Fatalf("standby printed %q while the leader lives", l)
	case <-time.After(300 * time.Millisecond):
	}

	a.cancel()
	if err := <-a.done; err != nil {
		t.Fatalf("leader exit: %v", err)
	}
	a.done <- nil
	if l := b.line(t, "master elected leader", 15*time.Second); !strings.HasSuffix(l, bAddr) {
		t.Fatalf("new leader line %q does not name %s", l, bAddr)
	}
	deadline := time.Now().Add(10 * time.Second)
	for err := list(); err != nil; err = list() {
		if time.Now().After(deadline) {
			t.Fatalf("list through etcd after failover: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestMasterHACommandEtcdUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	m := startHAMasterCmd(t, "--etcd_endpoints", dead)
	select {
	case err := <-m.done:
		if err == nil || !strings.Contains(err.Error(), "etcd unreachable") || !strings.Contains(err.Error(), dead) {
			t.Fatalf("exit with etcd down = %v, want an error naming etcd and %s", err, dead)
		}
		m.done <- err
	case <-time.After(20 * time.Second):
		t.Fatal("ferry master kept running without etcd")
	}
}

func TestMasterHACommandRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--enable_ha"},
		{"--enable_ha", "--etcd_endpoints", "nohostport"},
		{"--etcd_endpoints", "127.0.0.1:2379"},
		{"--enable_ha", "--etcd_endpoints", "127.0.0.1:2379", "--ha_session_ttl", "0"},
		{"--enable_ha", "--etcd_endpoints", "127.0.0.1:2379", "--cluster_id", "/x"},
	} {
		root := newRootCmd()
		root.SetArgs(append([]string{"master"}, args...))
		root.SetOut(io.Discard)
		root.SetErr(io.Discard)
		err := root.Execute()
		var ue usageError
		if !errors.As(err, &ue) {
			t.Errorf("%v: err = %v, want a usage error", args, err)
		}
	}
}
