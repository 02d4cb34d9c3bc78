package master

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/ferrylabs/ferry/engine/metadata/etcdstore/etcdtest"
	offloadv1 "github.com/ferrylabs/ferry/offload/proto/ferry/offload/v1"
)

// candidate is one master running RunHA in the background.
type candidate struct {
	srv     *Server
	cancel  context.CancelFunc
	elected chan string
	done    chan error
}

func runCandidate(t *testing.T, etcd, cluster string) *candidate {
	t.Helper()
	srv, err := NewServer(Config{Options: Options{EnableOffload: true, Logger: quiet}, Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &candidate{srv: srv, cancel: cancel, elected: make(chan string, 1), done: make(chan error, 1)}
	go func() {
		c.done <- RunHA(ctx, srv, HAConfig{Endpoints: []string{etcd}, ClusterID: cluster, SessionTTL: 2 * time.Second,
			DialTimeout: 2 * time.Second, Logger: quiet, OnElected: func(a string) { c.elected <- a }})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-c.done:
		case <-time.After(15 * time.Second):
			t.Error("RunHA did not return after cancel")
		}
		srv.Close()
	})
	return c
}

func (c *candidate) waitElected(t *testing.T, within time.Duration) string {
	t.Helper()
	select {
	case a := <-c.elected:
		return a
	case err := <-c.done:
		t.Fatalf("RunHA returned before being elected: %v", err)
	case <-time.After(within):
		t.Fatalf("not elected within %v", within)
	}
	return ""
}

