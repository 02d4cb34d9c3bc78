package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/ferrylabs/ferry/offload/config"
	pb "github.com/ferrylabs/ferry/offload/proto/ferry/offload/v1"
)

// Dial opens a gRPC connection to a master or owner at addr (host:port)
// with the connect timeout of cfg (MC_RPC_CONNECT_TIMEOUT_MS). The
// connection is lazy: nothing is dialled until the first call, and each
// call is bounded by its context. The caller closes it.
func Dial(addr string, cfg config.Config) (*grpc.ClientConn, error) {
	ct := cfg.RPCConnectTimeout
	if ct <= 0 {
		ct = config.DefaultRPCConnectTimeout
	}
	return grpc.NewClient(addr, append(dialOptions(ct),
		// A connection unused for a minute (say, to an owner that went
		// away) stops reconnecting until the next call.
		grpc.WithIdleTimeout(time.Minute))...)
}

// dialOptions are the options every master and owner connection shares.
func dialOptions(connectTimeout time.Duration) []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 2 * time.Second},
			MinConnectTimeout: connectTimeout,
		}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20), grpc.MaxCallSendMsgSize(64<<20)),
	}
}

// grpcMaster implements Master over the master's gRPC API.
type grpcMaster struct{ c pb.MasterServiceClient }

// NewMasterClient returns a Master over conn; the caller owns conn.
func NewMasterClient(conn grpc.ClientConnInterface) Master {
	return grpcMaster{c: pb.NewMasterServiceClient(conn)}
}

func codeErr(code pb.ErrorCode, msg string) error {
	var base error
	switch code {
	case pb.ErrorCode_ERROR_CODE_OK:
		return nil
	case pb.ErrorCode_ERROR_CODE_OBJECT_NOT_FOUND, pb.ErrorCode_ERROR_CODE_FILE_NOT_FOUND:
		base = ErrNotFound
	case pb.ErrorCode_ERROR_CODE_BUFFER_OVERFLOW:
		base = ErrStagingExhausted
	case pb.ErrorCode_ERROR_CODE_INVALID_PARAMS:
		base = ErrInvalidArgument
	default:
		base = ErrOwner
	}
	if msg == "" {
		return fmt.Errorf("%w (%s)", base, code)
	}
	return fmt.Errorf("%w (%s): %s", base, code, msg)
}

func (g grpcMaster) Lookup(ctx context.Context, tenant string, keys [][]byte) ([]Replica, error) {
	r, err := g.c.BatchGetReplicaList(ctx, &pb.BatchGetReplicaListRequest{Tenant: tenant, Keys: keys})
	if err != nil {
		return nil, err
	}
	if r.GetCode() != pb.ErrorCode_ERROR_CODE_OK {
		return nil, fmt.Errorf("master answered %s: %s", r.GetCode(), r.GetMessage())
	}
	res := r.GetResults()
	if len(res) != len(keys) {
		return nil, fmt.Errorf("master returned %d results for %d keys", len(res), len(keys))
	}
	out := make([]Replica, len(keys))
	for i, kr := range res {
		if err := codeErr(kr.GetCode(), ""); err != nil {
			out[i].Err = fmt.Errorf("key %q: %w", keys[i], err)
			continue
		}
		var rep *pb.Replica
		for _, c := range kr.GetReplicas() {
			if c.GetType() == pb.ReplicaType_REPLICA_TYPE_LOCAL_DISK {
				rep = c
				break
			}
		}
		if rep == nil {
			out[i].Err = fmt.Errorf("key %q: %w: no LOCAL_DISK replica", keys[i], ErrNotFound)
			continue
		}
		out[i] = Replica{OwnerID: rep.GetOwnerId(), Endpoint: rep.GetRpcEndpoint(), Segment: rep.GetSegmentName(), Size: int64(rep.GetSize())}
	}
	return out, nil
}

func (g grpcMaster) Place(ctx context.Context, tenant string, keys [][]byte, sizes []int64) ([]Replica, error) {
	us := make([]uint64, len(sizes))
	for i, s := range sizes {
		us[i] = uint64(s)
	}
	r, err := g.c.BatchPutStart(ctx, &pb.BatchPutStartRequest{Tenant: tenant, Keys: keys, Sizes: us})
	if err != nil {
		return nil, err
	}
	if r.GetCode() != pb.ErrorCode_ERROR_CODE_OK {
		return nil, fmt.Errorf("master answered %s: %s", r.GetCode(), r.GetMessage())
	}
	pl := r.GetPlacements()
	if len(pl) != len(keys) {
		return nil, fmt.Errorf("master returned %d placements for %d keys", len(pl), len(keys))
	}
	out := make([]Replica, len(keys))
	for i, p := range pl {
		if p.GetCode() != pb.ErrorCode_ERROR_CODE_OK {
			out[i].Err = fmt.Errorf("key %q: %w: placement refused (%s)", keys[i], ErrMaster, p.GetCode())
			continue
		}
		out[i] = Replica{OwnerID: p.GetOwnerId(), Endpoint: p.GetRpcEndpoint(), Segment: p.GetSegmentName(), Size: sizes[i]}
	}
	return out, nil
}

