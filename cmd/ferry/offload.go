package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ferrylabs/ferry/engine"
	"github.com/ferrylabs/ferry/engine/metadata"
	"github.com/ferrylabs/ferry/offload/client"
	"github.com/ferrylabs/ferry/offload/config"
	"github.com/ferrylabs/ferry/staging"
)

// offloadFlags are the flags shared by the offload commands. Each one,
// when given, overrides its MOONCAKE_* / MC_* variable (and the JSON file
// at MOONCAKE_CONFIG_PATH).
type offloadFlags struct {
	master       string
	hostname     string
	protocol     string
	tenant       string
	rpcTimeoutMS int
	connectMS    int
}

func (f *offloadFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&f.master, "master", "", "master host:port, or etcd://h:p[,h:p][/cluster_id] to follow the elected leader (MOONCAKE_MASTER)")
	fl.StringVar(&f.hostname, "hostname", "", "address advertised to peers (MOONCAKE_LOCAL_HOSTNAME, default localhost)")
	fl.StringVar(&f.protocol, "protocol", "", "transfer protocol: tcp or rdma (MOONCAKE_PROTOCOL, default tcp)")
	fl.StringVar(&f.tenant, "tenant", "", "tenant of the keys (MOONCAKE_TENANT_ID, default \"default\")")
	fl.IntVar(&f.rpcTimeoutMS, "rpc-timeout-ms", 0, "bound on every master/owner RPC (MC_RPC_TIMEOUT_MS, default 30000)")
	fl.IntVar(&f.connectMS, "rpc-connect-timeout-ms", 0, "bound on RPC connection set-up (MC_RPC_CONNECT_TIMEOUT_MS, default 30000)")
}

// load reads the configuration and applies the flags that were set.
func (f *offloadFlags) load(cmd *cobra.Command) (config.Config, error) {
	c, err := config.Load()
	if err != nil {
		return c, err
	}
	for _, w := range c.Warnings {
		slog.Warn(w)
	}
	fl := cmd.Flags()
	set := func(name string, apply func()) {
		if fl.Changed(name) {
			apply()
		}
	}
	set("master", func() { c.MasterAddress = f.master })
	set("hostname", func() { c.LocalHostname = f.hostname })
	set("protocol", func() { c.Protocol = f.protocol })
	set("tenant", func() { c.TenantID = f.tenant })
	set("rpc-timeout-ms", func() { c.RPCTimeout = time.Duration(f.rpcTimeoutMS) * time.Millisecond })
	set("rpc-connect-timeout-ms", func() { c.RPCConnectTimeout = time.Duration(f.connectMS) * time.Millisecond })
	if c.MasterAddress == "" {
		return c, usageError{errors.New("no master: pass --master host:port (or etcd://h:p for an HA master) or set MOONCAKE_MASTER")}
	}
	if c.RPCTimeout <= 0 || c.RPCConnectTimeout <= 0 {
		return c, usageError{errors.New("RPC timeouts must be positive")}
	}
	switch c.Protocol {
	case "tcp", "rdma", "":
	default:
		return c, usageError{fmt.Errorf("--protocol %q: want tcp or rdma", c.Protocol)}
	}
	return c, nil
}

// newEngine starts a transfer engine advertised under the configured
// hostname, with the MC_* engine variables applied and the metadata mode
// of MOONCAKE_TE_META_DATA_SERVER. A quiet engine logs warnings and
// errors only (for the one-shot commands).
//
// With a central metadata store engines are found by name, and an owner
// and the one-shot commands on its host share the hostname: a one-shot
// engine is named "<hostname>-<pid>" so it never takes the owner's name.
// The address published for the engine is MC_TCP_BIND_ADDRESS, else the
// hostname when it is an IP address, else the engine's default.
func newEngine(c config.Config, quiet bool) (*engine.Engine, error) {
	ec, err := engine.ConfigFromEnv()
	if err != nil {
		return nil, err
	}
	ec.LocalServerName = c.LocalHostname
	ec.MetadataServer = c.MetadataServer
	if sv, err := metadata.ParseServer(c.MetadataServer); err != nil {
		return nil, usageError{fmt.Errorf("MOONCAKE_TE_META_DATA_SERVER: %w", err)}
	} else if sv.Kind != metadata.KindP2P {
		host, _ := metadata.ParseServerName(c.LocalHostname)
		if ec.RPCHost == "" && net.ParseIP(host) != nil {
			ec.RPCHost = host
		}
		if quiet {
			ec.LocalServerName = fmt.Sprintf("%s-%d", c.LocalHostname, os.Getpid())
		}
	}
	if ec.Protocol == "" {
		ec.Protocol = c.Protocol
	}
	ec.Logger = slog.Default()
	if quiet && !slog.Default().Enabled(context.Background(), slog.LevelDebug) {
		ec.Logger = slog.New(warnOnly{slog.Default().Handler()})
	}
	return engine.New(ec)
}

// requester is a client with its engine and master connection.
type requester struct {
	cfg   config.Config
	eng   *engine.Engine
	cl    *client.Client
	close func()
}

func newRequester(cmd *cobra.Command, f *offloadFlags) (*requester, error) {
	c, err := f.load(cmd)
	if err != nil {
		return nil, err
	}
	eng, err := newEngine(c, true)
	if err != nil {
		return nil, fmt.Errorf("start transfer engine: %w", err)
	}
	conn, closer, err := client.DialMaster(c.MasterAddress, c)
	if err != nil {
		eng.Close()
		return nil, fmt.Errorf("master %s: %w", c.MasterAddress, err)
	}
	cl, err := client.New(client.Options{Config: c, Engine: eng, Master: client.NewMasterClient(conn)})
	if err != nil {
		closer.Close()
		eng.Close()
		return nil, err
	}
	return &requester{cfg: c, eng: eng, cl: cl, close: func() {
		cl.Close()
		closer.Close()
		eng.Close()
	}}, nil
}

// buffer returns registered memory for n bytes: pinned when the memlock
// limit allows, otherwise unpinned (fine for TCP).
func (r *requester) buffer(n int64) (*client.Buffer, []byte, error) {
	size := int64(4096)
	for size < n {
		size <<= 1
	}
	b, err := client.NewBuffer(r.eng, size, false)
	if errors.Is(err, staging.ErrMemlock) {
		slog.Debug("memlock limit too low; using unpinned memory", "bytes", size)
		b, err = client.NewBuffer(r.eng, size, true)
	}
	if err != nil {
		return nil, nil, err
	}
	s, err := b.Alloc(n)
	if err != nil {
		b.Close()
		return nil, nil, err
	}
	return b, s.Bytes()[:n], nil
}

// keyErr maps a per-key result error to the command's exit codes; the
// client's errors already name the key.
func keyErr(key string, err error) error {
	if errors.Is(err, client.ErrNotFound) {
		return fmt.Errorf("%w: %w", errNotFound, err)
	}
	return fmt.Errorf("%s: %w", key, err)
}

func cmdContext(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}

// warnOnly drops records below warning level.
type warnOnly struct{ slog.Handler }

func (w warnOnly) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && w.Handler.Enabled(ctx, l)
}
func (w warnOnly) WithAttrs(a []slog.Attr) slog.Handler { return warnOnly{w.Handler.WithAttrs(a)} }
func (w warnOnly) WithGroup(n string) slog.Handler      { return warnOnly{w.Handler.WithGroup(n)} }
