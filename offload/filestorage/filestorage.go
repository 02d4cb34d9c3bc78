package filestorage

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ferrylabs/ferry/offload/config"
)

// Options configure New.
type Options struct {
	// Config is the offload configuration (storage path, backend, prefix,
	// health check, limits).
	Config config.Config
	// Store, when set, is used instead of the backend the configuration
	// selects (the path is still validated). FileStorage closes it.
	Store Store
	// OpenObjectStore builds the oss or s3 adapter for object-storage
	// mode. Nil uses DefaultObjectStore.
	OpenObjectStore func(ctx context.Context, p ObjectStoreParams) (Store, error)
	// Lookup reads the object store's environment variables; nil means
	// the process environment.
	Lookup func(string) (string, bool)
	// Logger receives warnings; nil uses slog.Default().
	Logger *slog.Logger
	// Registerer receives the metrics; nil registers nothing.
	Registerer prometheus.Registerer
}

// KeyMeta is one stored object as ScanMeta reports it.
type KeyMeta struct {
	// StorageKey is tenant + NUL + key.
	StorageKey []byte
	// Size is the object's size in bytes.
	Size int64
}

// FileStorage is the owner's storage layer. It is safe for concurrent
// use.
type FileStorage struct {
	store        Store
	kind         string
	capacity     int64
	scanKeys     int
	log          *slog.Logger
	closed       atomic.Bool
	loadBytes    prometheus.Counter
	loadOps      prometheus.Counter
	offloadBytes prometheus.Counter
	offloadOps   prometheus.Counter
	failures     *prometheus.CounterVec
}

// New validates the storage path, opens the configured backend and, when
// MOONCAKE_DISTRIBUTED_HEALTH_CHECK is on, probes it. Any failure is
// returned and nothing stays open.
func New(ctx context.Context, o Options) (*FileStorage, error) {
	c := o.Config
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	if err := ValidatePath(c.FileStoragePath); err != nil {
		if o.Store != nil {
			o.Store.Close()
		}
		return nil, err
	}
	fs := &FileStorage{store: o.Store, kind: "custom", capacity: c.TotalSizeLimit, scanKeys: max(1, c.ScanMetaKeys), log: log}
	if fs.store == nil {
		st, kind, err := openBackend(ctx, o, log)
		if err != nil {
			return nil, err
		}
		fs.store, fs.kind = st, kind
	}
	if c.HealthCheck {
		if err := fs.store.CheckHealth(ctx); err != nil {
			fs.store.Close()
			return nil, fmt.Errorf("%w (%s backend, MOONCAKE_DISTRIBUTED_HEALTH_CHECK=true): %w", ErrHealthCheck, fs.kind, err)
		}
	}
	fs.initMetrics(o.Registerer)
	return fs, nil
}

func openBackend(ctx context.Context, o Options, log *slog.Logger) (Store, string, error) {
	c := o.Config
	switch c.BackendDescriptor {
	case config.BackendDistributed:
		switch c.FSAdapter {
		case "oss", "s3":
			open := o.OpenObjectStore
			if open == nil {
				open = DefaultObjectStore
			}
			prefix := c.OwnerPrefix()
			st, err := open(ctx, ObjectStoreParams{Kind: c.FSAdapter, Prefix: prefix, Lookup: o.Lookup, Logger: log, Registerer: o.Registerer})
			if err != nil {
				return nil, "", fmt.Errorf("open %s object store (prefix %q): %w", c.FSAdapter, prefix, err)
			}
			return st, c.FSAdapter, nil
		case "posix":
			st, err := NewPosix(c.RootDir)
			return st, "posix", err
		default:
			return nil, "", fmt.Errorf("%w: distributed adapter %q (MOONCAKE_DFS_FS_ADAPTER / MOONCAKE_DISTRIBUTED_FS_TYPE); Ferry supports oss, s3 and posix", ErrNotSupported, c.FSAdapter)
		}
	case config.BackendFilePerKey:
		st, err := NewPosix(filepath.Join(c.FileStoragePath, c.FSDir))
		return st, "posix", err
	case config.BackendBucket, config.BackendOffset, config.BackendNvmeKV:
		log.Warn("storage backend not implemented by Ferry; using the file-per-key posix backend", "descriptor", c.BackendDescriptor)
		st, err := NewPosix(filepath.Join(c.FileStoragePath, c.FSDir))
		return st, "posix", err
	default:
		log.Error("unknown MOONCAKE_OFFLOAD_STORAGE_BACKEND_DESCRIPTOR; using the file-per-key posix backend", "descriptor", c.BackendDescriptor)
		st, err := NewPosix(filepath.Join(c.FileStoragePath, c.FSDir))
		return st, "posix", err
	}
}

