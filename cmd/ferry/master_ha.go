package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ferrylabs/ferry/offload/master"
)

// haFlags are mooncake_master's high-availability flags.
type haFlags struct {
	enable     bool
	endpoints  string
	clusterID  string
	sessionTTL int
	list       []string // endpoints, parsed by check
}

func (h *haFlags) register(fl *pflag.FlagSet) {
	fl.BoolVar(&h.enable, "enable_ha", false, "elect one leader among masters through etcd (needs --etcd_endpoints)")
	fl.StringVar(&h.endpoints, "etcd_endpoints", "", "etcd endpoints host:port, separated by ',' or ';' (with --enable_ha)")
	fl.StringVar(&h.clusterID, "cluster_id", "", "namespace of the election keys: mooncake-store/<cluster_id>/master_view (with --enable_ha)")
	fl.IntVar(&h.sessionTTL, "ha_session_ttl", int(master.DefaultSessionTTL/time.Second), "seconds a dead leader keeps leadership before a standby takes over (with --enable_ha)")
}

// check validates the HA flags and fills list.
func (h *haFlags) check() error {
	if !h.enable {
		if h.endpoints != "" {
			return errors.New("--etcd_endpoints needs --enable_ha")
		}
		return nil
	}
	for _, e := range strings.FieldsFunc(h.endpoints, func(r rune) bool { return r == ',' || r == ';' }) {
		e = strings.TrimSpace(e)
		if _, _, err := net.SplitHostPort(e); err != nil {
			return fmt.Errorf("--etcd_endpoints %q: %q is not host:port", h.endpoints, e)
		}
		h.list = append(h.list, e)
	}
	if len(h.list) == 0 {
		return errors.New("--enable_ha needs --etcd_endpoints host:port[,host:port]")
	}
	if h.sessionTTL < 1 {
		return fmt.Errorf("--ha_session_ttl %d: want at least 1 second", h.sessionTTL)
	}
	if strings.Trim(h.clusterID, "/") != h.clusterID || strings.Contains(h.clusterID, "//") {
		return fmt.Errorf("--cluster_id %q: no leading, trailing or doubled '/'", h.clusterID)
	}
	return nil
}

// runMasterHA serves srv as a standby, campaigns, and serves once elected.
// It returns nil after ctx ends (the leader resigned) and an error, so the
// process exits non-zero, when etcd is unreachable or leadership was lost.
func runMasterHA(ctx context.Context, cmd *cobra.Command, srv *master.Server, h *haFlags) error {
	if err := srv.StartStandby(); err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "master listening on %s (standby until elected leader)\n", srv.Addr())
	if a := srv.MetricsAddr(); a != nil {
		fmt.Fprintf(out, "metrics on http://%s/metrics\n", a)
	}
	err := master.RunHA(ctx, srv, master.HAConfig{
		Endpoints:  h.list,
		ClusterID:  h.clusterID,
		SessionTTL: time.Duration(h.sessionTTL) * time.Second,
		OnElected:  func(adv string) { fmt.Fprintf(out, "master elected leader, serving as %s\n", adv) },
	})
	fmt.Fprintln(cmd.ErrOrStderr(), "ferry master: shutting down")
	return errors.Join(err, srv.Close())
}
