package client

import (
	"context"
	"errors"
	"fmt"
	"io"

	clientv3 "go.etcd.io/etcd/client/v3"
	etcdresolver "go.etcd.io/etcd/client/v3/naming/resolver"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/ferrylabs/ferry/offload/config"
	"github.com/ferrylabs/ferry/offload/master"
)

// haRetryConfig retries the master's read-only and idempotent calls
// answered UNAVAILABLE, which a master that is no longer (or not yet) the
// leader answers while the resolver still points at it; always within the
// call's own deadline. Calls that change state in a way a repeat would
// double (BatchPutStart, Mount, notifications) are not retried here; the
// owner's ping loop and the callers retry those themselves.
const haRetryConfig = `{"methodConfig": [{
  "name": [
    {"service": "ferry.offload.v1.MasterService", "method": "BatchGetReplicaList"},
    {"service": "ferry.offload.v1.MasterService", "method": "List"},
    {"service": "ferry.offload.v1.MasterService", "method": "Remove"},
    {"service": "ferry.offload.v1.MasterService", "method": "Ping"}
  ],
  "retryPolicy": {
    "maxAttempts": 5,
    "initialBackoff": "0.5s",
    "maxBackoff": "2s",
    "backoffMultiplier": 2,
    "retryableStatusCodes": ["UNAVAILABLE"]
  }
}]}`

// ErrEtcd means the etcd cluster named by an "etcd://" master address
// could not be reached within the connect timeout.
var ErrEtcd = errors.New("master etcd unreachable")

// DialMaster opens a gRPC connection to the master named by addr, in any
// form config.ParseMaster accepts:
//
//   - host:port: exactly Dial(addr, cfg); the closer is the connection.
//   - etcd://h:p[,h:p][/cluster_id]: an etcd client is opened and checked
//     within cfg.RPCConnectTimeout (ErrEtcd otherwise), and the connection
//     resolves the elected master through etcd's gRPC resolver
//     (master.EndpointsTarget): when a standby takes over, the same
//     connection moves to it. Between leaders, calls wait for the next
//     leader within their deadline (gRPC wait-for-ready), and read-only or
//     idempotent calls (replica queries, List, Remove, Ping) answered
//     UNAVAILABLE by a master that stepped down are retried.
//
// Bad addresses fail with config.ErrMasterAddress. The caller uses conn
// and, when done, calls closer.Close once, which closes conn and the etcd
// client; it must not also close conn.
func DialMaster(addr string, cfg config.Config) (conn *grpc.ClientConn, closer io.Closer, err error) {
	m, err := config.ParseMaster(addr)
	if err != nil {
		return nil, nil, err
	}
	if !m.HA() {
		cc, err := Dial(m.Direct, cfg)
		if err != nil {
			return nil, nil, err
		}
		return cc, cc, nil
	}
	ct := cfg.RPCConnectTimeout
	if ct <= 0 {
		ct = config.DefaultRPCConnectTimeout
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: m.Etcd, DialTimeout: ct, Logger: zap.NewNop()})
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v: %w", ErrEtcd, m.Etcd, err)
	}
	// The resolver's first read of etcd is not bounded by any call's
	// context, so make sure etcd answers before handing it over.
	ctx, cancel := context.WithTimeout(context.Background(), ct)
	_, err = cli.Get(ctx, master.EndpointsTarget(m.ClusterID)+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	cancel()
	if err != nil {
		cli.Close()
		return nil, nil, fmt.Errorf("%w: %v not answering within %v: %w", ErrEtcd, m.Etcd, ct, err)
	}
	rb, err := etcdresolver.NewBuilder(cli)
	if err != nil {
		cli.Close()
		return nil, nil, fmt.Errorf("%w: resolver: %w", ErrEtcd, err)
	}
	cc, err := grpc.NewClient("etcd:///"+master.EndpointsTarget(m.ClusterID), append(dialOptions(ct),
		grpc.WithResolvers(rb),
		// Between leaders the resolver lists a dead address or none:
		// calls wait for a leader, within their own deadline, instead
		// of failing at once.
		grpc.WithDefaultCallOptions(grpc.WaitForReady(true)),
		grpc.WithDefaultServiceConfig(haRetryConfig),
		// The etcd resolver is built once, now, and follows the leader
		// for the connection's life; an idle connection would rebuild
		// it with an unbounded first read.
		grpc.WithIdleTimeout(0))...)
	if err != nil {
		cli.Close()
		return nil, nil, fmt.Errorf("master %s: %w", addr, err)
	}
	cc.Connect()
	return cc, etcdConn{cc: cc, cli: cli}, nil
}

// etcdConn closes a leader-following connection and its etcd client.
type etcdConn struct {
	cc  *grpc.ClientConn
	cli *clientv3.Client
}

func (e etcdConn) Close() error {
	return errors.Join(e.cc.Close(), e.cli.Close())
}
