package rdma

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/ferrylabs/ferry/engine/metadata"
	"github.com/ferrylabs/ferry/rdma/fakeverbs"
	"github.com/ferrylabs/ferry/rdma/topology"
	"github.com/ferrylabs/ferry/rdma/verbs/verbstest"
	"github.com/ferrylabs/ferry/transport"
)

func TestMain(m *testing.M) { os.Exit(verbstest.RunChecked(m, "rdma", fakeverbs.LiveHandles)) }

// cluster is a set of in-process hosts whose Call and Refresh go straight
// to each other's transports.
type cluster struct {
	mu    sync.Mutex
	hosts map[string]*testHost
	fab   *fakeverbs.Fabric
}

type testHost struct {
	c      *cluster
	name   string
	tr     *Transport
	prov   *fakeverbs.Provider
	mem    []byte
	region transport.Region
	calls  int
	mu     sync.Mutex
	// dropAck drops ready-ack frames sent by this host.
	dropAck bool
}

func (h *testHost) LocalName() string    { return h.name }
func (h *testHost) LocalHost() string    { return "127.0.0.1" }
func (h *testHost) Logger() *slog.Logger { return slog.New(slog.DiscardHandler) }
func (h *testHost) Call(ctx context.Context, peer string, typ metadata.FrameType, body []byte) ([]byte, error) {
	h.c.mu.Lock()
	p := h.c.hosts[peer]
	h.c.mu.Unlock()
	if p == nil || p.tr == nil {
		return nil, fmt.Errorf("no host %s: %w", peer, transport.ErrPeerUnreachable)
	}
	if typ != metadata.FrameConnection {
		return nil, errors.New("unexpected frame type")
	}
	h.mu.Lock()
	h.calls++
	drop := h.dropAck
	h.mu.Unlock()
	if drop {
		if d, err := DecodeHandshake(body); err == nil && d.ReadyAck {
			return []byte(`{}`), nil
		}
	}
	return p.tr.HandleConnection(ctx, body)
}

func (h *testHost) Refresh(ctx context.Context, seg *transport.Segment) error {
	h.c.mu.Lock()
	p := h.c.hosts[seg.Name]
	h.c.mu.Unlock()
	if p == nil {
		return transport.ErrPeerUnreachable
	}
	seg.SetDesc(p.describe())
	return nil
}

func (h *testHost) describe() *metadata.SegmentDesc {
	d := &metadata.SegmentDesc{Name: h.name, Protocol: "rdma"}
	for _, r := range *h.tr.regs.Load() {
		d.Buffers = append(d.Buffers, metadata.BufferDesc{Addr: r.r.Addr, Length: r.r.Len(), Name: h.name})
	}
	h.tr.Describe(d)
	return d
}

func newCluster(t *testing.T) *cluster {
	c := &cluster{hosts: map[string]*testHost{}, fab: fakeverbs.NewFabric()}
	t.Cleanup(func() { c.fab.Close() })
	return c
}

func testConfig() Config {
	c := DefaultConfig()
	c.SliceTimeout = 2 * time.Second
	c.HandshakeTimeout = 2 * time.Second
	c.ReadyAckTimeout = 300 * time.Millisecond
	c.RailPause = 500 * time.Millisecond
	return c
}

// twoNICTopology puts mlx5_0 on NUMA 0 and mlx5_1 on NUMA 1.
func twoNICTopology(t testing.TB) *topology.Topology {
	snap := topology.Snapshot{NUMANodes: []int{0, 1}}
	for i := 0; i < 2; i++ {
		snap.Devices = append(snap.Devices, topology.Device{Name: fmt.Sprintf("mlx5_%d", i), NUMANode: i,
			Ports: []topology.Port{{Num: 1, Active: true, LinkLayer: "Ethernet"}}})
	}
	topo, err := topology.Build(snap, topology.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// addHost adds a host with two fake NICs, a transport and memLen bytes
// of registered memory at location loc.
func newFabric() *fakeverbs.Fabric { return fakeverbs.NewFabric() }

func (c *cluster) addHostB(b *testing.B, memLen int, cfg Config) *testHost {
	h, err := c.addHostErr(b, memLen, "cpu:0", cfg)
	if err != nil {
		b.Fatal(err)
	}
	return h
}

func (c *cluster) addHost(t *testing.T, memLen int, loc string, cfg Config) *testHost {
	t.Helper()
	h, err := c.addHostErr(t, memLen, loc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.tr.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return h
}

func (c *cluster) addHostErr(t testing.TB, memLen int, loc string, cfg Config) (*testHost, error) {
	prov, err := c.fab.AddHost(fakeverbs.NICConfig{NumaNode: 0}, fakeverbs.NICConfig{NumaNode: 1})
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	h := &testHost{c: c, name: fmt.Sprintf("127.0.0.1:%d", 15000+len(c.hosts)), prov: prov}
	c.hosts[h.name] = h
	c.mu.Unlock()
	tr, err := New(h, WithProvider(prov), WithTopology(twoNICTopology(t)), WithConfig(cfg))
	if err != nil {
		return nil, err
	}
	h.tr = tr
	if memLen > 0 {
		h.mem = make([]byte, memLen)
		h.region = transport.Region{Mem: h.mem, Addr: uint64(uintptr(unsafe.Pointer(&h.mem[0]))), Location: loc, RemoteAccessible: true}
		if err := tr.Register(h.region); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// segmentOf returns a segment for h as seen by a peer.
func segmentOf(h *testHost) *transport.Segment {
	return transport.NewSegment(1, h.name, h.describe())
}

// run submits tasks and waits until each one is finished.
func run(t testing.TB, tr *Transport, tasks ...*transport.Task) {
	t.Helper()
	var wg sync.WaitGroup
	wg.Add(len(tasks))
	for _, task := range tasks {
		task.Reset(func(tk *transport.Task) {
			if tk.Err() != nil {
				tk.SetState(transport.StateFailed)
			} else {
				tk.SetState(transport.StateCompleted)
			}
			wg.Done()
		})
	}
	if err := tr.Submit(tasks); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("tasks did not finish")
	}
}

func fill(b []byte, seed byte) {
	for i := range b {
		b[i] = byte(i*7) + seed
	}
}
