package demo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"

	"github.com/ferrylabs/ferry/engine"
	"github.com/ferrylabs/ferry/offload/client"
	"github.com/ferrylabs/ferry/offload/config"
	"github.com/ferrylabs/ferry/offload/filestorage"
	"github.com/ferrylabs/ferry/offload/master"
	"github.com/ferrylabs/ferry/offload/objstore"
	"github.com/ferrylabs/ferry/offload/oss"
	"github.com/ferrylabs/ferry/offload/owner"
	"github.com/ferrylabs/ferry/offload/s3"
	"github.com/ferrylabs/ferry/staging"
)

// cluster is the in-process deployment: object store, master, owner with
// its engine, requester with its engine and registered buffer.
type cluster struct {
	log       *slog.Logger
	quietLog  *slog.Logger
	store     StoreURL
	storeDesc string
	lookup    func(string) (string, bool)

	s3srv  *S3Server
	direct objstore.Store // the demo's own adapter: corruption, cleanup
	tmpDir string

	master *master.Server
	conn   *grpc.ClientConn

	ownerEng *engine.Engine
	owner    *owner.Owner

	reqReg *prometheus.Registry
	reqEng *engine.Engine
	buf    *staging.Arena
	bufReg bool
	client *client.Client

	unlocked bool
	noticed  bool
}

// sizing is how much staging memory the run needs.
type sizing struct {
	batchBytes  int64 // one batch's slots
	ownerBytes  int64 // owner staging arena
	bufferBytes int64 // requester registered buffer
}

// inflight is the number of batches the demo keeps in flight.
const inflight = 2

func sizeFor(o Options) sizing {
	bb := int64(o.Batch) * slotBytes(o.MaxSize)
	return sizing{batchBytes: bb, ownerBytes: (inflight + 1) * bb, bufferBytes: inflight * bb}
}

// noticeUnlocked logs the memlock fallback once.
func (c *cluster) noticeUnlocked(need int64, cause error) {
	c.unlocked = true
	if c.noticed {
		return
	}
	c.noticed = true
	args := []any{"needed", human(need), "RLIMIT_MEMLOCK", memlockLimit()}
	if cause != nil {
		args = append(args, "err", cause)
	}
	c.log.Warn("staging memory cannot be locked in RAM here; using unlocked memory (fine for TCP; RDMA needs `ulimit -l unlimited` or root)", args...)
}

// startCluster starts every part. On error everything started is closed.
func startCluster(ctx context.Context, o Options, sz sizing) (c *cluster, err error) {
	c = &cluster{log: o.Logger, quietLog: quiet(o.Logger), lookup: o.Lookup}
	if c.lookup == nil {
		c.lookup = os.LookupEnv
	}
	defer func() {
		if err != nil {
			c.close(context.Background())
			c = nil
		}
	}()
	c.store, _ = ParseStore(o.Store)
	if !canLock(uint64(sz.ownerBytes + sz.bufferBytes)) {
		c.noticeUnlocked(sz.ownerBytes+sz.bufferBytes, nil)
	}

	if err := c.startStore(ctx, o); err != nil {
		return c, err
	}
	if err := c.startMaster(o); err != nil {
		return c, err
	}
	cfg := c.offloadConfig(o, sz)
	if err := c.startOwner(ctx, o, cfg); err != nil {
		return c, err
	}
	if err := c.startRequester(o, cfg, sz); err != nil {
		return c, err
	}
	return c, nil
}

// storeLookup is the environment the object-store adapters read.
func (c *cluster) storeLookup() func(string) (string, bool) {
	if c.s3srv != nil {
		env := c.s3srv.Env()
		return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	}
	bucketVar := s3.EnvBucket
	if c.store.Kind == "oss" {
		bucketVar = oss.EnvBucket
	}
	bucket, lookup := c.store.Bucket, c.lookup
	return func(k string) (string, bool) {
		if k == bucketVar {
			return bucket, true
		}
		return lookup(k)
	}
}

