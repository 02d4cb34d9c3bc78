package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferrylabs/ferry/offload/config"
	"github.com/ferrylabs/ferry/offload/filestorage"
	"github.com/ferrylabs/ferry/offload/owner"
)

// putAll writes n-byte objects for each size and returns keys and sources.
func putAll(t *testing.T, ctx context.Context, r *requester, prefix string, sizes []int) ([][]byte, [][]byte) {
	t.Helper()
	var keys, srcs [][]byte
	for i, n := range sizes {
		keys = append(keys, []byte(fmt.Sprintf("%s/%03d\x00%%/é", prefix, i)))
		srcs = append(srcs, r.alloc(t, n, uint64(i+1)))
	}
	for i, res := range r.Put(ctx, keys, srcs) {
		if res.Err != nil {
			t.Fatalf("put %q (%d bytes): %v", keys[i], sizes[i], res.Err)
		}
	}
	return keys, srcs
}

// getAll reads keys and returns the results and destinations.
func getAll(t *testing.T, ctx context.Context, r *requester, keys [][]byte, sizes []int) ([]Result, [][]byte) {
	t.Helper()
	dst := make([][]byte, len(keys))
	for i := range keys {
		dst[i] = r.alloc(t, max(sizes[i], 1), 0)
	}
	return r.Get(ctx, keys, dst), dst
}

func TestPutGetManySizesTwoOwners(t *testing.T) {
	c := newCluster(t, 10*time.Second)
	c.cfg.StagingSize = 160 << 20
	a, b := c.mustOwner("owner-a"), c.mustOwner("owner-b")
	r := c.requester(512 << 20)
	var sizes []int
	for i := range 40 {
		sizes = append(sizes, []int{0, 1, 7, 4095, 4096, 4097, 65537, 1<<20 + 13}[i%8])
	}
	sizes = append(sizes, 4<<20, 17<<20+3, 64<<20)
	keys, srcs := putAll(t, c.ctx, r, "many", sizes)

	res, dst := getAll(t, c.ctx, r, keys, sizes)
	served := map[string]int{}
	for i, g := range res {
		if g.Err != nil {
			t.Fatalf("get %q: %v", keys[i], g.Err)
		}
		if g.Size != int64(sizes[i]) || !bytes.Equal(dst[i][:sizes[i]], srcs[i]) {
			t.Fatalf("key %q: size %d (want %d) or bytes differ", keys[i], g.Size, sizes[i])
		}
		served[g.Owner]++
		if g.Timings.Master <= 0 || g.Timings.Owner <= 0 || g.Timings.Total < g.Timings.Owner {
			t.Fatalf("timings not recorded: %+v", g.Timings)
		}
	}
	if served[a.Endpoint()] == 0 || served[b.Endpoint()] == 0 {
		t.Fatalf("keys not spread over both owners: %v", served)
	}
	// A missing key fails alone, with ErrNotFound.
	res, _ = getAll(t, c.ctx, r, [][]byte{keys[1], []byte("nope")}, []int{1, 1})
	if res[0].Err != nil || !errors.Is(res[1].Err, ErrNotFound) {
		t.Fatalf("mixed get: %v / %v", res[0].Err, res[1].Err)
	}
	// A destination shorter than the object is refused.
	short := r.Get(c.ctx, [][]byte{keys[len(keys)-1]}, [][]byte{r.alloc(t, 10, 0)})
	if !errors.Is(short[0].Err, ErrBufferTooSmall) {
		t.Fatalf("short destination: %v", short[0].Err)
	}
	// The master lists them.
	l, err := r.List(c.ctx, []byte("many/"))
	if err != nil || len(l) != len(keys) {
		t.Fatalf("list: %d keys, %v", len(l), err)
	}
}