func (f *FileStorage) initMetrics(reg prometheus.Registerer) {
	f.loadBytes = prometheus.NewCounter(prometheus.CounterOpts{Name: "ferry_filestorage_load_bytes_total", Help: "Bytes loaded from the storage backend into staging."})
	f.loadOps = prometheus.NewCounter(prometheus.CounterOpts{Name: "ferry_filestorage_load_objects_total", Help: "Objects loaded from the storage backend."})
	f.offloadBytes = prometheus.NewCounter(prometheus.CounterOpts{Name: "ferry_filestorage_offload_bytes_total", Help: "Bytes written to the storage backend."})
	f.offloadOps = prometheus.NewCounter(prometheus.CounterOpts{Name: "ferry_filestorage_offload_objects_total", Help: "Objects written to the storage backend."})
	f.failures = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ferry_filestorage_failures_total", Help: "Failed storage operations by operation."}, []string{"op"})
	if reg != nil {
		for _, c := range []prometheus.Collector{f.loadBytes, f.loadOps, f.offloadBytes, f.offloadOps, f.failures} {
			if err := reg.Register(c); err != nil {
				f.log.Warn("filestorage metric not registered", "err", err)
			}
		}
	}
}

// Kind names the backend in use: "oss", "s3", "posix" or "custom".
func (f *FileStorage) Kind() string { return f.kind }

// Capacity is the byte figure reported to the master
// (MOONCAKE_OFFLOAD_TOTAL_SIZE_LIMIT_BYTES), a configured value.
func (f *FileStorage) Capacity() int64 { return f.capacity }

// BatchLoad reads each object keys[i] into bufs[i], whose length is the
// object's size. It is all-or-nothing: it returns the first failure (in
// input order), and then no buffer's content is trustworthy. bufs
// belong to the caller (typically staging slots); they are written only
// inside their bounds and not retained.
func (f *FileStorage) BatchLoad(ctx context.Context, keys [][]byte, bufs [][]byte) error {
	if f.closed.Load() {
		return ErrClosed
	}
	if len(keys) != len(bufs) {
		return fmt.Errorf("%w: %d keys but %d buffers", ErrInvalidArgument, len(keys), len(bufs))
	}
	items := make([]GetItem, len(keys))
	var total int
	for i := range keys {
		items[i] = GetItem{Key: keys[i], Buf: bufs[i]}
		total += len(bufs[i])
	}
	for _, err := range f.store.GetBatch(ctx, items) {
		if err != nil {
			f.failures.WithLabelValues("load").Inc()
			return err
		}
	}
	f.loadOps.Add(float64(len(keys)))
	f.loadBytes.Add(float64(total))
	return nil
}

// BatchOffload stores each object keys[i] as the concatenation of
// srcs[i]. It returns one error per key (nil on success); a batch is not
// a transaction. srcs are only read and not retained.
func (f *FileStorage) BatchOffload(ctx context.Context, keys [][]byte, srcs [][][]byte) []error {
	errs := make([]error, len(keys))
	if f.closed.Load() {
		for i := range errs {
			errs[i] = ErrClosed
		}
		return errs
	}
	if len(keys) != len(srcs) {
		for i := range errs {
			errs[i] = fmt.Errorf("%w: %d keys but %d sources", ErrInvalidArgument, len(keys), len(srcs))
		}
		return errs
	}
	items := make([]PutItem, len(keys))
	for i := range keys {
		items[i] = PutItem{Key: keys[i], Bufs: srcs[i]}
	}
	res := f.store.PutBatch(ctx, items)
	for i, err := range res {
		if err != nil {
			f.failures.WithLabelValues("offload").Inc()
			errs[i] = err
			continue
		}
		f.offloadOps.Inc()
		for _, b := range srcs[i] {
			f.offloadBytes.Add(float64(len(b)))
		}
	}
	return errs
}

// ScanMeta lists every stored object and hands them to fn in batches of
// at most MOONCAKE_OFFLOAD_SCANMETA_ITERATOR_KEYS_LIMIT. Keys that are
// not storage keys (no tenant separator, e.g. health probes) are
// skipped. An error from fn stops the scan and is returned.
func (f *FileStorage) ScanMeta(ctx context.Context, fn func([]KeyMeta) error) error {
	if f.closed.Load() {
		return ErrClosed
	}
	keys, err := f.store.ListKeys(ctx)
	if err != nil {
		f.failures.WithLabelValues("scan").Inc()
		return err
	}
	batch := make([]KeyMeta, 0, min(len(keys), f.scanKeys))
	for _, k := range keys {
		if _, _, err := SplitStorageKey(k.Key); err != nil {
			continue
		}
		batch = append(batch, KeyMeta{StorageKey: k.Key, Size: k.Size})
		if len(batch) == f.scanKeys {
			if err := fn(batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		return fn(batch)
	}
	return nil
}

// Close closes the backend. It is idempotent.
func (f *FileStorage) Close() error {
	if f.closed.Swap(true) {
		return nil
	}
	return f.store.Close()
}