func (g grpcMaster) List(ctx context.Context, tenant string, prefix []byte) ([]Listed, error) {
	var out []Listed
	var after []byte
	for {
		r, err := g.c.List(ctx, &pb.ListRequest{Tenant: tenant, Prefix: prefix, StartAfter: after})
		if err != nil {
			return nil, err
		}
		if r.GetCode() != pb.ErrorCode_ERROR_CODE_OK {
			return nil, fmt.Errorf("master answered %s: %s", r.GetCode(), r.GetMessage())
		}
		for _, k := range r.GetKeys() {
			out = append(out, Listed{Key: k.GetKey(), Size: int64(k.GetSize())})
		}
		if !r.GetTruncated() || len(r.GetKeys()) == 0 {
			return out, nil
		}
		after = r.GetKeys()[len(r.GetKeys())-1].GetKey()
	}
}

// grpcOwner implements Owner over an owner's gRPC API.
type grpcOwner struct{ c pb.OwnerServiceClient }

// NewOwnerClient returns an Owner over conn; the caller owns conn.
func NewOwnerClient(conn grpc.ClientConnInterface) Owner {
	return grpcOwner{c: pb.NewOwnerServiceClient(conn)}
}

func rpcErr(err error) error { return fmt.Errorf("%w: %w", ErrOwner, err) }

func toU64(s []int64) []uint64 {
	u := make([]uint64, len(s))
	for i, v := range s {
		u[i] = uint64(v)
	}
	return u
}

func batchOf(id uint64, sl []*pb.SlotInfo, seg string, ttl uint64) OwnerBatch {
	b := OwnerBatch{ID: id, Addrs: make([]uint64, len(sl)), Segment: seg, Lease: time.Duration(ttl) * time.Millisecond}
	for i, s := range sl {
		b.Addrs[i] = s.GetAddress()
	}
	return b
}

func (g grpcOwner) Get(ctx context.Context, tenant string, keys [][]byte, sizes []int64) (OwnerBatch, error) {
	r, err := g.c.BatchGetOffloadObject(ctx, &pb.BatchGetOffloadObjectRequest{Tenant: tenant, Keys: keys, Sizes: toU64(sizes)})
	if err != nil {
		return OwnerBatch{}, rpcErr(err)
	}
	if err := codeErr(r.GetCode(), r.GetMessage()); err != nil {
		return OwnerBatch{}, err
	}
	return batchOf(r.GetBatchId(), r.GetSlots(), r.GetSegmentName(), r.GetLeaseTtlMs()), nil
}

func (g grpcOwner) Release(ctx context.Context, id uint64) error {
	r, err := g.c.ReleaseOffloadBuffer(ctx, &pb.ReleaseOffloadBufferRequest{BatchId: id})
	if err != nil {
		return rpcErr(err)
	}
	return codeErr(r.GetCode(), r.GetMessage())
}

func (g grpcOwner) PutStart(ctx context.Context, tenant string, keys [][]byte, sizes []int64) (OwnerBatch, error) {
	r, err := g.c.BatchPutStart(ctx, &pb.OwnerBatchPutStartRequest{Tenant: tenant, Keys: keys, Sizes: toU64(sizes)})
	if err != nil {
		return OwnerBatch{}, rpcErr(err)
	}
	if err := codeErr(r.GetCode(), r.GetMessage()); err != nil {
		return OwnerBatch{}, err
	}
	return batchOf(r.GetBatchId(), r.GetSlots(), r.GetSegmentName(), r.GetLeaseTtlMs()), nil
}

func (g grpcOwner) PutCommit(ctx context.Context, id uint64) ([]error, error) {
	r, err := g.c.BatchPutCommit(ctx, &pb.BatchPutCommitRequest{BatchId: id})
	if err != nil {
		return nil, rpcErr(err)
	}
	if err := codeErr(r.GetCode(), r.GetMessage()); err != nil {
		return nil, err
	}
	errs := make([]error, len(r.GetResults()))
	for i, c := range r.GetResults() {
		if c != pb.ErrorCode_ERROR_CODE_OK {
			errs[i] = codeErr(c, r.GetMessage())
		}
	}
	return errs, nil
}

// ownerPool caches one gRPC connection per owner endpoint.
type ownerPool struct {
	cfg    config.Config
	mu     sync.Mutex
	conns  map[string]*grpc.ClientConn
	closed bool
}

func newOwnerPool(cfg config.Config) *ownerPool {
	return &ownerPool{cfg: cfg, conns: make(map[string]*grpc.ClientConn)}
}

func (p *ownerPool) get(endpoint string) (Owner, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrClosed
	}
	cc, ok := p.conns[endpoint]
	if !ok {
		var err error
		cc, err = Dial(endpoint, p.cfg)
		if err != nil {
			return nil, err
		}
		p.conns[endpoint] = cc
	}
	return NewOwnerClient(cc), nil
}

func (p *ownerPool) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	var errs []error
	for ep, cc := range p.conns {
		errs = append(errs, cc.Close())
		delete(p.conns, ep)
	}
	return errors.Join(errs...)
}