func (c *cluster) startStore(ctx context.Context, o Options) error {
	kind := c.store.Kind
	if kind == "" {
		srv, err := ListenS3Server(net.JoinHostPort(o.Host, "0"), DefaultBucket)
		if err != nil {
			return err
		}
		c.s3srv = srv
		kind = "s3"
		c.storeDesc = fmt.Sprintf("embedded S3 (gofakes3, in memory, signatures not checked) at %s, bucket %s", srv.Endpoint(), srv.Bucket())
	} else {
		c.storeDesc = c.store.String()
	}
	lookup := objstore.LookupFunc(c.storeLookup())
	// The owner's adapter reads the same configuration and logs its
	// warnings; this one only reports errors.
	errLog := slog.New(levelFloor{h: c.quietLog.Handler(), min: slog.LevelError})
	var st objstore.Store
	if kind == "oss" {
		st = oss.New(oss.Options{Prefix: c.store.Prefix, Lookup: lookup, Logger: errLog})
	} else {
		st = s3.New(s3.Options{Prefix: c.store.Prefix, Lookup: lookup, Logger: errLog})
	}
	if err := st.Init(ctx); err != nil {
		st.Close()
		return fmt.Errorf("%w: %s configuration: %w", ErrSetup, kind, err)
	}
	c.direct = st
	dir, err := os.MkdirTemp("", "ferry-demo-")
	if err != nil {
		return fmt.Errorf("%w: owner storage directory: %w", ErrSetup, err)
	}
	c.tmpDir = dir
	return nil
}

func (c *cluster) startMaster(o Options) error {
	srv, err := master.NewServer(master.Config{
		Options:  master.Options{EnableOffload: true, Logger: c.quietLog},
		Addr:     net.JoinHostPort(o.Host, "0"),
		Registry: prometheus.NewRegistry(),
	})
	if err != nil {
		return fmt.Errorf("%w: master: %w", ErrSetup, err)
	}
	if err := srv.Start(); err != nil {
		return fmt.Errorf("%w: master: %w", ErrSetup, err)
	}
	c.master = srv
	return nil
}

// offloadConfig is the owner's and requester's configuration: the
// built-in defaults with the demo's store, sizes and addresses.
func (c *cluster) offloadConfig(o Options, sz sizing) config.Config {
	cfg := config.Default()
	cfg.MasterAddress = c.master.Addr().String()
	cfg.LocalHostname = o.Host
	cfg.FileStoragePath = c.tmpDir
	cfg.BackendDescriptor = config.BackendDistributed
	cfg.FSAdapter = c.store.Kind
	if cfg.FSAdapter == "" {
		cfg.FSAdapter = "s3"
	}
	cfg.RootDir = c.store.Prefix
	cfg.HealthCheck = c.s3srv == nil
	cfg.StagingSize = sz.ownerBytes
	cfg.RPCConnectTimeout = 5 * time.Second
	cfg.GCTTL = 10 * time.Second
	return cfg
}

func (c *cluster) newEngine(o Options, reg prometheus.Registerer) (*engine.Engine, error) {
	ecfg, err := engine.ConfigFromEnv()
	if err != nil {
		return nil, fmt.Errorf("%w: engine environment: %w", ErrSetup, err)
	}
	ecfg.LocalServerName = o.Host
	ecfg.Logger = c.quietLog
	ecfg.Registerer = reg
	e, err := engine.New(ecfg)
	if err != nil {
		return nil, fmt.Errorf("%w: transfer engine: %w", ErrSetup, err)
	}
	return e, nil
}

