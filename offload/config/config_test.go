package config

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func env(m map[string]string) LookupFunc {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestDefaults(t *testing.T) {
	c := Default()
	if c.StagingSize != 1342177280 || c.TotalSizeLimit != 2199023255552 || c.ScanMetaKeys != 20000 ||
		c.HeartbeatInterval != 10*time.Second || c.GCTTL != 5*time.Second || c.FileStoragePath != "/data/file_storage" ||
		c.BackendDescriptor != BackendBucket || c.FSAdapter != "hf3fs" || c.TenantID != "default" || c.Protocol != "tcp" {
		t.Fatalf("defaults: %+v", c)
	}
	if len(c.Warnings) != 0 {
		t.Fatalf("warnings on defaults: %v", c.Warnings)
	}
}

func TestEnvParsingAndWarnings(t *testing.T) {
	c, err := LoadFrom(env(map[string]string{
		"MOONCAKE_OFFLOAD_HEARTBEAT_INTERVAL_SECONDS": " +3 ",
		"MOONCAKE_OFFLOAD_LOCAL_BUFFER_SIZE_BYTES":    "65536bytes",
		"MOONCAKE_OFFLOAD_TOTAL_SIZE_LIMIT_BYTES":     "++5",
		"MC_RPC_TIMEOUT_MS":                           "250",
		"MOONCAKE_DISTRIBUTED_HEALTH_CHECK":           " Yes",
		"MOONCAKE_PROTOCOL":                           "TCP",
		"MOONCAKE_DISTRIBUTED_FS_TYPE":                "oss",
		"MOONCAKE_DFS_FS_ADAPTER":                     "s3",
		"MOONCAKE_DISTRIBUTED_ROOT_DIR":               "//owner-a/",
		"MOONCAKE_OFFLOAD_STORAGE_BACKEND_DESCRIPTOR": "distributed_storage_backend",
		"MOONCAKE_SCANMETA_ITERATOR_KEYS_LIMIT":       "7",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.HeartbeatInterval != 3*time.Second || c.RPCTimeout != 250*time.Millisecond || !c.HealthCheck || c.Protocol != "tcp" {
		t.Fatalf("parsed: %+v", c)
	}
	if c.FSAdapter != "s3" || !c.ObjectStorage() || c.OwnerPrefix() != "owner-a" || c.ScanMetaKeys != 7 {
		t.Fatalf("adapter/prefix: %q %q %d", c.FSAdapter, c.OwnerPrefix(), c.ScanMetaKeys)
	}
	if c.StagingSize != DefaultLocalBufferSize || c.TotalSizeLimit != DefaultTotalSizeLimit {
		t.Fatalf("invalid values not defaulted: %d %d", c.StagingSize, c.TotalSizeLimit)
	}
	want := []string{
		"invalid value '65536bytes' for env MOONCAKE_OFFLOAD_LOCAL_BUFFER_SIZE_BYTES, using default 1342177280",
		"invalid value '++5' for env MOONCAKE_OFFLOAD_TOTAL_SIZE_LIMIT_BYTES, using default 2199023255552",
	}
	if len(c.Warnings) != len(want) || c.Warnings[0] != want[0] || c.Warnings[1] != want[1] {
		t.Fatalf("warnings = %q", c.Warnings)
	}
}

func TestEmptyPrimaryWins(t *testing.T) {
	c, _ := LoadFrom(env(map[string]string{"MOONCAKE_DFS_FS_ADAPTER": "", "MOONCAKE_DISTRIBUTED_FS_TYPE": "oss"}))
	if c.FSAdapter != "" {
		t.Fatalf("adapter %q, want empty primary to win", c.FSAdapter)
	}
}

func TestJSONFileTakesPrecedence(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "mc.json")
	if err := os.WriteFile(p, []byte(`{"master_server_address":"10.0.0.1:50051","local_hostname":"node7","protocol":"RDMA",
		"local_buffer_size":"2gb","rpc_timeout_ms":900,"distributed_root_dir":"/p2"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := LoadFrom(env(map[string]string{
		"MOONCAKE_CONFIG_PATH": p, "MOONCAKE_MASTER": "127.0.0.1:1", "MOONCAKE_LOCAL_HOSTNAME": "x",
		"MC_RPC_TIMEOUT_MS": "5", "MOONCAKE_TENANT_ID": "t1",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.MasterAddress != "10.0.0.1:50051" || c.LocalHostname != "node7" || c.Protocol != "rdma" ||
		c.LocalBufferSize != 2<<30 || c.RPCTimeout != 900*time.Millisecond || c.TenantID != "t1" || c.OwnerPrefix() != "p2" {
		t.Fatalf("merged: %+v", c)
	}
}

func TestJSONFileErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"rpc_timeout_ms": -4}`), 0o600)
	garbage := filepath.Join(dir, "g.json")
	os.WriteFile(garbage, []byte(`{nope`), 0o600)
	for _, p := range []string{bad, garbage, filepath.Join(dir, "missing.json")} {
		_, err := LoadFrom(env(map[string]string{"MOONCAKE_CONFIG_PATH": p}))
		if !errors.Is(err, ErrConfigFile) {
			t.Fatalf("%s: err = %v, want ErrConfigFile", p, err)
		}
	}
}

func TestParseInt(t *testing.T) {
	for s, ok := range map[string]bool{"": false, "invalid": false, "+5": true, "-5": true, "+-5": false, "2147483647": true, "1 2": false} {
		if _, got := parseInt(s, 32); got != ok {
			t.Errorf("parseInt(%q) ok=%v, want %v", s, got, ok)
		}
	}
	if _, ok := parseInt("2147483648", 32); ok {
		t.Error("int32 overflow accepted")
	}
}
