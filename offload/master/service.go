package master

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	offloadv1 "github.com/ferrylabs/ferry/offload/proto/ferry/offload/v1"
)

// Short names for the codes used here.
const (
	codeOK             = offloadv1.ErrorCode_ERROR_CODE_OK
	codeInvalid        = offloadv1.ErrorCode_ERROR_CODE_INVALID_PARAMS
	codeNotFound       = offloadv1.ErrorCode_ERROR_CODE_OBJECT_NOT_FOUND
	codeUnableOffload  = offloadv1.ErrorCode_ERROR_CODE_UNABLE_OFFLOAD
	codeNotMounted     = offloadv1.ErrorCode_ERROR_CODE_NOT_MOUNTED
	codeNoCapacity     = offloadv1.ErrorCode_ERROR_CODE_NO_CAPACITY
	codeExists         = offloadv1.ErrorCode_ERROR_CODE_OBJECT_ALREADY_EXISTS
	codePutInProgress  = offloadv1.ErrorCode_ERROR_CODE_PUT_IN_PROGRESS
	codeHasLease       = offloadv1.ErrorCode_ERROR_CODE_OBJECT_HAS_LEASE
	defaultListLimit   = 1000
	maxListLimit       = 10000
	unableOffloadError = "the master runs without --enable_offload"
)

// Service implements offloadv1.MasterServiceServer. All methods are safe
// for concurrent use. Domain errors are returned in the responses' code
// fields; the returned Go error is always nil.
type Service struct {
	offloadv1.UnimplementedMasterServiceServer

	opts Options
	log  *slog.Logger
	view uint64
	m    *metrics

	mu      sync.Mutex
	owners  map[string]*owner
	objects map[string]*object      // by storage key
	puts    map[string]*reservation // by storage key
}

// NewService returns a service with empty state. Its metrics are
// registered with opts.Registerer, if any.
func NewService(opts Options) (*Service, error) {
	if err := opts.fill(); err != nil {
		return nil, err
	}
	s := &Service{
		opts:    opts,
		log:     opts.Logger,
		view:    uint64(opts.now().UnixMilli()),
		owners:  make(map[string]*owner),
		objects: make(map[string]*object),
		puts:    make(map[string]*reservation),
	}
	m, err := newMetrics(s, opts.Registerer)
	if err != nil {
		return nil, err
	}
	s.m = m
	return s, nil
}

// Sweep expires owners past their TTL and put reservations past their
// deadline. Every RPC expires owners itself; the Server's sweeper calls
// Sweep so memory and metrics follow even when no RPC arrives.
func (s *Service) Sweep(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireOwnersLocked(now)
	s.expirePutsLocked(now)
}

// lockNow takes s.mu, expires owners and returns the current time.
func (s *Service) lockNow() time.Time {
	now := s.opts.now()
	s.mu.Lock()
	s.expireOwnersLocked(now)
	return now
}

// lockOwner checks the owner id, takes s.mu (expiring owners first) and
// returns the mounted owner; the caller then holds s.mu and must unlock
// it. Otherwise o is nil, s.mu is not held, and code and msg are the
// answer: INVALID_PARAMS for a bad id, NOT_MOUNTED for an unknown owner.
func (s *Service) lockOwner(id string) (o *owner, code offloadv1.ErrorCode, msg string) {
	if msg := checkOwnerID(id); msg != "" {
		return nil, codeInvalid, msg
	}
	s.lockNow()
	if o = s.owners[id]; o == nil {
		s.mu.Unlock()
		return nil, codeNotMounted, fmt.Sprintf("owner %q is not mounted", id)
	}
	return o, 0, ""
}

func checkOwnerID(id string) string {
	switch {
	case id == "":
		return "owner_id is empty"
	case len(id) > MaxOwnerIDLen:
		return fmt.Sprintf("owner_id is %d bytes, longer than %d", len(id), MaxOwnerIDLen)
	}
	return ""
}

