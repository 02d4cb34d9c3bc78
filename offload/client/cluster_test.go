package client

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"

	"github.com/ferrylabs/ferry/engine"
	"github.com/ferrylabs/ferry/offload/config"
	"github.com/ferrylabs/ferry/offload/master"
	"github.com/ferrylabs/ferry/offload/objstore/objtest"
	"github.com/ferrylabs/ferry/offload/owner"
	"github.com/ferrylabs/ferry/tcp"
	"github.com/ferrylabs/ferry/transport"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

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

// cluster is a master, owners and a requester over loopback. The owners
// use the real S3 server when FERRY_TEST_S3_ENDPOINT is set (one bucket,
// one prefix per owner), the posix backend otherwise.
type cluster struct {
	t      testing.TB
	ctx    context.Context
	s3env  map[string]string
	root   string
	cfg    config.Config
	master *master.Server
	maddr  string

	mu     sync.Mutex
	owners map[string]*ownerProc
}

type ownerProc struct {
	o    *owner.Owner
	eng  *engine.Engine
	conn *grpc.ClientConn
}

func newCluster(t testing.TB, clientTTL time.Duration) *cluster {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	t.Cleanup(cancel)
	c := &cluster{t: t, ctx: ctx, root: t.TempDir(), owners: map[string]*ownerProc{}}
	c.s3env = testS3(t)
	c.cfg = config.Default()
	c.cfg.RPCTimeout = 2 * time.Second
	c.cfg.RPCConnectTimeout = time.Second
	c.cfg.GCTTL = 5 * time.Second
	c.cfg.GCInterval = 50 * time.Millisecond
	c.cfg.HeartbeatInterval = time.Second
	c.cfg.StagingSize = 32 << 20
	c.startMaster("127.0.0.1:0", clientTTL)
	t.Cleanup(func() {
		c.mu.Lock()
		owners := c.owners
		c.owners = nil
		c.mu.Unlock()
		for _, p := range owners {
			p.o.Close(context.Background())
			p.conn.Close()
		}
		c.master.Close()
	})
	return c
}

func (c *cluster) startMaster(addr string, ttl time.Duration) {
	c.t.Helper()
	var err error
	for range 50 { // the port of a restarted master may take a moment to free
		var s *master.Server
		s, err = master.NewServer(master.Config{Options: master.Options{EnableOffload: true, ClientTTL: ttl}, Addr: addr})
		if err != nil {
			c.t.Fatal(err)
		}
		if err = s.Start(); err == nil {
			c.master = s
			c.maddr = s.Addr().String()
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.t.Fatalf("start master: %v", err)
}

// ownerConfig is the configuration of the owner with the given prefix.
func (c *cluster) ownerConfig(prefix string) config.Config {
	cfg := c.cfg
	cfg.FileStoragePath = filepath.Join(c.root, "fs-"+prefix)
	os.MkdirAll(cfg.FileStoragePath, 0o755)
	if c.s3env != nil {
		cfg.BackendDescriptor = config.BackendDistributed
		cfg.FSAdapter = "s3"
		cfg.RootDir = "/" + prefix
	} else {
		cfg.BackendDescriptor = config.BackendFilePerKey
	}
	return cfg
}

func (c *cluster) lookup(override map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		if v, ok := override[k]; ok {
			return v, true
		}
		v, ok := c.s3env[k]
		return v, ok
	}
}

// startOwner starts an owner for prefix; mod may change its options.
func (c *cluster) startOwner(prefix string, mod func(*owner.Options)) (*owner.Owner, error) {
	c.t.Helper()
	conn, err := Dial(c.maddr, c.cfg)
	if err != nil {
		c.t.Fatal(err)
	}
	eng := tcpEngine(c.t)
	o := owner.Options{Config: c.ownerConfig(prefix), Engine: eng, Master: owner.NewMasterClient(conn),
		Lookup: c.lookup(nil), UnlockedStaging: true, PingInterval: 100 * time.Millisecond}
	if mod != nil {
		mod(&o)
	}
	w, err := owner.New(c.ctx, o)
	if err != nil {
		conn.Close()
		eng.Close()
		return nil, err
	}
	c.mu.Lock()
	c.owners[prefix] = &ownerProc{o: w, eng: eng, conn: conn}
	c.mu.Unlock()
	return w, nil
}

func (c *cluster) mustOwner(prefix string) *owner.Owner {
	c.t.Helper()
	w, err := c.startOwner(prefix, nil)
	if err != nil {
		c.t.Fatalf("owner %s: %v", prefix, err)
	}
	return w
}

// stopOwner closes (graceful) or aborts (crash) the owner of prefix.
func (c *cluster) stopOwner(prefix string, crash bool) {
	c.mu.Lock()
	p := c.owners[prefix]
	delete(c.owners, prefix)
	c.mu.Unlock()
	if crash {
		p.o.Abort()
		p.eng.Close()
	} else {
		p.o.Close(c.ctx)
	}
	p.conn.Close()
}

// requester is a client with its own engine and registered buffer.
type requester struct {
	*Client
	eng  *engine.Engine
	buf  *Buffer
	conn *grpc.ClientConn
}

func (c *cluster) requester(bufSize int64) *requester {
	c.t.Helper()
	eng := tcpEngine(c.t)
	buf, err := NewBuffer(eng, bufSize, true)
	if err != nil {
		c.t.Fatal(err)
	}
	conn, err := Dial(c.maddr, c.cfg)
	if err != nil {
		c.t.Fatal(err)
	}
	// -race on two busy cores moves object bytes far slower than production.
	cl, err := New(Options{Config: c.cfg, Engine: eng, Master: NewMasterClient(conn), MinStoreRate: 4 << 20})
	if err != nil {
		c.t.Fatal(err)
	}
	r := &requester{Client: cl, eng: eng, buf: buf, conn: conn}
	c.t.Cleanup(func() {
		cl.Close()
		conn.Close()
		buf.Close()
	})
	return r
}

// alloc returns n bytes of registered memory filled from seed.
func (r *requester) alloc(t testing.TB, n int, seed uint64) []byte {
	t.Helper()
	s, err := r.buf.Alloc(int64(n))
	if err != nil {
		t.Fatalf("alloc %d: %v", n, err)
	}
	b := s.Bytes()[:n]
	if seed != 0 {
		rng := rand.New(rand.NewPCG(seed, uint64(n)))
		for i := 0; i+8 <= len(b); i += 8 {
			v := rng.Uint64()
			for j := range 8 {
				b[i+j] = byte(v >> (8 * j))
			}
		}
		for i := len(b) &^ 7; i < len(b); i++ {
			b[i] = byte(rng.Uint32())
		}
	}
	return b
}

// testS3 creates a bucket on the test S3 server and returns the adapter
// environment, or nil (posix backend) when FERRY_TEST_S3_ENDPOINT is unset.
func testS3(t testing.TB) map[string]string {
	s3, ok := objtest.LookupS3Env()
	if !ok {
		t.Log("FERRY_TEST_S3_ENDPOINT not set: owners use the posix backend (scripts/test.sh starts a real S3 server)")
		return nil
	}
	bucket, _ := s3.NewBucket(t, "ferry-e2e")
	return s3.MooncakeEnv(bucket)
}
