package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ErrConfigFile means the JSON file named by MOONCAKE_CONFIG_PATH could
// not be read or parsed.
var ErrConfigFile = errors.New("offload config file")

// Backend descriptors (MOONCAKE_OFFLOAD_STORAGE_BACKEND_DESCRIPTOR).
const (
	BackendBucket      = "bucket_storage_backend"
	BackendFilePerKey  = "file_per_key_storage_backend"
	BackendOffset      = "offset_allocator_storage_backend"
	BackendNvmeKV      = "nvme_kv_storage_backend"
	BackendDistributed = "distributed_storage_backend"
)

// Defaults, as in Mooncake.
const (
	DefaultFileStoragePath   = "/data/file_storage"
	DefaultLocalBufferSize   = 1280 << 20
	DefaultScanMetaKeys      = 20000
	DefaultTotalKeysLimit    = 10_000_000
	DefaultTotalSizeLimit    = 2 << 40
	DefaultHeartbeatInterval = 10 * time.Second
	DefaultGCInterval        = time.Second
	DefaultGCTTL             = 5000 * time.Millisecond
	DefaultRootDir           = "/mnt/3fs/mooncake"
	DefaultFSAdapter         = "hf3fs"
	DefaultFSDir             = "file_per_key_dir"
	DefaultTenant            = "default"
	DefaultProtocol          = "tcp"
	DefaultMetadataServer    = "P2PHANDSHAKE"
	DefaultLocalHostname     = "localhost"
	// DefaultRPCConnectTimeout is coro_rpc's connect timeout.
	DefaultRPCConnectTimeout = 30 * time.Second
	// DefaultRPCTimeout bounds a whole RPC when MC_RPC_TIMEOUT_MS is unset.
	DefaultRPCTimeout = 30 * time.Second
)

// Config is the offload services' configuration. The zero value is not
// useful; call Load or Default.
type Config struct {
	// MasterAddress is the master's host:port (MOONCAKE_MASTER,
	// JSON master_server_address).
	MasterAddress string
	// Protocol is the engine protocol, lower-cased (MOONCAKE_PROTOCOL).
	Protocol string
	// MetadataServer is the engine metadata mode (MOONCAKE_TE_META_DATA_SERVER).
	MetadataServer string
	// LocalHostname is the address advertised to peers (MOONCAKE_LOCAL_HOSTNAME).
	LocalHostname string
	// DeviceName is the RDMA device filter (MOONCAKE_DEVICE).
	DeviceName string
	// LocalBufferSize is the requester's registered buffer size
	// (MOONCAKE_LOCAL_BUFFER_SIZE, 1 GiB).
	LocalBufferSize int64
	// TenantID scopes keys (MOONCAKE_TENANT_ID).
	TenantID string

	// RPCTimeout bounds every master and owner RPC (MC_RPC_TIMEOUT_MS).
	RPCTimeout time.Duration
	// RPCConnectTimeout bounds connection set-up (MC_RPC_CONNECT_TIMEOUT_MS).
	RPCConnectTimeout time.Duration

	// FileStoragePath is the owner's local directory
	// (MOONCAKE_OFFLOAD_FILE_STORAGE_PATH); validated even for object storage.
	FileStoragePath string
	// BackendDescriptor selects the storage backend.
	BackendDescriptor string
	// FSAdapter is the distributed backend's adapter: oss, s3, posix, hf3fs
	// (MOONCAKE_DFS_FS_ADAPTER, else MOONCAKE_DISTRIBUTED_FS_TYPE).
	FSAdapter string
	// RootDir is the owner's key prefix for object storage, or the shared
	// directory for posix (MOONCAKE_DFS_ROOT_DIR, else
	// MOONCAKE_DISTRIBUTED_ROOT_DIR), made absolute.
	RootDir string
	// FSDir is the file-per-key subdirectory (MOONCAKE_OFFLOAD_FSDIR).
	FSDir string
	// HealthCheck runs the object store's probe at init
	// (MOONCAKE_DISTRIBUTED_HEALTH_CHECK).
	HealthCheck bool
	// StagingSize is the owner's staging arena size and the largest single
	// object (MOONCAKE_OFFLOAD_LOCAL_BUFFER_SIZE_BYTES).
	StagingSize int64
	// ScanMetaKeys is the number of keys per ScanMeta batch.
	ScanMetaKeys int
	// TotalKeysLimit is the admission key limit.
	TotalKeysLimit int64
	// TotalSizeLimit is the capacity reported to the master.
	TotalSizeLimit int64
	// HeartbeatInterval is the owner's ping period.
	HeartbeatInterval time.Duration
	// GCInterval is the staging lease sweep period.
	GCInterval time.Duration
	// GCTTL is the staging lease handed to requesters.
	GCTTL time.Duration

	// Warnings lists, in order, every invalid value that was replaced by
	// its default.
	Warnings []string
}

// Default returns the built-in defaults.
func Default() Config {
	c, _ := LoadFrom(func(string) (string, bool) { return "", false })
	return c
}