// tenantOf validates t and applies the default.
func tenantOf(t string) (string, string) {
	switch {
	case t == "":
		return DefaultTenant, ""
	case len(t) > MaxTenantLen:
		return "", fmt.Sprintf("tenant is %d bytes, longer than %d", len(t), MaxTenantLen)
	case strings.IndexByte(t, 0) >= 0:
		return "", "tenant contains a NUL byte"
	}
	return t, ""
}

func checkKey(k []byte) bool { return len(k) > 0 && len(k) <= MaxKeyLen }

func keyError(i int, k []byte) string {
	if len(k) == 0 {
		return fmt.Sprintf("key %d is empty", i)
	}
	return fmt.Sprintf("key %d is %d bytes, longer than %d", i, len(k), MaxKeyLen)
}

// MountLocalDiskSegment registers or updates an owner and refreshes its TTL.
func (s *Service) MountLocalDiskSegment(_ context.Context, req *offloadv1.MountLocalDiskSegmentRequest) (*offloadv1.MountLocalDiskSegmentResponse, error) {
	resp := &offloadv1.MountLocalDiskSegmentResponse{ClientTtlMs: uint64(s.opts.ClientTTL.Milliseconds())}
	if !s.opts.EnableOffload {
		resp.Code, resp.Message = codeUnableOffload, unableOffloadError
		return resp, nil
	}
	if msg := checkOwnerID(req.GetOwnerId()); msg != "" {
		resp.Code, resp.Message = codeInvalid, msg
		return resp, nil
	}
	if msg := checkEndpoint(req.GetRpcEndpoint()); msg != "" {
		resp.Code, resp.Message = codeInvalid, msg
		return resp, nil
	}
	if req.GetSegmentName() == "" {
		resp.Code, resp.Message = codeInvalid, "segment_name is empty"
		return resp, nil
	}
	now := s.lockNow()
	defer s.mu.Unlock()
	o := s.owners[req.OwnerId]
	if o == nil {
		o = &owner{id: req.OwnerId, keys: make(map[string]struct{})}
		s.owners[o.id] = o
		s.log.Info("master: owner mounted", "owner", o.id, "endpoint", req.RpcEndpoint, "segment", req.SegmentName,
			"capacity", req.CapacityBytes, "offloading", req.EnableOffloading)
	}
	o.endpoint = req.RpcEndpoint
	o.segment = req.SegmentName
	o.enable = req.EnableOffloading
	if req.CapacityBytes != 0 {
		o.capacity = req.CapacityBytes
	}
	o.lastSeen = now
	return resp, nil
}

func checkEndpoint(ep string) string {
	if ep == "" {
		return "rpc_endpoint is empty"
	}
	host, port, err := net.SplitHostPort(ep)
	if err != nil {
		return fmt.Sprintf("rpc_endpoint %q is not host:port: %v", ep, err)
	}
	if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 || host == "" {
		return fmt.Sprintf("rpc_endpoint %q needs a host and a port in 1..65535", ep)
	}
	return ""
}

// UnmountLocalDiskSegment forgets an owner and its replicas. Idempotent.
func (s *Service) UnmountLocalDiskSegment(_ context.Context, req *offloadv1.UnmountLocalDiskSegmentRequest) (*offloadv1.UnmountLocalDiskSegmentResponse, error) {
	resp := &offloadv1.UnmountLocalDiskSegmentResponse{}
	if !s.opts.EnableOffload {
		resp.Code, resp.Message = codeUnableOffload, unableOffloadError
		return resp, nil
	}
	if msg := checkOwnerID(req.GetOwnerId()); msg != "" {
		resp.Code, resp.Message = codeInvalid, msg
		return resp, nil
	}
	s.lockNow()
	defer s.mu.Unlock()
	if o := s.owners[req.OwnerId]; o != nil {
		resp.RemovedReplicas = uint64(s.dropOwnerLocked(o))
		s.log.Info("master: owner unmounted", "owner", o.id, "replicas_dropped", resp.RemovedReplicas)
	}
	return resp, nil
}

