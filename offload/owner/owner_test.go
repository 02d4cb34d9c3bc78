package owner_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ferrylabs/ferry/engine"
	"github.com/ferrylabs/ferry/offload/config"
	"github.com/ferrylabs/ferry/offload/filestorage"
	"github.com/ferrylabs/ferry/offload/owner"
	"github.com/ferrylabs/ferry/tcp"
	"github.com/ferrylabs/ferry/transport"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recMaster records what the owner tells the master and can forget the
// owner to simulate a master restart (fault injection).
type recMaster struct {
	mu       sync.Mutex
	pings    int
	mounted  map[string]bool
	mounts   int
	unmounts int
	objects  map[string]int64 // tenant/key -> size
	failed   int
}

func newRecMaster() *recMaster {
	return &recMaster{mounted: map[string]bool{}, objects: map[string]int64{}}
}

func (m *recMaster) Mount(_ context.Context, mi owner.MountInfo) (time.Duration, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mounted[mi.OwnerID] = true
	m.mounts++
	return 0, nil
}
func (m *recMaster) Unmount(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.mounted, id)
	m.unmounts++
	return nil
}
func (m *recMaster) Ping(_ context.Context, id string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pings++
	return m.mounted[id], nil
}
func (m *recMaster) NotifySuccess(_ context.Context, id string, objs []owner.Object) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.mounted[id] {
		return errors.New("not mounted")
	}
	for _, o := range objs {
		m.objects[o.Tenant+"/"+string(o.Key)] = o.Size
	}
	return nil
}
func (m *recMaster) NotifyFailure(_ context.Context, _ string, objs []owner.Object) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.failed += len(objs)
	return nil
}
func (m *recMaster) ReportCapacity(context.Context, string, int64) error { return nil }

// forget drops every owner and object, as a restarted master would.
func (m *recMaster) forget() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mounted = map[string]bool{}
	m.objects = map[string]int64{}
}

func (m *recMaster) snapshot() (map[string]int64, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]int64{}
	for k, v := range m.objects {
		out[k] = v
	}
	return out, m.mounts
}