func TestOwnerRestartRescans(t *testing.T) {
	c := newCluster(t, 10*time.Second)
	c.mustOwner("owner-a")
	r := c.requester(64 << 20)
	sizes := []int{3, 5000, 1 << 20}
	keys, srcs := putAll(t, c.ctx, r, "restart", sizes)

	c.stopOwner("owner-a", false)
	// The unmount dropped the owner's replicas at once.
	res, _ := getAll(t, c.ctx, r, keys[:1], sizes[:1])
	if !errors.Is(res[0].Err, ErrNotFound) {
		t.Fatalf("after unmount: %v, want ErrNotFound", res[0].Err)
	}
	c.mustOwner("owner-a") // a new process with a new id, same prefix
	res, dst := getAll(t, c.ctx, r, keys, sizes)
	for i, g := range res {
		if g.Err != nil || !bytes.Equal(dst[i][:sizes[i]], srcs[i]) {
			t.Fatalf("after restart, key %d: %v", i, g.Err)
		}
	}
}

func TestOwnerKilledFailsOnlyItsKeys(t *testing.T) {
	c := newCluster(t, 30*time.Second)
	c.cfg.RPCTimeout = time.Second
	a := c.mustOwner("owner-a")
	c.mustOwner("owner-b")
	r := c.requester(64 << 20)
	sizes := make([]int, 8)
	for i := range sizes {
		sizes[i] = 1000 + i
	}
	keys, srcs := putAll(t, c.ctx, r, "kill", sizes)
	res, _ := getAll(t, c.ctx, r, keys, sizes)
	onA := 0
	for _, g := range res {
		if g.Owner == a.Endpoint() {
			onA++
		}
	}
	if onA == 0 || onA == len(keys) {
		t.Fatalf("%d of %d keys on owner-a; want a mix", onA, len(keys))
	}
	c.stopOwner("owner-a", true) // no unmount: the master still advertises it
	start := time.Now()
	res, dst := getAll(t, c.ctx, r, keys, sizes)
	took := time.Since(start)
	if took > 2*c.cfg.RPCTimeout+time.Second {
		t.Fatalf("get with a dead owner took %v (RPC timeout %v)", took, c.cfg.RPCTimeout)
	}
	for i, g := range res {
		if g.Owner == a.Endpoint() {
			if !errors.Is(g.Err, ErrOwner) {
				t.Fatalf("key on the dead owner: %v, want ErrOwner", g.Err)
			}
			continue
		}
		if g.Err != nil || !bytes.Equal(dst[i][:sizes[i]], srcs[i]) {
			t.Fatalf("key on the live owner: %v", g.Err)
		}
	}
}