// Ping refreshes an owner's TTL, or answers NOT_MOUNTED / NEED_REMOUNT.
func (s *Service) Ping(_ context.Context, req *offloadv1.PingRequest) (*offloadv1.PingResponse, error) {
	resp := &offloadv1.PingResponse{ViewVersion: s.view}
	if msg := checkOwnerID(req.GetOwnerId()); msg != "" {
		resp.Code, resp.Message = codeInvalid, msg
		return resp, nil
	}
	now := s.lockNow()
	defer s.mu.Unlock()
	o := s.owners[req.OwnerId]
	if o == nil {
		resp.Code, resp.Status = codeNotMounted, offloadv1.ClientStatus_CLIENT_STATUS_NEED_REMOUNT
		resp.Message = fmt.Sprintf("owner %q is not mounted: mount again and rescan", req.OwnerId)
		return resp, nil
	}
	o.lastSeen = now
	return resp, nil
}

// itemError validates one OffloadItem and returns its tenant.
func itemError(i int, it *offloadv1.OffloadItem) (string, string) {
	t, msg := tenantOf(it.GetTenant())
	if msg != "" {
		return "", fmt.Sprintf("item %d: %s", i, msg)
	}
	if !checkKey(it.GetKey()) {
		return "", "item " + keyError(i, it.GetKey())
	}
	return t, ""
}

// NotifyOffloadSuccess records replicas the owner now stores.
func (s *Service) NotifyOffloadSuccess(_ context.Context, req *offloadv1.NotifyOffloadSuccessRequest) (*offloadv1.NotifyOffloadSuccessResponse, error) {
	resp := &offloadv1.NotifyOffloadSuccessResponse{Results: make([]offloadv1.ErrorCode, len(req.GetItems()))}
	o, code, msg := s.lockOwner(req.GetOwnerId())
	if o == nil {
		resp.Code, resp.Message = code, msg
		fillCodes(resp.Results, code)
		return resp, nil
	}
	defer s.mu.Unlock()
	bad := 0
	for i, it := range req.Items {
		tenant, msg := itemError(i, it)
		if msg != "" {
			resp.Results[i] = codeInvalid
			if bad == 0 {
				resp.Message = msg
			}
			bad++
			continue
		}
		sk := storageKey(tenant, it.Key)
		if r := s.puts[sk]; r != nil && r.owner == o {
			s.dropPutLocked(sk, r)
		}
		s.addReplicaLocked(o, tenant, it.Key, sk, it.Size)
	}
	if bad > 0 {
		resp.Code = codeInvalid
		resp.Message = fmt.Sprintf("%d of %d items refused; first: %s", bad, len(req.Items), resp.Message)
	}
	return resp, nil
}

func fillCodes(c []offloadv1.ErrorCode, v offloadv1.ErrorCode) {
	for i := range c {
		c[i] = v
	}
}

// NotifyOffloadFailure drops the owner's reservations for the items.
func (s *Service) NotifyOffloadFailure(_ context.Context, req *offloadv1.NotifyOffloadFailureRequest) (*offloadv1.NotifyOffloadFailureResponse, error) {
	resp := &offloadv1.NotifyOffloadFailureResponse{}
	o, code, msg := s.lockOwner(req.GetOwnerId())
	if o == nil {
		resp.Code, resp.Message = code, msg
		return resp, nil
	}
	defer s.mu.Unlock()
	dropped := 0
	for i, it := range req.Items {
		tenant, msg := itemError(i, it)
		if msg != "" {
			resp.Code, resp.Message = codeInvalid, msg
			continue
		}
		sk := storageKey(tenant, it.Key)
		if r := s.puts[sk]; r != nil && r.owner == o {
			s.dropPutLocked(sk, r)
			dropped++
		}
	}
	s.log.Info("master: owner reported offload failures", "owner", o.id, "items", len(req.Items), "reservations_dropped", dropped, "reason", req.Reason)
	return resp, nil
}

