package owner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"

	"github.com/ferrylabs/ferry/offload/config"
	"github.com/ferrylabs/ferry/offload/filestorage"
	"github.com/ferrylabs/ferry/offload/objstore"
	"github.com/ferrylabs/ferry/staging"
)

// Options configure New.
type Options struct {
	// Config holds the MOONCAKE_* settings: staging size, lease TTL,
	// heartbeat interval, RPC timeouts, storage backend.
	Config config.Config
	// Engine is the owner's transfer engine. The owner registers its
	// staging arena with it and unregisters it on Close; the caller
	// closes the engine after the owner.
	Engine Engine
	// Master is the master client. The owner does not close it.
	Master Master
	// Storage, when set, replaces the FileStorage built from Config. The
	// owner closes it on Close (and when New fails).
	Storage *filestorage.FileStorage
	// Lookup reads the object store's environment (MOONCAKE_S3_*,
	// MOONCAKE_OSS_*); nil means the process environment.
	Lookup func(string) (string, bool)
	// ListenAddr is the gRPC listen address; "" means
	// Config.LocalHostname on a port the OS picks.
	ListenAddr string
	// AdvertiseAddr is the endpoint given to the master; "" means the
	// listener's address with Config.LocalHostname as host.
	AdvertiseAddr string
	// OwnerID overrides the random UUID (tests).
	OwnerID string
	// PingInterval is the liveness ping period; 0 means
	// min(1 s, Config.HeartbeatInterval).
	PingInterval time.Duration
	// LeaseGrace is how long slots stay reserved after the advertised
	// lease deadline; 0 means Config.GCTTL + Config.RPCTimeout, which
	// covers the answer's transit (the requester counts the lease from
	// the answer's arrival) and a requester that drains its transfer for
	// up to its RPC timeout after the deadline.
	LeaseGrace time.Duration
	// UnlockedStaging maps the arena without mlock (small test setups).
	UnlockedStaging bool
	// Logger; nil means slog.Default().
	Logger *slog.Logger
	// Registerer receives the owner's metrics; nil registers nothing.
	Registerer prometheus.Registerer
}

// Owner is a running offload owner. Its methods are safe for concurrent
// use.
type Owner struct {
	cfg       config.Config
	eng       Engine
	master    Master
	fs        *filestorage.FileStorage
	arena     *staging.Arena
	log       *slog.Logger
	id        string
	endpoint  string
	ttl       time.Duration
	grace     time.Duration
	pingEvery time.Duration // set before the liveness loop starts
	m         *metrics

	lis  net.Listener
	srv  *grpc.Server
	wg   sync.WaitGroup
	stop chan struct{}

	mu   sync.Mutex
	puts map[uint64]*putBatch

	draining   atomic.Bool
	closeOnce  sync.Once
	closeErr   error
	scanning   atomic.Bool
	scanFailed atomic.Bool
	mounted    atomic.Bool
}

type putBatch struct {
	tenant string
	keys   [][]byte
	sizes  []int64
	lease  *staging.Lease
}

// New starts an owner: it maps and registers the staging arena, opens the
// storage (validating the path and, if configured, probing the object
// store), starts the gRPC service, mounts at the master, advertises every
// stored object (ScanMeta), and starts the liveness loop. Any failure
// undoes what was done and is returned: wrong object-store credentials
// make New fail with the storage error.
func New(ctx context.Context, o Options) (*Owner, error) {
	if o.Engine == nil || o.Master == nil {
		return nil, fmt.Errorf("%w: owner needs an engine and a master client", ErrInvalidArgument)
	}
	c := o.Config
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	w := &Owner{
		cfg: c, eng: o.Engine, master: o.Master, log: log, id: o.OwnerID,
		ttl: c.GCTTL, grace: o.LeaseGrace, pingEvery: o.PingInterval,
		stop: make(chan struct{}), puts: make(map[uint64]*putBatch),
	}
	if w.id == "" {
		w.id = uuid.NewString()
	}
	if w.ttl <= 0 {
		w.ttl = config.DefaultGCTTL
	}
	if w.grace <= 0 {
		w.grace = w.ttl + c.RPCTimeout
	}
	if w.pingEvery <= 0 {
		w.pingEvery = min(time.Second, max(c.HeartbeatInterval, 100*time.Millisecond))
	}
	w.m = newMetrics(o.Registerer, log)
	w.log = log.With("owner", w.id)

	ok := false
	defer func() {
		if ok {
			return
		}
		if w.mounted.Load() {
			cctx, cancel := w.rpcCtx(context.WithoutCancel(ctx))
			_ = w.master.Unmount(cctx, w.id)
			cancel()
		}
		w.teardown()
	}()
	fs := o.Storage
	if fs == nil {
		var err error
		fs, err = filestorage.New(ctx, filestorage.Options{Config: c, Lookup: o.Lookup, Logger: log, Registerer: o.Registerer})
		if err != nil {
			return nil, fmt.Errorf("owner storage%s: %w", storageHint(err), err)
		}
	}
	w.fs = fs

	arena, err := staging.New(staging.Options{
		Size: uint64(c.StagingSize), Unlocked: o.UnlockedStaging, Name: "owner",
		Logger: log, Registerer: o.Registerer, SweepInterval: c.GCInterval,
		OnExpire: w.onExpire, InUse: w.eng.Serving,
	})
	if err != nil {
		return nil, fmt.Errorf("owner staging arena (MOONCAKE_OFFLOAD_LOCAL_BUFFER_SIZE_BYTES=%d): %w", c.StagingSize, err)
	}
	w.arena = arena
	if err := w.eng.RegisterMemory(arena.Bytes(), "*", true); err != nil {
		w.arena.ForceClose()
		w.arena = nil
		return nil, fmt.Errorf("register staging arena with the engine: %w", err)
	}

	if err := w.listen(o.ListenAddr, o.AdvertiseAddr); err != nil {
		return nil, err
	}
	w.startServer()

	if err := w.mount(ctx); err != nil {
		return nil, err
	}
	w.wg.Add(1)
	go w.liveness()
	if err := w.rescan(ctx); err != nil {
		return nil, fmt.Errorf("advertise stored objects (ScanMeta)%s: %w", storageHint(err), err)
	}
	ok = true
	w.log.Info("offload owner started", "endpoint", w.endpoint, "segment", w.eng.Name(),
		"storage", fs.Kind(), "staging_bytes", arena.Len(), "lease_ttl", w.ttl)
	return w, nil
}