// Load reads the process environment and the JSON file at
// MOONCAKE_CONFIG_PATH, if set.
func Load() (Config, error) { return LoadFrom(os.LookupEnv) }

// LoadFrom is Load with a custom environment lookup.
func LoadFrom(lookup LookupFunc) (Config, error) {
	r := &reader{lookup: lookup}
	c := Config{
		MasterAddress:  r.str("", "MOONCAKE_MASTER"),
		Protocol:       strings.ToLower(r.str(DefaultProtocol, "MOONCAKE_PROTOCOL")),
		MetadataServer: r.str(DefaultMetadataServer, "MOONCAKE_TE_META_DATA_SERVER"),
		LocalHostname:  r.str(DefaultLocalHostname, "MOONCAKE_LOCAL_HOSTNAME"),
		DeviceName:     r.str("", "MOONCAKE_DEVICE"),
		TenantID:       r.str(DefaultTenant, "MOONCAKE_TENANT_ID"),
	}
	c.LocalBufferSize = r.int64In(1<<30, 0, math.MaxInt64, "MOONCAKE_LOCAL_BUFFER_SIZE")
	c.RPCTimeout = time.Duration(r.int64In(DefaultRPCTimeout.Milliseconds(), 1, math.MaxInt32, "MC_RPC_TIMEOUT_MS")) * time.Millisecond
	c.RPCConnectTimeout = time.Duration(r.int64In(DefaultRPCConnectTimeout.Milliseconds(), 1, math.MaxInt32, "MC_RPC_CONNECT_TIMEOUT_MS")) * time.Millisecond

	c.FileStoragePath = r.str(DefaultFileStoragePath, "MOONCAKE_OFFLOAD_FILE_STORAGE_PATH")
	c.BackendDescriptor = r.str(BackendBucket, "MOONCAKE_OFFLOAD_STORAGE_BACKEND_DESCRIPTOR")
	c.FSAdapter = r.str(DefaultFSAdapter, "MOONCAKE_DFS_FS_ADAPTER", "MOONCAKE_DISTRIBUTED_FS_TYPE")
	c.RootDir = r.str(DefaultRootDir, "MOONCAKE_DFS_ROOT_DIR", "MOONCAKE_DISTRIBUTED_ROOT_DIR")
	c.FSDir = r.str(DefaultFSDir, "MOONCAKE_OFFLOAD_FSDIR")
	c.HealthCheck = r.boolean(false, "MOONCAKE_DISTRIBUTED_HEALTH_CHECK")
	c.StagingSize = r.int64In(DefaultLocalBufferSize, 1, math.MaxInt64, "MOONCAKE_OFFLOAD_LOCAL_BUFFER_SIZE_BYTES")
	c.ScanMetaKeys = int(r.int64In(DefaultScanMetaKeys, 1, math.MaxInt32, "MOONCAKE_OFFLOAD_SCANMETA_ITERATOR_KEYS_LIMIT", "MOONCAKE_SCANMETA_ITERATOR_KEYS_LIMIT"))
	c.TotalKeysLimit = r.int64In(DefaultTotalKeysLimit, 1, math.MaxInt64, "MOONCAKE_OFFLOAD_TOTAL_KEYS_LIMIT")
	c.TotalSizeLimit = r.int64In(DefaultTotalSizeLimit, 1, math.MaxInt64, "MOONCAKE_OFFLOAD_TOTAL_SIZE_LIMIT_BYTES")
	c.HeartbeatInterval = time.Duration(r.int64In(int64(DefaultHeartbeatInterval/time.Second), 1, 86400, "MOONCAKE_OFFLOAD_HEARTBEAT_INTERVAL_SECONDS")) * time.Second
	c.GCInterval = time.Duration(r.int64In(int64(DefaultGCInterval/time.Second), 1, 86400, "MOONCAKE_OFFLOAD_CLIENT_BUFFER_GC_INTERVAL_SECONDS")) * time.Second
	c.GCTTL = time.Duration(r.int64In(DefaultGCTTL.Milliseconds(), 1, math.MaxInt32, "MOONCAKE_OFFLOAD_CLIENT_BUFFER_GC_TTL_MS")) * time.Millisecond

	if c.RootDir != "" && !filepath.IsAbs(c.RootDir) {
		if abs, err := filepath.Abs(c.RootDir); err == nil {
			c.RootDir = abs
		}
	}
	if path, ok := lookup("MOONCAKE_CONFIG_PATH"); ok && path != "" {
		if err := c.applyFile(path); err != nil {
			c.Warnings = r.warnings
			return c, err
		}
	}
	c.Warnings = r.warnings
	return c, nil
}

