package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/ferrylabs/ferry/offload/client"
	"github.com/ferrylabs/ferry/offload/config"
	"github.com/ferrylabs/ferry/offload/owner"
)

func init() { subcommands = append(subcommands, newOwnerCmd) }

type ownerFlags struct {
	offloadFlags
	listen, advertise      string
	storagePath, backend   string
	fsType, rootDir        string
	stagingBytes, capacity int64
	leaseMS, heartbeatSec  int
	healthCheck, unlocked  bool
	metricsAddr            string
	drain                  time.Duration
}

func newOwnerCmd() *cobra.Command {
	f := &ownerFlags{}
	cmd := &cobra.Command{
		Use:   "owner",
		Short: "Run an offload owner: serve objects kept in OSS/S3 through pinned staging memory",
		Long: `owner keeps objects in object storage (OSS or S3) or a local directory and
serves them to requesters: it loads requested objects straight into pinned
staging memory registered with its transfer engine, and the requester reads
them over RDMA or TCP. It also stores new objects (ferry put).

At start it checks MOONCAKE_OFFLOAD_FILE_STORAGE_PATH (an existing, absolute,
writable directory, not a symlink, even for object storage), opens the
backend, mounts at the master and advertises every object already stored
under its prefix, so a restarted owner serves its objects again. It pings the
master every second and mounts again (and rescans) when the master restarted.

Configuration comes from the MOONCAKE_* / MC_* variables (or the JSON file at
MOONCAKE_CONFIG_PATH); each flag overrides its variable. Object-store
credentials come only from MOONCAKE_S3_* / AWS_* or MOONCAKE_OSS_* variables.
SIGINT or SIGTERM unmounts at the master (which stops advertising the owner at
once), lets RPCs in flight finish (up to --drain), and exits.`,
		Example: `  # Objects in S3 under the prefix "owner-a", master on 10.0.0.1
  export MOONCAKE_S3_ENDPOINT=https://s3.us-east-1.amazonaws.com MOONCAKE_S3_BUCKET=kv
  export AWS_ACCESS_KEY_ID=... AWS_SECRET_ACCESS_KEY=...
  ferry owner --master 10.0.0.1:50051 --fs-type s3 --root-dir owner-a \
      --storage-path /var/lib/ferry --hostname 10.0.0.7

  # A local SSD directory, 256 MiB of staging, metrics on :9310
  ferry owner --master 10.0.0.1:50051 --backend file_per_key_storage_backend \
      --storage-path /mnt/nvme/ferry --staging-bytes 268435456 --metrics-addr :9310`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runOwner(cmd, f) },
	}
	fl := cmd.Flags()
	f.register(fl)
	fl.StringVar(&f.listen, "listen", "", "owner RPC listen address (default: --hostname on a free port)")
	fl.StringVar(&f.advertise, "advertise", "", "owner RPC endpoint given to the master (default: --hostname and the listen port)")
	fl.StringVar(&f.storagePath, "storage-path", "", "local storage directory (MOONCAKE_OFFLOAD_FILE_STORAGE_PATH)")
	fl.StringVar(&f.backend, "backend", "", "storage backend descriptor (MOONCAKE_OFFLOAD_STORAGE_BACKEND_DESCRIPTOR); --fs-type oss|s3 implies distributed_storage_backend")
	fl.StringVar(&f.fsType, "fs-type", "", "distributed adapter: oss, s3 or posix (MOONCAKE_DISTRIBUTED_FS_TYPE)")
	fl.StringVar(&f.rootDir, "root-dir", "", "owner key prefix in the bucket, or the posix directory (MOONCAKE_DISTRIBUTED_ROOT_DIR)")
	fl.Int64Var(&f.stagingBytes, "staging-bytes", 0, "staging arena size, also the largest object (MOONCAKE_OFFLOAD_LOCAL_BUFFER_SIZE_BYTES)")
	fl.Int64Var(&f.capacity, "capacity-bytes", 0, "capacity reported to the master (MOONCAKE_OFFLOAD_TOTAL_SIZE_LIMIT_BYTES)")
	fl.IntVar(&f.leaseMS, "lease-ms", 0, "staging lease given to requesters (MOONCAKE_OFFLOAD_CLIENT_BUFFER_GC_TTL_MS)")
	fl.IntVar(&f.heartbeatSec, "heartbeat-seconds", 0, "rescan-retry period (MOONCAKE_OFFLOAD_HEARTBEAT_INTERVAL_SECONDS)")
	fl.BoolVar(&f.healthCheck, "health-check", false, "probe the object store (PUT, GET, DELETE) at start (MOONCAKE_DISTRIBUTED_HEALTH_CHECK)")
	fl.BoolVar(&f.unlocked, "unlocked-staging", false, "do not mlock the staging arena (small test setups; RDMA needs pinned memory)")
	fl.StringVar(&f.metricsAddr, "metrics-addr", "", "serve Prometheus /metrics on this address")
	fl.DurationVar(&f.drain, "drain", 10*time.Second, "how long RPCs in flight may run after SIGINT/SIGTERM")
	return cmd
}