func (c *cluster) startOwner(ctx context.Context, o Options, cfg config.Config) error {
	conn, err := client.Dial(c.master.Addr().String(), cfg)
	if err != nil {
		return fmt.Errorf("%w: dial master: %w", ErrSetup, err)
	}
	c.conn = conn
	if c.ownerEng, err = c.newEngine(o, nil); err != nil {
		return err
	}
	for {
		fs, err := filestorage.New(ctx, filestorage.Options{Config: cfg, Lookup: c.storeLookup(), Logger: c.quietLog})
		if err != nil {
			return fmt.Errorf("%w: owner storage: %w", ErrSetup, err)
		}
		w, err := owner.New(ctx, owner.Options{
			Config: cfg, Engine: c.ownerEng, Master: owner.NewMasterClient(conn), Storage: fs,
			ListenAddr: net.JoinHostPort(o.Host, "0"), UnlockedStaging: c.unlocked, Logger: c.quietLog,
		})
		if err != nil {
			if !c.unlocked && errors.Is(err, staging.ErrMemlock) {
				c.noticeUnlocked(cfg.StagingSize, err)
				continue
			}
			return fmt.Errorf("%w: owner: %w", ErrSetup, err)
		}
		c.owner = w
		return nil
	}
}

func (c *cluster) startRequester(o Options, cfg config.Config, sz sizing) error {
	c.reqReg = prometheus.NewRegistry()
	var err error
	if c.reqEng, err = c.newEngine(o, c.reqReg); err != nil {
		return err
	}
	for {
		a, err := staging.New(staging.Options{Size: uint64(sz.bufferBytes), Unlocked: c.unlocked, Name: "requester", Logger: c.quietLog})
		if err != nil {
			if !c.unlocked && errors.Is(err, staging.ErrMemlock) {
				c.noticeUnlocked(sz.bufferBytes, err)
				continue
			}
			return fmt.Errorf("%w: requester buffer: %w", ErrSetup, err)
		}
		c.buf = a
		break
	}
	if err := c.reqEng.RegisterMemory(c.buf.Bytes(), "*", true); err != nil {
		return fmt.Errorf("%w: register requester buffer: %w", ErrSetup, err)
	}
	c.bufReg = true
	cl, err := client.New(client.Options{Config: cfg, Engine: c.reqEng, Master: client.NewMasterClient(c.conn),
		MaxBatchBytes: sz.batchBytes, Logger: c.quietLog})
	if err != nil {
		return fmt.Errorf("%w: requester: %w", ErrSetup, err)
	}
	c.client = cl
	return nil
}

// transportBytes reads the requester engine's byte counters: transport
// name -> op ("read", "write") -> bytes.
func (c *cluster) transportBytes() map[string]map[string]uint64 {
	out := map[string]map[string]uint64{}
	mfs, err := c.reqReg.Gather()
	if err != nil {
		return out
	}
	for _, mf := range mfs {
		if mf.GetName() != "ferry_engine_bytes_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			var tr, op string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "transport":
					tr = l.GetValue()
				case "op":
					op = l.GetValue()
				}
			}
			if v := uint64(m.GetCounter().GetValue()); v > 0 {
				if out[tr] == nil {
					out[tr] = map[string]uint64{}
				}
				out[tr][op] += v
			}
		}
	}
	return out
}

// close stops everything in reverse order of start; it tolerates parts
// that never started.
func (c *cluster) close(ctx context.Context) error {
	var errs []error
	add := func(what string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
		}
	}
	if c.client != nil {
		add("requester", c.client.Close())
	}
	if c.bufReg {
		add("unregister requester buffer", c.reqEng.UnregisterMemory(c.buf.Bytes()))
	}
	if c.buf != nil {
		add("requester buffer", c.buf.ForceClose())
	}
	if c.reqEng != nil {
		add("requester engine", c.reqEng.Close())
	}
	if c.owner != nil {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		add("owner", c.owner.Close(cctx))
		cancel()
	}
	if c.ownerEng != nil {
		add("owner engine", c.ownerEng.Close())
	}
	if c.conn != nil {
		add("master connection", c.conn.Close())
	}
	if c.master != nil {
		add("master", c.master.Close())
	}
	if c.direct != nil {
		add("object store", c.direct.Close())
	}
	if c.s3srv != nil {
		add("embedded S3", c.s3srv.Close())
	}
	if c.tmpDir != "" {
		add("owner storage directory", os.RemoveAll(c.tmpDir))
	}
	return errors.Join(errs...)
}