// fileConfig is the JSON file: Mooncake's launcher fields plus Ferry's
// offload fields. Absent fields keep the environment's value.
type fileConfig struct {
	LocalHostname       *string         `json:"local_hostname"`
	MetadataServer      *string         `json:"metadata_server"`
	GlobalSegmentSize   json.RawMessage `json:"global_segment_size"`
	LocalBufferSize     json.RawMessage `json:"local_buffer_size"`
	Protocol            *string         `json:"protocol"`
	DeviceName          *string         `json:"device_name"`
	MasterServerAddress *string         `json:"master_server_address"`
	TenantID            *string         `json:"tenant_id"`
	RPCTimeoutMS        *int64          `json:"rpc_timeout_ms"`
	RPCConnectTimeoutMS *int64          `json:"rpc_connect_timeout_ms"`
	FileStoragePath     *string         `json:"offload_file_storage_path"`
	BackendDescriptor   *string         `json:"offload_storage_backend_descriptor"`
	FSAdapter           *string         `json:"distributed_fs_type"`
	RootDir             *string         `json:"distributed_root_dir"`
	HealthCheck         *bool           `json:"distributed_health_check"`
	StagingSize         *int64          `json:"offload_local_buffer_size_bytes"`
	TotalSizeLimit      *int64          `json:"offload_total_size_limit_bytes"`
	HeartbeatSeconds    *int64          `json:"offload_heartbeat_interval_seconds"`
	GCTTLMS             *int64          `json:"offload_client_buffer_gc_ttl_ms"`
}

func (c *Config) applyFile(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("%w: MOONCAKE_CONFIG_PATH=%s: %w", ErrConfigFile, path, err)
	}
	var f fileConfig
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("%w: MOONCAKE_CONFIG_PATH=%s: invalid JSON: %w", ErrConfigFile, path, err)
	}
	setStr := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	setStr(&c.LocalHostname, f.LocalHostname)
	setStr(&c.MetadataServer, f.MetadataServer)
	setStr(&c.DeviceName, f.DeviceName)
	setStr(&c.MasterAddress, f.MasterServerAddress)
	setStr(&c.TenantID, f.TenantID)
	setStr(&c.FileStoragePath, f.FileStoragePath)
	setStr(&c.BackendDescriptor, f.BackendDescriptor)
	setStr(&c.FSAdapter, f.FSAdapter)
	setStr(&c.RootDir, f.RootDir)
	if f.Protocol != nil {
		c.Protocol = strings.ToLower(*f.Protocol)
	}
	if f.HealthCheck != nil {
		c.HealthCheck = *f.HealthCheck
	}
	if len(f.LocalBufferSize) > 0 {
		n, err := parseSize(f.LocalBufferSize)
		if err != nil {
			return fmt.Errorf("%w: %s: local_buffer_size: %w", ErrConfigFile, path, err)
		}
		c.LocalBufferSize = n
	}
	pos := func(name string, v *int64, apply func(int64)) error {
		if v == nil {
			return nil
		}
		if *v <= 0 {
			return fmt.Errorf("%w: %s: %s must be > 0, got %d", ErrConfigFile, path, name, *v)
		}
		apply(*v)
		return nil
	}
	for _, e := range []error{
		pos("rpc_timeout_ms", f.RPCTimeoutMS, func(v int64) { c.RPCTimeout = time.Duration(v) * time.Millisecond }),
		pos("rpc_connect_timeout_ms", f.RPCConnectTimeoutMS, func(v int64) { c.RPCConnectTimeout = time.Duration(v) * time.Millisecond }),
		pos("offload_local_buffer_size_bytes", f.StagingSize, func(v int64) { c.StagingSize = v }),
		pos("offload_total_size_limit_bytes", f.TotalSizeLimit, func(v int64) { c.TotalSizeLimit = v }),
		pos("offload_heartbeat_interval_seconds", f.HeartbeatSeconds, func(v int64) { c.HeartbeatInterval = time.Duration(v) * time.Second }),
		pos("offload_client_buffer_gc_ttl_ms", f.GCTTLMS, func(v int64) { c.GCTTL = time.Duration(v) * time.Millisecond }),
	} {
		if e != nil {
			return e
		}
	}
	return nil
}

// parseSize accepts a JSON number or a string such as "4gb" (GiB units),
// like Mooncake's launcher.
func parseSize(raw json.RawMessage) (int64, error) {
	var n int64
	if err := json.Unmarshal(raw, &n); err == nil {
		if n < 0 {
			return 0, fmt.Errorf("negative size %d", n)
		}
		return n, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return 0, fmt.Errorf("want a number or a string like \"4gb\", got %s", raw)
	}
	t := strings.ToLower(strings.TrimSpace(s))
	mult := int64(1)
	if strings.HasSuffix(t, "gb") {
		t = strings.TrimSpace(t[:len(t)-2])
		mult = 1 << 30
	}
	v, err := strconv.ParseInt(t, 10, 64)
	if err != nil || v < 0 || v > math.MaxInt64/mult {
		return 0, fmt.Errorf("invalid size %q", s)
	}
	return v * mult, nil
}

// ObjectStorage reports whether the configuration selects object storage
// (the distributed backend with the oss or s3 adapter).
func (c *Config) ObjectStorage() bool {
	return c.BackendDescriptor == BackendDistributed && (c.FSAdapter == "oss" || c.FSAdapter == "s3")
}

// OwnerPrefix is the object-storage key prefix: RootDir with every
// leading and trailing slash removed.
func (c *Config) OwnerPrefix() string { return strings.Trim(c.RootDir, "/") }