func (w *Owner) listen(addr, advertise string) error {
	if addr == "" {
		addr = net.JoinHostPort(w.cfg.LocalHostname, "0")
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("owner RPC listen on %s: %w", addr, err)
	}
	w.lis = lis
	if advertise == "" {
		_, port, _ := net.SplitHostPort(lis.Addr().String())
		host := w.cfg.LocalHostname
		if host == "" {
			host, _, _ = net.SplitHostPort(lis.Addr().String())
		}
		advertise = net.JoinHostPort(host, port)
	}
	w.endpoint = advertise
	return nil
}

// storageHint explains an object-store refusal in plain words.
func storageHint(err error) string {
	var oe *objstore.Error
	if !errors.As(err, &oe) {
		return ""
	}
	switch {
	case oe.Status == 403 && (oe.ServiceCode == "SignatureDoesNotMatch" || oe.ServiceCode == "InvalidAccessKeyId"):
		return ": the object store rejected the credentials (check the access key id and secret)"
	case oe.Status == 403 && oe.ServiceCode == "RequestTimeTooSkewed":
		return ": the object store rejected the request time (fix the clock)"
	case oe.Status == 403:
		return ": the object store denied access (check the credentials and bucket permissions)"
	case oe.ServiceCode == "NoSuchBucket":
		return ": the bucket does not exist"
	}
	return ""
}

// ID is the owner id registered at the master.
func (w *Owner) ID() string { return w.id }

// Endpoint is the owner's RPC endpoint (host:port) as advertised.
func (w *Owner) Endpoint() string { return w.endpoint }

// Addr is the address the RPC listener is bound to.
func (w *Owner) Addr() net.Addr { return w.lis.Addr() }

// SegmentName is the owner engine's segment name.
func (w *Owner) SegmentName() string { return w.eng.Name() }

// Mounted reports whether the last mount or ping found the owner mounted.
func (w *Owner) Mounted() bool { return w.mounted.Load() }

func (w *Owner) rpcCtx(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, w.cfg.RPCTimeout)
}

func (w *Owner) mount(ctx context.Context) error {
	cctx, cancel := w.rpcCtx(ctx)
	defer cancel()
	ttl, err := w.master.Mount(cctx, MountInfo{
		OwnerID: w.id, RPCEndpoint: w.endpoint, SegmentName: w.eng.Name(),
		Capacity: w.fs.Capacity(), EnableOffloading: true,
	})
	if err != nil {
		return fmt.Errorf("%w: mount: %w", ErrMaster, err)
	}
	// Ping at least three times per master TTL.
	if ttl > 0 && w.pingEvery > ttl/3 {
		w.pingEvery = max(ttl/3, 10*time.Millisecond)
		w.log.Info("ping period shortened to fit the master's client TTL", "ttl", ttl, "ping", w.pingEvery)
	}
	w.mounted.Store(true)
	cctx2, cancel2 := w.rpcCtx(ctx)
	defer cancel2()
	if err := w.master.ReportCapacity(cctx2, w.id, w.fs.Capacity()); err != nil {
		w.log.Warn("report capacity failed", "err", err)
	}
	return nil
}

// notifyKeyBytes caps the key bytes of one NotifyOffloadSuccess.
const notifyKeyBytes = 1 << 20