func (c *candidate) waitListening(t *testing.T) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for c.srv.Addr() == nil {
		if time.Now().After(deadline) {
			t.Fatal("candidate never listened")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return c.srv.Addr().String()
}

func mountAt(t *testing.T, addr string) (*offloadv1.MountLocalDiskSegmentResponse, error) {
	t.Helper()
	conn, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return offloadv1.NewMasterServiceClient(conn).MountLocalDiskSegment(ctx,
		&offloadv1.MountLocalDiskSegmentRequest{OwnerId: "o", RpcEndpoint: "127.0.0.1:1", SegmentName: "s", CapacityBytes: 1})
}

func etcdClient(t *testing.T, ep string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// TestHAStandbyTakesOverWhenLeaderLosesSession: the first candidate leads
// and publishes its address; the second answers UNAVAILABLE. Revoking the
// leader's lease (what etcd does when a leader stops renewing it) makes
// the leader stop serving and return ErrLostLeadership, and the standby
// takes over and publishes itself.
func TestHAStandbyTakesOverWhenLeaderLosesSession(t *testing.T) {
	ep := etcdtest.Start(t)
	a := runCandidate(t, ep, "c1")
	aAddr := a.waitElected(t, 20*time.Second)
	if aAddr != a.srv.Addr().String() || !a.srv.Leading() {
		t.Fatalf("leader advertised %q, listens on %v, leading %v", aAddr, a.srv.Addr(), a.srv.Leading())
	}
	b := runCandidate(t, ep, "c1")
	bAddr := b.waitListening(t)
	// Give b time to campaign: it must stay a standby while a lives.
	time.Sleep(500 * time.Millisecond)
	if b.srv.Leading() {
		t.Fatal("standby leads while the leader lives")
	}
	if _, err := mountAt(t, bAddr); status.Code(err) != codes.Unavailable {
		t.Fatalf("standby answered %v, want UNAVAILABLE", err)
	}
	if r, err := mountAt(t, aAddr); err != nil || r.Code != offloadv1.ErrorCode_ERROR_CODE_OK {
		t.Fatalf("leader: %v %v", r, err)
	}

	cli := etcdClient(t, ep)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	eps, err := cli.Get(ctx, EndpointsTarget("c1")+"/", clientv3.WithPrefix())
	if err != nil || len(eps.Kvs) != 1 || !strings.Contains(string(eps.Kvs[0].Value), aAddr) {
		t.Fatalf("published endpoints %v, %v; want only %s", eps.Kvs, err, aAddr)
	}
	view, err := cli.Get(ctx, ElectionPrefix("c1")+"/", clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	if err != nil || len(view.Kvs) != 2 || string(view.Kvs[0].Value) != aAddr {
		t.Fatalf("election keys %v, %v; want a then b", view.Kvs, err)
	}
	if _, err := cli.Revoke(ctx, clientv3.LeaseID(view.Kvs[0].Lease)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-a.done:
		if !errors.Is(err, ErrLostLeadership) {
			t.Fatalf("leader's RunHA = %v, want ErrLostLeadership", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("leader did not notice it lost its session")
	}
	a.done <- nil // for the cleanup
	if a.srv.Leading() {
		t.Fatal("old leader still leading")
	}
	if _, err := mountAt(t, aAddr); status.Code(err) != codes.Unavailable {
		t.Fatalf("old leader answered %v, want UNAVAILABLE", err)
	}
	if got := b.waitElected(t, 15*time.Second); got != bAddr {
		t.Fatalf("new leader advertised %q, want %q", got, bAddr)
	}
	if r, err := mountAt(t, bAddr); err != nil || r.Code != offloadv1.ErrorCode_ERROR_CODE_OK {
		t.Fatalf("new leader: %v %v", r, err)
	}
	eps, err = cli.Get(ctx, EndpointsTarget("c1")+"/", clientv3.WithPrefix())
	if err != nil || len(eps.Kvs) != 1 || !strings.Contains(string(eps.Kvs[0].Value), bAddr) {
		t.Fatalf("published endpoints %v, %v; want only %s", eps.Kvs, err, bAddr)
	}
}

// TestHAStepDownHandsOverAtOnce: cancelling the leader's context resigns
// and withdraws its address, so the standby leads well before the
// session TTL could have expired.
func TestHAStepDownHandsOverAtOnce(t *testing.T) {
	ep := etcdtest.Start(t)
	a := runCandidate(t, ep, "")
	a.waitElected(t, 20*time.Second)
	b := runCandidate(t, ep, "")
	b.waitListening(t)
	time.Sleep(200 * time.Millisecond)
	a.cancel()
	if err := <-a.done; err != nil {
		t.Fatalf("step-down: %v", err)
	}
	a.done <- nil
	start := time.Now()
	b.waitElected(t, 10*time.Second)
	if a.srv.Leading() {
		t.Fatal("stepped-down leader still leading")
	}
	t.Logf("standby led %v after the step-down", time.Since(start))
}

func TestHAEtcdUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	srv, err := NewServer(Config{Options: Options{Logger: quiet}, Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	start := time.Now()
	err = RunHA(context.Background(), srv, HAConfig{Endpoints: []string{dead}, DialTimeout: time.Second, Logger: quiet})
	if !errors.Is(err, ErrEtcdUnavailable) || !strings.Contains(err.Error(), dead) {
		t.Fatalf("RunHA with etcd down = %v, want ErrEtcdUnavailable naming %s", err, dead)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("took %v to give up", d)
	}
	if srv.Leading() {
		t.Fatal("serving without etcd")
	}
	if err := RunHA(context.Background(), srv, HAConfig{}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("no endpoints: %v", err)
	}
}

func TestHAKeys(t *testing.T) {
	for id, want := range map[string][2]string{
		"":      {"mooncake-store/master_view", "mooncake-store/master_endpoints"},
		"prod":  {"mooncake-store/prod/master_view", "mooncake-store/prod/master_endpoints"},
		"/a/b/": {"mooncake-store/a/b/master_view", "mooncake-store/a/b/master_endpoints"},
	} {
		if got := [2]string{ElectionPrefix(id), EndpointsTarget(id)}; got != want {
			t.Errorf("keys(%q) = %v, want %v", id, got, want)
		}
	}
}