func TestMasterRestartOwnersRemount(t *testing.T) {
	c := newCluster(t, 10*time.Second)
	c.mustOwner("owner-a")
	c.mustOwner("owner-b")
	r := c.requester(64 << 20)
	sizes := []int{10, 20000, 300, 4 << 20}
	keys, srcs := putAll(t, c.ctx, r, "mrestart", sizes)

	addr := c.maddr
	c.master.Close()
	c.startMaster(addr, 10*time.Second)
	deadline := time.Now().Add(20 * time.Second)
	for {
		res, dst := getAll(t, c.ctx, r, keys, sizes)
		ok := true
		for i, g := range res {
			if g.Err != nil || !bytes.Equal(dst[i][:sizes[i]], srcs[i]) {
				ok = false
			}
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("keys not readable after the master restart: %v", res[0].Err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestLeaseExpiryFailsTransfer(t *testing.T) {
	c := newCluster(t, 10*time.Second)
	c.mustOwner("owner-a")
	r := c.requester(64 << 20)
	sizes := []int{8 << 20}
	keys, _ := putAll(t, c.ctx, r, "lease", sizes)
	c.stopOwner("owner-a", false)
	c.cfg.GCTTL = time.Millisecond // the lease ends before the bytes can move
	c.mustOwner("owner-a")
	res, dst := getAll(t, c.ctx, r, keys, sizes)
	if !errors.Is(res[0].Err, ErrLeaseExpired) {
		t.Fatalf("get past the lease: %v, want ErrLeaseExpired", res[0].Err)
	}
	// The cancelled transfer no longer writes into dst.
	for i := range dst[0] {
		dst[0][i] = 0xA5
	}
	time.Sleep(200 * time.Millisecond)
	if !bytes.Equal(dst[0], bytes.Repeat([]byte{0xA5}, len(dst[0]))) {
		t.Fatal("the destination was written after Get returned")
	}
}

func TestStagingExhaustedThenSuccess(t *testing.T) {
	c := newCluster(t, 10*time.Second)
	c.cfg.StagingSize = 8 << 20
	a := c.mustOwner("owner-a")
	r := c.requester(64 << 20)
	sizes := []int{4 << 20, 4 << 20}
	keys, srcs := putAll(t, c.ctx, r, "full", sizes)

	// Another requester holds the whole staging arena.
	conn, err := Dial(a.Endpoint(), c.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	holder := NewOwnerClient(conn)
	held, err := holder.Get(c.ctx, "default", keys, []int64{4 << 20, 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	res, _ := getAll(t, c.ctx, r, keys[:1], sizes[:1])
	if !errors.Is(res[0].Err, ErrStagingExhausted) || !strings.Contains(res[0].Err.Error(), "BUFFER_OVERFLOW") {
		t.Fatalf("get with staging full: %v", res[0].Err)
	}
	if err := holder.Release(c.ctx, held.ID); err != nil {
		t.Fatal(err)
	}
	res, dst := getAll(t, c.ctx, r, keys, sizes)
	for i, g := range res {
		if g.Err != nil || !bytes.Equal(dst[i][:sizes[i]], srcs[i]) {
			t.Fatalf("after release, key %d: %v", i, g.Err)
		}
	}
}

func TestBatchSplitToFitStaging(t *testing.T) {
	c := newCluster(t, 10*time.Second)
	c.cfg.StagingSize = 8 << 20
	c.mustOwner("owner-a")
	r := c.requester(96 << 20)
	sizes := make([]int, 12)
	for i := range sizes {
		sizes[i] = 2<<20 - 100
	}
	keys, srcs := putAll(t, c.ctx, r, "split", sizes) // 24 MiB through an 8 MiB arena
	res, dst := getAll(t, c.ctx, r, keys, sizes)
	for i, g := range res {
		if g.Err != nil || !bytes.Equal(dst[i][:sizes[i]], srcs[i]) {
			t.Fatalf("key %d: %v", i, g.Err)
		}
	}
}

func TestWrongCredentialsOwnerRefusesToStart(t *testing.T) {
	c := newCluster(t, 10*time.Second)
	if c.s3env == nil {
		t.Skip("FERRY_TEST_S3_ENDPOINT not set: needs the real S3 server to check credentials")
	}
	_, err := c.startOwner("owner-a", func(o *owner.Options) {
		o.Lookup = c.lookup(map[string]string{"MOONCAKE_S3_SECRET_ACCESS_KEY": "wrong-secret"})
	})
	if err == nil {
		t.Fatal("owner started with a wrong secret")
	}
	if !strings.Contains(err.Error(), "rejected the credentials") || strings.Contains(err.Error(), "wrong-secret") {
		t.Fatalf("error should name the refusal and hide the secret: %v", err)
	}
	t.Log(err)
	// The failed owner left no mount behind: nothing can be placed.
	r := c.requester(1 << 20)
	if res := r.Put(c.ctx, [][]byte{[]byte("k")}, [][]byte{r.alloc(t, 10, 1)}); !errors.Is(res[0].Err, ErrMaster) {
		t.Fatalf("put with no owner mounted: %v", res[0].Err)
	}
}

// barrierStore makes every GetBatch wait until `want` loads are in the
// store at once (or give up after a while): loads only succeed if the
// owner serves a requester's batches concurrently.
type barrierStore struct {
	filestorage.Store
	mu      sync.Mutex
	in      int
	want    int
	reached chan struct{}
	maxSeen int
}

func (b *barrierStore) GetBatch(ctx context.Context, items []filestorage.GetItem) []error {
	b.mu.Lock()
	b.in++
	b.maxSeen = max(b.maxSeen, b.in)
	if b.in == b.want {
		close(b.reached)
	}
	b.mu.Unlock()
	select {
	case <-b.reached:
	case <-time.After(5 * time.Second):
	}
	defer func() { b.mu.Lock(); b.in--; b.mu.Unlock() }()
	return b.Store.GetBatch(ctx, items)
}

func TestOwnerLoadsBatchesConcurrently(t *testing.T) {
	c := newCluster(t, 10*time.Second)
	c.cfg.StagingSize = 8 << 20 // batches of 4 MiB: two per Get below
	cfg := c.ownerConfig("conc")
	cfg.BackendDescriptor = config.BackendFilePerKey
	p, err := filestorage.NewPosix(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	bs := &barrierStore{Store: p, want: 2, reached: make(chan struct{})}
	fs, err := filestorage.New(c.ctx, filestorage.Options{Config: cfg, Store: bs})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.startOwner("conc", func(o *owner.Options) { o.Storage = fs }); err != nil {
		t.Fatal(err)
	}
	r := c.requester(64 << 20)
	sizes := []int{2 << 20, 2 << 20, 2 << 20, 2 << 20}
	keys, srcs := putAll(t, c.ctx, r, "conc", sizes)
	res, dst := getAll(t, c.ctx, r, keys, sizes)
	for i, g := range res {
		if g.Err != nil || !bytes.Equal(dst[i][:sizes[i]], srcs[i]) {
			t.Fatalf("key %d: %v", i, g.Err)
		}
	}
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if bs.maxSeen < 2 {
		t.Fatalf("the owner never ran two loads at once (max %d)", bs.maxSeen)
	}
}

func TestOwnerPingsWithinMasterTTL(t *testing.T) {
	c := newCluster(t, time.Second) // a master that forgets owners after 1 s
	if _, err := c.startOwner("ttl", func(o *owner.Options) { o.PingInterval = 10 * time.Second }); err != nil {
		t.Fatal(err)
	}
	r := c.requester(1 << 20)
	keys, srcs := putAll(t, c.ctx, r, "ttl", []int{100})
	time.Sleep(2500 * time.Millisecond) // two and a half TTLs
	res, dst := getAll(t, c.ctx, r, keys, []int{100})
	if res[0].Err != nil || !bytes.Equal(dst[0][:100], srcs[0]) {
		t.Fatalf("owner expired at the master despite its pings: %v", res[0].Err)
	}
}

func TestManySmallKeysSpanSeveralRPCs(t *testing.T) {
	defer func(k int) { maxBatchKeys = k }(maxBatchKeys)
	maxBatchKeys = 64 // so a few hundred keys need several master and owner RPCs
	c := newCluster(t, 10*time.Second)
	c.mustOwner("owner-a")
	r := c.requester(16 << 20)
	n := 5*maxBatchKeys + 7
	keys := make([][]byte, n)
	srcs := make([][]byte, n)
	sizes := make([]int, n)
	slab := r.alloc(t, n, 7)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("small/%05d", i))
		srcs[i] = slab[i : i+1]
		sizes[i] = 1
	}
	for i, res := range r.Put(c.ctx, keys, srcs) {
		if res.Err != nil {
			t.Fatalf("put %d: %v", i, res.Err)
		}
	}
	out := r.alloc(t, n, 0)
	dst := make([][]byte, n)
	for i := range dst {
		dst[i] = out[i : i+1]
	}
	for i, res := range r.Get(c.ctx, keys, dst) {
		if res.Err != nil {
			t.Fatalf("get %d: %v", i, res.Err)
		}
	}
	if !bytes.Equal(out, slab) {
		t.Fatal("bytes differ")
	}
}
