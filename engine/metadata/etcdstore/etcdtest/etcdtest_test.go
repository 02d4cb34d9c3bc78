package etcdtest

import (
	"context"
	"net"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

func TestStartServesAndStops(t *testing.T) {
	s := StartServer(t)
	host, _, err := net.SplitHostPort(s.Endpoint())
	if err != nil || host != "127.0.0.1" {
		t.Fatalf("endpoint %q: want 127.0.0.1:port (%v)", s.Endpoint(), err)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{s.Endpoint()}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, "k", "v"); err != nil {
		t.Fatalf("Put to the embedded server: %v", err)
	}
	resp, err := cli.Get(ctx, "k")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v" {
		t.Fatalf("Get from the embedded server: %v, %v", resp, err)
	}

	s.Stop()
	s.Stop() // idempotent
	if c, err := net.DialTimeout("tcp", s.Endpoint(), time.Second); err == nil {
		c.Close()
		t.Fatalf("%s still accepts connections after Stop", s.Endpoint())
	}
}

func TestStartTwiceDistinctPorts(t *testing.T) {
	a, b := Start(t), Start(t)
	if a == b {
		t.Fatalf("two servers share endpoint %s", a)
	}
}