func (f *ownerFlags) config(cmd *cobra.Command) (config.Config, error) {
	c, err := f.load(cmd)
	if err != nil {
		return c, err
	}
	fl := cmd.Flags()
	if fl.Changed("storage-path") {
		c.FileStoragePath = f.storagePath
	}
	if fl.Changed("fs-type") {
		c.FSAdapter = f.fsType
		if !fl.Changed("backend") {
			c.BackendDescriptor = config.BackendDistributed
		}
	}
	if fl.Changed("backend") {
		c.BackendDescriptor = f.backend
	}
	if fl.Changed("root-dir") {
		c.RootDir = f.rootDir
	}
	if fl.Changed("health-check") {
		c.HealthCheck = f.healthCheck
	}
	checks := []struct {
		name string
		v    int64
		set  func(int64)
	}{
		{"staging-bytes", f.stagingBytes, func(v int64) { c.StagingSize = v }},
		{"capacity-bytes", f.capacity, func(v int64) { c.TotalSizeLimit = v }},
		{"lease-ms", int64(f.leaseMS), func(v int64) { c.GCTTL = time.Duration(v) * time.Millisecond }},
		{"heartbeat-seconds", int64(f.heartbeatSec), func(v int64) { c.HeartbeatInterval = time.Duration(v) * time.Second }},
	}
	for _, ch := range checks {
		if !fl.Changed(ch.name) {
			continue
		}
		if ch.v <= 0 {
			return c, usageError{fmt.Errorf("--%s %d: want a positive number", ch.name, ch.v)}
		}
		ch.set(ch.v)
	}
	return c, nil
}

func runOwner(cmd *cobra.Command, f *ownerFlags) error {
	c, err := f.config(cmd)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(cmdContext(cmd), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	eng, err := newEngine(c, false)
	if err != nil {
		return fmt.Errorf("start transfer engine: %w", err)
	}
	defer eng.Close()
	conn, closer, err := client.DialMaster(c.MasterAddress, c)
	if err != nil {
		return fmt.Errorf("master %s: %w", c.MasterAddress, err)
	}
	defer closer.Close()

	startCtx, cancel := context.WithTimeout(ctx, c.RPCTimeout+time.Minute)
	w, err := owner.New(startCtx, owner.Options{Config: c, Engine: eng, Master: owner.NewMasterClient(conn),
		ListenAddr: f.listen, AdvertiseAddr: f.advertise, UnlockedStaging: f.unlocked,
		Logger: slog.Default(), Registerer: reg})
	cancel()
	if err != nil {
		return fmt.Errorf("owner refused to start: %w", err)
	}
	var msrv *http.Server
	if f.metricsAddr != "" {
		lis, err := net.Listen("tcp", f.metricsAddr)
		if err != nil {
			w.Close(context.Background())
			return fmt.Errorf("--metrics-addr %s: %w", f.metricsAddr, err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		msrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := msrv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
				slog.Error("metrics server stopped", "err", err)
			}
		}()
		fmt.Fprintf(cmd.OutOrStdout(), "metrics on http://%s/metrics\n", lis.Addr())
	}
	fmt.Fprintf(cmd.OutOrStdout(), "owner %s serving on %s (segment %s)\n", w.ID(), w.Endpoint(), w.SegmentName())
	<-ctx.Done()
	fmt.Fprintln(cmd.ErrOrStderr(), "ferry owner: unmounting and shutting down")
	dctx, dcancel := context.WithTimeout(context.Background(), f.drain)
	defer dcancel()
	if msrv != nil {
		msrv.Shutdown(dctx)
	}
	return w.Close(dctx)
}