// ReportCapacity sets an owner's capacity.
func (s *Service) ReportCapacity(_ context.Context, req *offloadv1.ReportCapacityRequest) (*offloadv1.ReportCapacityResponse, error) {
	resp := &offloadv1.ReportCapacityResponse{}
	o, code, msg := s.lockOwner(req.GetOwnerId())
	if o == nil {
		resp.Code, resp.Message = code, msg
		return resp, nil
	}
	defer s.mu.Unlock()
	o.capacity = req.CapacityBytes
	return resp, nil
}

// BatchGetReplicaList answers each key's replicas and leases the found
// keys.
func (s *Service) BatchGetReplicaList(_ context.Context, req *offloadv1.BatchGetReplicaListRequest) (*offloadv1.BatchGetReplicaListResponse, error) {
	resp := &offloadv1.BatchGetReplicaListResponse{LeaseTtlMs: uint64(s.opts.LeaseTTL.Milliseconds())}
	tenant, msg := tenantOf(req.GetTenant())
	if msg != "" {
		resp.Code, resp.Message = codeInvalid, msg
		return resp, nil
	}
	resp.Results = make([]*offloadv1.KeyReplicas, len(req.Keys))
	// One slab per message type instead of one allocation per key.
	krs := make([]offloadv1.KeyReplicas, len(req.Keys))
	now := s.lockNow()
	defer s.mu.Unlock()
	nrep := 0
	var buf []byte
	found := make([]*object, len(req.Keys))
	for i, k := range req.Keys {
		resp.Results[i] = &krs[i]
		if !checkKey(k) {
			krs[i].Code = codeInvalid
			resp.Code, resp.Message = codeInvalid, keyError(i, k)
			continue
		}
		buf = appendStorageKey(buf[:0], tenant, k)
		if obj := s.objects[string(buf)]; obj != nil {
			found[i] = obj
			nrep += len(obj.replicas)
		} else {
			krs[i].Code = codeNotFound
		}
	}
	reps := make([]offloadv1.Replica, nrep)
	ptrs := make([]*offloadv1.Replica, nrep)
	var hits, misses int
	for i, obj := range found {
		if obj == nil {
			if krs[i].Code == codeNotFound {
				misses++
			}
			continue
		}
		hits++
		obj.leaseUntil = now.Add(s.opts.LeaseTTL)
		n := len(obj.replicas)
		kr := ptrs[:n:n]
		ptrs = ptrs[n:]
		for j, r := range obj.replicas {
			rep := &reps[0]
			reps = reps[1:]
			rep.Type = offloadv1.ReplicaType_REPLICA_TYPE_LOCAL_DISK
			rep.OwnerId, rep.Size = r.owner.id, r.size
			rep.RpcEndpoint, rep.SegmentName = r.owner.endpoint, r.owner.segment
			kr[j] = rep
		}
		krs[i].Replicas = kr
	}
	s.m.hits.Add(float64(hits))
	s.m.misses.Add(float64(misses))
	return resp, nil
}

// Remove forgets keys and their replicas, refusing leased keys unless
// forced.
func (s *Service) Remove(_ context.Context, req *offloadv1.RemoveRequest) (*offloadv1.RemoveResponse, error) {
	resp := &offloadv1.RemoveResponse{}
	tenant, msg := tenantOf(req.GetTenant())
	if msg != "" {
		resp.Code, resp.Message = codeInvalid, msg
		return resp, nil
	}
	resp.Results = make([]offloadv1.ErrorCode, len(req.Keys))
	now := s.lockNow()
	defer s.mu.Unlock()
	for i, k := range req.Keys {
		if !checkKey(k) {
			resp.Results[i] = codeInvalid
			resp.Code, resp.Message = codeInvalid, keyError(i, k)
			continue
		}
		sk := storageKey(tenant, k)
		obj := s.objects[sk]
		switch {
		case obj == nil:
			resp.Results[i] = codeNotFound
		case !req.Force && now.Before(obj.leaseUntil):
			resp.Results[i] = codeHasLease
		default:
			s.removeObjectLocked(sk, obj)
		}
	}
	return resp, nil
}