// rescan advertises every stored object to the master, in ScanMeta
// batches. Only one rescan runs at a time; a concurrent call returns nil.
func (w *Owner) rescan(ctx context.Context) error {
	if !w.scanning.CompareAndSwap(false, true) {
		return nil
	}
	defer w.scanning.Store(false)
	start := time.Now()
	n := 0
	err := w.fs.ScanMeta(ctx, func(batch []filestorage.KeyMeta) error {
		objs := make([]Object, 0, len(batch))
		for _, km := range batch {
			tenant, key, err := filestorage.SplitStorageKey(km.StorageKey)
			if err != nil {
				continue
			}
			objs = append(objs, Object{Tenant: tenant, Key: key, Size: km.Size})
		}
		// Keep each notify well inside gRPC's 4 MiB message limit.
		for len(objs) > 0 {
			k, kb := 0, 0
			for k < len(objs) && (k == 0 || kb+len(objs[k].Key) <= notifyKeyBytes) {
				kb += len(objs[k].Key)
				k++
			}
			cctx, cancel := w.rpcCtx(ctx)
			err := w.master.NotifySuccess(cctx, w.id, objs[:k])
			cancel()
			if err != nil {
				return fmt.Errorf("%w: notify %d scanned objects: %w", ErrMaster, k, err)
			}
			n += k
			objs = objs[k:]
		}
		return nil
	})
	w.scanFailed.Store(err != nil)
	if err != nil {
		w.log.Warn("rescan failed; retrying at the next heartbeat", "err", err, "advertised", n)
		return err
	}
	w.log.Info("stored objects advertised", "objects", n, "took", time.Since(start))
	return nil
}

// liveness pings the master; on "not mounted" it mounts again and rescans
// in the background. It also reports capacity and retries a failed rescan
// every heartbeat interval.
func (w *Owner) liveness() {
	defer w.wg.Done()
	t := time.NewTicker(w.pingEvery)
	defer t.Stop()
	hb := max(w.cfg.HeartbeatInterval, w.pingEvery)
	lastHB := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-w.stop
		cancel()
	}()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
		}
		if w.draining.Load() {
			continue
		}
		cctx, ccancel := w.rpcCtx(ctx)
		mounted, err := w.master.Ping(cctx, w.id)
		ccancel()
		w.m.pings.Inc()
		if err != nil {
			w.m.pingFailures.Inc()
			w.log.Warn("master ping failed", "err", err)
			continue
		}
		if !mounted && !w.draining.Load() {
			w.mounted.Store(false)
			w.log.Warn("master does not know this owner (restart or expiry); mounting again")
			if err := w.mount(ctx); err != nil {
				w.log.Warn("re-mount failed", "err", err)
				continue
			}
			w.m.remounts.Inc()
			t.Reset(w.pingEvery) // the new master may have another TTL
			w.goRescan(ctx)
			continue
		}
		w.mounted.Store(true)
		if time.Since(lastHB) >= hb {
			lastHB = time.Now()
			if w.scanFailed.Load() {
				w.goRescan(ctx)
			}
		}
	}
}

func (w *Owner) goRescan(ctx context.Context) {
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		_ = w.rescan(ctx)
	}()
}

func (w *Owner) onExpire(id uint64, bytes uint64) {
	w.m.expirations.Inc()
	w.mu.Lock()
	delete(w.puts, id)
	w.mu.Unlock()
	w.log.Debug("staging lease expired", "batch", id, "bytes", bytes)
}

// Close shuts the owner down: it unmounts at the master (so requesters
// stop being sent here), stops the RPC service after in-flight calls end
// (bounded by ctx), stops the liveness loop, unregisters and unmaps the
// staging arena and closes the storage. It is idempotent; later calls
// return the first call's result.
func (w *Owner) Close(ctx context.Context) error {
	w.closeOnce.Do(func() {
		w.draining.Store(true)
		cctx, cancel := w.rpcCtx(ctx)
		if err := w.master.Unmount(cctx, w.id); err != nil {
			w.log.Warn("unmount at master failed; the master drops this owner after its TTL", "err", err)
		}
		cancel()
		w.stopServer(ctx)
		w.closeErr = w.teardown()
		w.log.Info("offload owner stopped")
	})
	return w.closeErr
}

// Abort stops the owner at once without unmounting, as a crash would:
// RPCs in flight are cancelled and the master keeps advertising the owner
// until its client TTL runs out. It is meant for fault drills and tests;
// use Close for a shutdown. Abort and Close share their once-only
// behaviour: whichever runs first decides.
func (w *Owner) Abort() error {
	w.closeOnce.Do(func() {
		w.draining.Store(true)
		w.closeErr = w.teardown()
		w.log.Warn("offload owner aborted without unmounting")
	})
	return w.closeErr
}

// teardown releases everything New acquired, in reverse order.
func (w *Owner) teardown() error {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	if w.srv != nil {
		w.srv.Stop()
	}
	if w.lis != nil {
		w.lis.Close()
	}
	w.wg.Wait()
	var errs []error
	if w.arena != nil {
		if err := w.eng.UnregisterMemory(w.arena.Bytes()); err != nil {
			errs = append(errs, fmt.Errorf("unregister staging arena: %w", err))
		}
		if err := w.arena.ForceClose(); err != nil {
			errs = append(errs, fmt.Errorf("close staging arena: %w", err))
		}
	}
	if w.fs != nil {
		if err := w.fs.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