func newEngine(t *testing.T) *engine.Engine {
	t.Helper()
	e, err := engine.New(engine.Config{LocalServerName: "127.0.0.1",
		Transports: []transport.Factory{func(h transport.Host) (transport.Transport, error) { return tcp.New(h) }}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func testConfig(dir string, staging int64) config.Config {
	c := config.Default()
	c.FileStoragePath = dir
	c.BackendDescriptor = config.BackendFilePerKey
	c.StagingSize = staging
	c.RPCTimeout = 2 * time.Second
	c.GCTTL = 2 * time.Second
	c.GCInterval = 20 * time.Millisecond
	c.HeartbeatInterval = time.Second
	return c
}

type fixture struct {
	t   *testing.T
	ctx context.Context
	m   *recMaster
	cfg config.Config
}

func newFixture(t *testing.T, staging int64) *fixture {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return &fixture{t: t, ctx: ctx, m: newRecMaster(), cfg: testConfig(t.TempDir(), staging)}
}

func (f *fixture) start(mod func(*owner.Options)) *owner.Owner {
	f.t.Helper()
	o := owner.Options{Config: f.cfg, Engine: newEngine(f.t), Master: f.m, UnlockedStaging: true, PingInterval: 20 * time.Millisecond}
	if mod != nil {
		mod(&o)
	}
	w, err := owner.New(f.ctx, o)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { w.Close(context.Background()) })
	return w
}

// seed writes objects straight into the owner's storage directory.
func (f *fixture) seed(tenant string, objs map[string][]byte) { f.seedB(f.t, tenant, objs) }

func (f *fixture) seedB(t testing.TB, tenant string, objs map[string][]byte) {
	t.Helper()
	fs, err := filestorage.New(f.ctx, filestorage.Options{Config: f.cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	var keys [][]byte
	var srcs [][][]byte
	for k, v := range objs {
		keys = append(keys, filestorage.StorageKey(tenant, []byte(k)))
		srcs = append(srcs, [][]byte{v})
	}
	for _, err := range fs.BatchOffload(f.ctx, keys, srcs) {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func slot(w *owner.Owner, addr uint64, n int64) []byte {
	a := w.Arena()
	off := addr - a.Addr()
	return a.Bytes()[off : off+uint64(n)]
}

func TestGetLoadsIntoStagingAndRescanAdvertises(t *testing.T) {
	f := newFixture(t, 16<<20)
	objs := map[string][]byte{"a": bytes.Repeat([]byte("A"), 5000), "b/c": []byte("hello"), "z": {}}
	f.seed("default", objs)
	w := f.start(nil)
	got, mounts := f.m.snapshot()
	if mounts != 1 || len(got) != 3 || got["default/a"] != 5000 || got["default/z"] != 0 {
		t.Fatalf("advertised %v after %d mounts", got, mounts)
	}
	keys := [][]byte{[]byte("a"), []byte("b/c"), []byte("z")}
	b, err := w.GetObjects(f.ctx, "default", keys, []int64{5000, 5, 0})
	if err != nil {
		t.Fatal(err)
	}
	if b.Segment != w.SegmentName() || b.Lease != f.cfg.GCTTL || len(b.Addrs) != 3 || b.Addrs[2] != 0 {
		t.Fatalf("batch %+v", b)
	}
	for i, k := range keys[:2] {
		if b.Addrs[i]%4096 != 0 || !bytes.Equal(slot(w, b.Addrs[i], int64(len(objs[string(k)]))), objs[string(k)]) {
			t.Fatalf("slot %d (%#x) does not hold %q", i, b.Addrs[i], k)
		}
	}
	if !w.Release(b.ID) || w.Release(b.ID) {
		t.Fatal("release: want true then false")
	}
	if w.Arena().Used() != 0 {
		t.Fatalf("%d staging bytes still used", w.Arena().Used())
	}
	// Wrong size, missing key, bad input.
	if _, err := w.GetObjects(f.ctx, "default", keys[:1], []int64{4999}); err == nil || !errors.Is(err, owner.ErrStorage) {
		t.Fatalf("size mismatch: %v", err)
	}
	if _, err := w.GetObjects(f.ctx, "default", [][]byte{[]byte("nope")}, []int64{3}); !errors.Is(err, owner.ErrNotFound) {
		t.Fatalf("missing: %v", err)
	}
	if _, err := w.GetObjects(f.ctx, "other-tenant", keys[:1], []int64{5000}); !errors.Is(err, owner.ErrNotFound) {
		t.Fatalf("tenant isolation: %v", err)
	}
	for _, bad := range []struct {
		keys  [][]byte
		sizes []int64
	}{{nil, nil}, {keys, []int64{1}}, {keys[:1], []int64{-1}}, {keys[:1], []int64{1 << 40}}, {[][]byte{{}}, []int64{1}}} {
		if _, err := w.GetObjects(f.ctx, "default", bad.keys, bad.sizes); !errors.Is(err, owner.ErrInvalidArgument) {
			t.Fatalf("bad input %v: %v", bad.sizes, err)
		}
	}
	if w.Arena().Used() != 0 {
		t.Fatalf("failed loads leaked %d staging bytes", w.Arena().Used())
	}
}

func TestStagingExhaustedThenSuccess(t *testing.T) {
	f := newFixture(t, 8<<20)
	f.seed("default", map[string][]byte{"big": make([]byte, 4<<20), "big2": make([]byte, 4<<20)})
	w := f.start(nil)
	b1, err := w.GetObjects(f.ctx, "default", [][]byte{[]byte("big")}, []int64{4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	b2, err := w.GetObjects(f.ctx, "default", [][]byte{[]byte("big2")}, []int64{4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.GetObjects(f.ctx, "default", [][]byte{[]byte("big")}, []int64{4 << 20})
	if !errors.Is(err, owner.ErrStagingExhausted) {
		t.Fatalf("third batch: %v, want ErrStagingExhausted", err)
	}
	w.Release(b1.ID)
	w.Release(b2.ID)
	b3, err := w.GetObjects(f.ctx, "default", [][]byte{[]byte("big")}, []int64{4 << 20})
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	w.Release(b3.ID)
}

// slowStore delays every GetBatch (fault injection) to show the lease
// starts after the load.
type slowStore struct {
	filestorage.Store
	delay time.Duration
}

func (s slowStore) GetBatch(ctx context.Context, items []filestorage.GetItem) []error {
	time.Sleep(s.delay)
	return s.Store.GetBatch(ctx, items)
}

func TestLeaseStartsAfterLoadAndExpires(t *testing.T) {
	f := newFixture(t, 8<<20)
	f.cfg.GCTTL = 150 * time.Millisecond
	f.seed("default", map[string][]byte{"k": []byte("v")})
	p, err := filestorage.NewPosix(f.cfg.FileStoragePath + "/" + f.cfg.FSDir)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := filestorage.New(f.ctx, filestorage.Options{Config: f.cfg, Store: slowStore{p, 400 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	w := f.start(func(o *owner.Options) { o.Storage = fs; o.LeaseGrace = 100 * time.Millisecond })
	b, err := w.GetObjects(f.ctx, "default", [][]byte{[]byte("k")}, []int64{1})
	if err != nil {
		t.Fatal(err)
	}
	// The load took longer than the whole lease; the batch is still live.
	if _, ok := w.Arena().Lease(b.ID); !ok {
		t.Fatal("lease expired during the load")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, ok := w.Arena().Lease(b.ID); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("lease never expired")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if w.Release(b.ID) {
		t.Fatal("release of an expired batch succeeded")
	}
	if w.Arena().Used() != 0 || w.Arena().Expirations() != 1 {
		t.Fatalf("used %d, expirations %d", w.Arena().Used(), w.Arena().Expirations())
	}
}

func TestPutCommitAndExpiry(t *testing.T) {
	f := newFixture(t, 8<<20)
	w := f.start(nil)
	keys := [][]byte{[]byte("p1"), []byte("p0")}
	b, err := w.PutStart(f.ctx, "t1", keys, []int64{6000, 0})
	if err != nil {
		t.Fatal(err)
	}
	copy(slot(w, b.Addrs[0], 6000), bytes.Repeat([]byte("x"), 6000))
	errs, err := w.PutCommit(f.ctx, b.ID)
	if err != nil || errs[0] != nil || errs[1] != nil {
		t.Fatalf("commit: %v %v", err, errs)
	}
	if _, err := w.PutCommit(f.ctx, b.ID); !errors.Is(err, owner.ErrUnknownBatch) {
		t.Fatalf("second commit: %v", err)
	}
	got, _ := f.m.snapshot()
	if got["t1/p1"] != 6000 || len(got) != 2 {
		t.Fatalf("master saw %v", got)
	}
	g, err := w.GetObjects(f.ctx, "t1", keys[:1], []int64{6000})
	if err != nil || !bytes.Equal(slot(w, g.Addrs[0], 6000), bytes.Repeat([]byte("x"), 6000)) {
		t.Fatalf("read back: %v", err)
	}
	w.Release(g.ID)
	if w.Arena().Used() != 0 {
		t.Fatalf("commit left %d bytes in staging", w.Arena().Used())
	}
}

func TestPutCommitAfterLeaseExpiry(t *testing.T) {
	f := newFixture(t, 8<<20)
	f.cfg.GCTTL = 50 * time.Millisecond
	w := f.start(func(o *owner.Options) { o.LeaseGrace = 50 * time.Millisecond })
	b, err := w.PutStart(f.ctx, "t1", [][]byte{[]byte("late")}, []int64{10})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond)
	if _, err := w.PutCommit(f.ctx, b.ID); !errors.Is(err, owner.ErrUnknownBatch) {
		t.Fatalf("late commit: %v", err)
	}
	got, _ := f.m.snapshot()
	if len(got) != 0 {
		t.Fatalf("expired put recorded: %v", got)
	}
}

func TestRemountAndRescanAfterMasterRestart(t *testing.T) {
	f := newFixture(t, 8<<20)
	f.seed("default", map[string][]byte{"k1": []byte("1"), "k2": []byte("22")})
	w := f.start(nil)
	f.m.forget()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, mounts := f.m.snapshot()
		if mounts >= 2 && len(got) == 2 && got["default/k2"] == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("owner did not re-mount and rescan: mounts %d objects %v", mounts, got)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !w.Mounted() {
		t.Fatal("owner not mounted after re-mount")
	}
}

func TestCloseUnmountsAndIsIdempotent(t *testing.T) {
	f := newFixture(t, 8<<20)
	w := f.start(nil)
	if err := w.Close(f.ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(f.ctx); err != nil {
		t.Fatal(err)
	}
	f.m.mu.Lock()
	unmounts, mounted := f.m.unmounts, f.m.mounted[w.ID()]
	f.m.mu.Unlock()
	if unmounts != 1 || mounted {
		t.Fatalf("unmounts %d, still mounted %v", unmounts, mounted)
	}
	if _, err := w.GetObjects(f.ctx, "default", [][]byte{[]byte("k")}, []int64{1}); !errors.Is(err, owner.ErrClosed) {
		t.Fatalf("get after close: %v", err)
	}
}

func TestBadStoragePathRefusesStart(t *testing.T) {
	f := newFixture(t, 8<<20)
	f.cfg.FileStoragePath = "relative/path"
	_, err := owner.New(f.ctx, owner.Options{Config: f.cfg, Engine: newEngine(t), Master: f.m, UnlockedStaging: true})
	if !errors.Is(err, filestorage.ErrInvalidPath) {
		t.Fatalf("err = %v", err)
	}
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if f.m.mounts != 0 {
		t.Fatal("owner mounted with a bad storage path")
	}
}

// gatedStore blocks every PutBatch until gate is closed (fault injection).
type gatedStore struct {
	filestorage.Store
	entered chan struct{}
	gate    chan struct{}
}

func (g gatedStore) PutBatch(ctx context.Context, items []filestorage.PutItem) []error {
	g.entered <- struct{}{}
	<-g.gate
	return g.Store.PutBatch(ctx, items)
}

func TestUploadsDoNotBlockPings(t *testing.T) {
	f := newFixture(t, 8<<20)
	p, err := filestorage.NewPosix(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	g := gatedStore{Store: p, entered: make(chan struct{}, 1), gate: make(chan struct{})}
	fs, err := filestorage.New(f.ctx, filestorage.Options{Config: f.cfg, Store: g})
	if err != nil {
		t.Fatal(err)
	}
	w := f.start(func(o *owner.Options) { o.Storage = fs })
	b, err := w.PutStart(f.ctx, "default", [][]byte{[]byte("slow")}, []int64{100})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := w.PutCommit(f.ctx, b.ID)
		done <- err
	}()
	<-g.entered // the upload is now stuck in the object store
	f.m.mu.Lock()
	before := f.m.pings
	f.m.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for {
		f.m.mu.Lock()
		n := f.m.pings
		f.m.mu.Unlock()
		if n >= before+5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d pings while an upload was stuck", n-before)
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(g.gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got, _ := f.m.snapshot()
	if got["default/slow"] != 100 {
		t.Fatalf("master saw %v", got)
	}
}