// BatchPutStart places each new key on an owner with room and reserves
// the bytes there.
func (s *Service) BatchPutStart(_ context.Context, req *offloadv1.BatchPutStartRequest) (*offloadv1.BatchPutStartResponse, error) {
	resp := &offloadv1.BatchPutStartResponse{PutTimeoutMs: uint64(s.opts.PutTimeout.Milliseconds())}
	if !s.opts.EnableOffload {
		resp.Code, resp.Message = codeUnableOffload, unableOffloadError
		return resp, nil
	}
	tenant, msg := tenantOf(req.GetTenant())
	if msg != "" {
		resp.Code, resp.Message = codeInvalid, msg
		return resp, nil
	}
	if len(req.Keys) != len(req.Sizes) {
		resp.Code, resp.Message = codeInvalid, fmt.Sprintf("%d keys but %d sizes", len(req.Keys), len(req.Sizes))
		return resp, nil
	}
	resp.Placements = make([]*offloadv1.Placement, len(req.Keys))
	now := s.lockNow()
	defer s.mu.Unlock()
	var failed int
	for i, k := range req.Keys {
		p := &offloadv1.Placement{}
		resp.Placements[i] = p
		if !checkKey(k) {
			p.Code = codeInvalid
			resp.Message = keyError(i, k)
			failed++
			continue
		}
		sk := storageKey(tenant, k)
		if s.objects[sk] != nil {
			p.Code = codeExists
			failed++
			continue
		}
		if r := s.puts[sk]; r != nil {
			if !now.After(r.deadline) {
				p.Code = codePutInProgress
				failed++
				continue
			}
			s.dropPutLocked(sk, r)
		}
		o := s.placeLocked(req.Sizes[i])
		if o == nil {
			p.Code = codeNoCapacity
			failed++
			continue
		}
		o.reserved += req.Sizes[i]
		s.puts[sk] = &reservation{owner: o, size: req.Sizes[i], deadline: now.Add(s.opts.PutTimeout)}
		p.OwnerId, p.RpcEndpoint, p.SegmentName = o.id, o.endpoint, o.segment
	}
	if failed > 0 && failed == len(req.Keys) {
		resp.Code = resp.Placements[0].Code
		if resp.Message == "" {
			resp.Message = fmt.Sprintf("no key placed (first: %v)", resp.Code)
		}
	}
	return resp, nil
}

// List returns a page of a tenant's keys with a prefix, in key order. It
// sorts the tenant's matching keys on each call: meant for operators, not
// the data path.
func (s *Service) List(_ context.Context, req *offloadv1.ListRequest) (*offloadv1.ListResponse, error) {
	resp := &offloadv1.ListResponse{}
	tenant, msg := tenantOf(req.GetTenant())
	if msg != "" {
		resp.Code, resp.Message = codeInvalid, msg
		return resp, nil
	}
	limit := int(req.Limit)
	if limit == 0 {
		limit = defaultListLimit
	}
	if limit > maxListLimit {
		limit = maxListLimit
	}
	s.lockNow()
	var keys []*offloadv1.ListedKey
	for _, obj := range s.objects {
		if obj.tenant != tenant || !bytes.HasPrefix(obj.key, req.Prefix) {
			continue
		}
		if len(req.StartAfter) > 0 && bytes.Compare(obj.key, req.StartAfter) <= 0 {
			continue
		}
		var size uint64
		if len(obj.replicas) > 0 {
			size = obj.replicas[0].size
		}
		keys = append(keys, &offloadv1.ListedKey{Key: obj.key, Size: size})
	}
	s.mu.Unlock()
	sort.Slice(keys, func(i, j int) bool { return bytes.Compare(keys[i].Key, keys[j].Key) < 0 })
	if len(keys) > limit {
		keys, resp.Truncated = keys[:limit], true
	}
	resp.Keys = keys
	return resp, nil
}
