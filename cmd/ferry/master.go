package main

import (
	"fmt"
	"net"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ferrylabs/ferry/offload/master"
)

func init() { subcommands = append(subcommands, newMasterCmd) }

// masterFlags mirror mooncake_master's flag names.
type masterFlags struct {
	rpcPort       int
	rpcAddress    string
	enableOffload bool
	clientTTL     int
	leaseTTL      string
	putTimeout    int
	metricsPort   int
	metricsHost   string
	ha            haFlags
}

func newMasterCmd() *cobra.Command {
	f := &masterFlags{}
	cmd := &cobra.Command{
		Use:   "master",
		Short: "Run the offload master: the registry of objects offload owners keep in OSS/S3",
		Long: `master runs the offload master's gRPC service (ferry.offload.v1.MasterService).

Owners mount with it, ping it (an owner silent for --client_ttl seconds is
forgotten with its replicas, and must mount again and rescan), and report the
objects they store. Requesters ask it where keys live (BatchGetReplicaList)
and where to put new ones (BatchPutStart picks the owner with the most room).

The listen address is printed on stdout once the master serves. SIGINT or
SIGTERM stops it gracefully: RPCs in flight get 5 s to finish.

With --enable_ha the master campaigns for leadership in etcd (election
prefix mooncake-store/[<cluster_id>/]master_view). Until elected it listens
but answers every RPC UNAVAILABLE; once elected it serves and publishes its
address (host of --rpc_address, or this machine's hostname when that is
0.0.0.0) under mooncake-store/[<cluster_id>/]master_endpoints, which
clients given MOONCAKE_MASTER=etcd://h:p[,h:p][/<cluster_id>] follow. A
leader that loses its etcd session stops serving and exits non-zero (its
in-memory state may be stale; let the supervisor restart it as a standby).
On SIGINT/SIGTERM a leader resigns, so a standby takes over at once.`,
		Example: `  # A master that accepts offload owners, on the default port 50051
  ferry master --enable_offload

  # Shorter owner TTL, and Prometheus metrics on :9003/metrics
  ferry master --enable_offload --client_ttl 5 --metrics_port 9003

  # Loopback only, on any free port (printed on stdout)
  ferry master --enable_offload --rpc_address 127.0.0.1 --rpc_port 0

  # Two or more masters for high availability (run one per machine)
  ferry master --enable_offload --enable_ha --etcd_endpoints 10.0.0.1:2379,10.0.0.2:2379 --rpc_address 10.0.0.5`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runMaster(cmd, f) },
	}
	fl := cmd.Flags()
	fl.IntVar(&f.rpcPort, "rpc_port", master.DefaultRPCPort, "gRPC listen port (0: any free port)")
	fl.StringVar(&f.rpcAddress, "rpc_address", "0.0.0.0", "gRPC listen address")
	fl.BoolVar(&f.enableOffload, "enable_offload", false, "accept offload owners and puts (required for the offload path)")
	fl.IntVar(&f.clientTTL, "client_ttl", int(master.DefaultClientTTL/time.Second), "seconds an owner stays mounted without a ping")
	fl.StringVar(&f.leaseTTL, "default_kv_lease_ttl", "10000", "read lease granted by BatchGetReplicaList: milliseconds, or a number with ms/s/m/h")
	fl.IntVar(&f.putTimeout, "put_start_release_timeout_sec", int(master.DefaultPutTimeout/time.Second), "seconds a BatchPutStart reservation waits for the owner's report")
	fl.IntVar(&f.metricsPort, "metrics_port", 0, "serve Prometheus /metrics on this port (0: off)")
	fl.StringVar(&f.metricsHost, "metrics_host", "0.0.0.0", "metrics listen address")
	f.ha.register(fl)
	return cmd
}

// parseLeaseTTL reads Mooncake's lease syntax: a bare number is
// milliseconds; ms, s, m and h suffixes are accepted.
func parseLeaseTTL(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseUint(s, 10, 63); err == nil {
		return time.Duration(n) * time.Millisecond, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("want milliseconds or a positive duration like 10s")
	}
	return d, nil
}

func (f *masterFlags) config() (master.Config, error) {
	var cfg master.Config
	if f.rpcPort < 0 || f.rpcPort > 65535 {
		return cfg, fmt.Errorf("--rpc_port %d: want 0..65535", f.rpcPort)
	}
	if f.metricsPort < 0 || f.metricsPort > 65535 {
		return cfg, fmt.Errorf("--metrics_port %d: want 0..65535", f.metricsPort)
	}
	if f.clientTTL < 1 {
		return cfg, fmt.Errorf("--client_ttl %d: want at least 1 second", f.clientTTL)
	}
	if f.putTimeout < 1 {
		return cfg, fmt.Errorf("--put_start_release_timeout_sec %d: want at least 1", f.putTimeout)
	}
	lease, err := parseLeaseTTL(f.leaseTTL)
	if err != nil {
		return cfg, fmt.Errorf("--default_kv_lease_ttl %q: %w", f.leaseTTL, err)
	}
	if lease == 0 {
		return cfg, fmt.Errorf("--default_kv_lease_ttl %q: want more than 0", f.leaseTTL)
	}
	cfg.Addr = net.JoinHostPort(f.rpcAddress, strconv.Itoa(f.rpcPort))
	if f.metricsPort != 0 {
		cfg.MetricsAddr = net.JoinHostPort(f.metricsHost, strconv.Itoa(f.metricsPort))
	}
	cfg.EnableOffload = f.enableOffload
	cfg.ClientTTL = time.Duration(f.clientTTL) * time.Second
	cfg.LeaseTTL = lease
	cfg.PutTimeout = time.Duration(f.putTimeout) * time.Second
	if err := f.ha.check(); err != nil {
		return cfg, err
	}
	return cfg, nil
}

func runMaster(cmd *cobra.Command, f *masterFlags) error {
	cfg, err := f.config()
	if err != nil {
		return usageError{err}
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	srv, err := master.NewServer(cfg)
	if err != nil {
		return err
	}
	if f.ha.enable {
		return runMasterHA(ctx, cmd, srv, &f.ha)
	}
	if err := srv.Start(); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "master listening on %s\n", srv.Addr())
	if a := srv.MetricsAddr(); a != nil {
		fmt.Fprintf(cmd.OutOrStdout(), "metrics on http://%s/metrics\n", a)
	}
	<-ctx.Done()
	fmt.Fprintln(cmd.ErrOrStderr(), "ferry master: shutting down")
	return srv.Close()
}
