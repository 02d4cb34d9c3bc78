package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ferrylabs/ferry/engine"
	"github.com/ferrylabs/ferry/offload/config"
	"github.com/ferrylabs/ferry/offload/owner"
	"github.com/ferrylabs/ferry/tcp"
	"github.com/ferrylabs/ferry/transport"
)

func tcpEngine(t testing.TB) *engine.Engine {
	t.Helper()
	e, err := engine.New(engine.Config{LocalServerName: "127.0.0.1",
		Transports: []transport.Factory{func(h transport.Host) (transport.Transport, error) { return tcp.New(h) }}})
	if err != nil {
		t.Fatalf("engine.New: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// memMaster is an in-memory stand-in for the master used until the gRPC
// master is wired: it implements owner.Master and Master.
type memMaster struct {
	mu      sync.Mutex
	owners  map[string]owner.MountInfo
	objects map[string]map[string]struct {
		owner string
		size  int64
	}
	order []string
}

func newMemMaster() *memMaster {
	return &memMaster{owners: map[string]owner.MountInfo{}, objects: map[string]map[string]struct {
		owner string
		size  int64
	}{}}
}

func (m *memMaster) Mount(_ context.Context, mi owner.MountInfo) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.owners[mi.OwnerID]; !ok {
		m.order = append(m.order, mi.OwnerID)
	}
	m.owners[mi.OwnerID] = mi
	return nil
}
func (m *memMaster) Unmount(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.owners, id)
	for _, objs := range m.objects {
		for k, o := range objs {
			if o.owner == id {
				delete(objs, k)
			}
		}
	}
	return nil
}
func (m *memMaster) Ping(_ context.Context, id string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.owners[id]
	return ok, nil
}
func (m *memMaster) NotifySuccess(_ context.Context, id string, objs []owner.Object) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.owners[id]; !ok {
		return errors.New("not mounted")
	}
	for _, o := range objs {
		if m.objects[o.Tenant] == nil {
			m.objects[o.Tenant] = map[string]struct {
				owner string
				size  int64
			}{}
		}
		m.objects[o.Tenant][string(o.Key)] = struct {
			owner string
			size  int64
		}{id, o.Size}
	}
	return nil
}
func (m *memMaster) NotifyFailure(context.Context, string, []owner.Object) error { return nil }
func (m *memMaster) ReportCapacity(context.Context, string, int64) error         { return nil }

func (m *memMaster) Lookup(_ context.Context, tenant string, keys [][]byte) ([]Replica, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Replica, len(keys))
	for i, k := range keys {
		o, ok := m.objects[tenant][string(k)]
		mi, mounted := m.owners[o.owner]
		if !ok || !mounted {
			out[i].Err = fmt.Errorf("%w: %q", ErrNotFound, k)
			continue
		}
		out[i] = Replica{OwnerID: o.owner, Endpoint: mi.RPCEndpoint, Segment: mi.SegmentName, Size: o.size}
	}
	return out, nil
}
func (m *memMaster) Place(_ context.Context, tenant string, keys [][]byte, sizes []int64) ([]Replica, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Replica, len(keys))
	var live []string
	for _, id := range m.order {
		if _, ok := m.owners[id]; ok {
			live = append(live, id)
		}
	}
	for i := range keys {
		if len(live) == 0 {
			out[i].Err = errors.New("no owner")
			continue
		}
		mi := m.owners[live[i%len(live)]]
		out[i] = Replica{OwnerID: mi.OwnerID, Endpoint: mi.RPCEndpoint, Segment: mi.SegmentName, Size: sizes[i]}
	}
	return out, nil
}
func (m *memMaster) List(context.Context, string, []byte) ([]Listed, error) {
	return nil, errors.ErrUnsupported
}

// directOwner calls an in-process owner without RPC.
type directOwner struct{ o *owner.Owner }

func mapOwnerErr(err error) error {
	switch {
	case errors.Is(err, owner.ErrStagingExhausted):
		return fmt.Errorf("%w: %w", ErrStagingExhausted, err)
	case errors.Is(err, owner.ErrNotFound):
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return fmt.Errorf("%w: %w", ErrOwner, err)
}

func (d directOwner) Get(ctx context.Context, tenant string, keys [][]byte, sizes []int64) (OwnerBatch, error) {
	b, err := d.o.GetObjects(ctx, tenant, keys, sizes)
	if err != nil {
		return OwnerBatch{}, mapOwnerErr(err)
	}
	return OwnerBatch(b), nil
}
func (d directOwner) Release(_ context.Context, id uint64) error {
	if !d.o.Release(id) {
		return ErrOwner
	}
	return nil
}
func (d directOwner) PutStart(ctx context.Context, tenant string, keys [][]byte, sizes []int64) (OwnerBatch, error) {
	b, err := d.o.PutStart(ctx, tenant, keys, sizes)
	if err != nil {
		return OwnerBatch{}, mapOwnerErr(err)
	}
	return OwnerBatch(b), nil
}
func (d directOwner) PutCommit(ctx context.Context, id uint64) ([]error, error) {
	return d.o.PutCommit(ctx, id)
}

func ownerConfig(t testing.TB, staging int64) config.Config {
	c := config.Default()
	c.FileStoragePath = t.TempDir()
	c.BackendDescriptor = config.BackendFilePerKey
	c.StagingSize = staging
	c.RPCTimeout = 2 * time.Second
	c.GCTTL = 2 * time.Second
	return c
}
