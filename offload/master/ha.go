package master

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.etcd.io/etcd/client/v3/naming/endpoints"
	"go.uber.org/zap"
)

// HA defaults.
const (
	// DefaultSessionTTL is the etcd lease of a master's election session:
	// a crashed leader's standby takes over about this long after it died.
	DefaultSessionTTL = 5 * time.Second
	// DefaultEtcdDialTimeout bounds reaching etcd at start.
	DefaultEtcdDialTimeout = 5 * time.Second
)

var (
	// ErrLostLeadership is returned by RunHA when the leader's etcd
	// session ended (lease expired, etcd unreachable for longer than the
	// session TTL). The server has already stopped answering RPCs; its
	// in-memory state may be stale, so it must not lead again: close it
	// (ferry master exits non-zero and is restarted by its supervisor).
	ErrLostLeadership = errors.New("master: lost etcd leadership")
	// ErrEtcdUnavailable means etcd could not be reached within the dial
	// timeout.
	ErrEtcdUnavailable = errors.New("master: etcd unreachable")
)

// ElectionPrefix is the etcd election prefix of clusterID's masters:
// "mooncake-store/master_view", or "mooncake-store/<cluster_id>/master_view"
// (Mooncake's master_view key). The election API stores one key per
// candidate under it; the leader's value is its advertised gRPC address.
func ElectionPrefix(clusterID string) string { return haKey(clusterID, "master_view") }

// EndpointsTarget is the etcd naming target (go.etcd.io/etcd/client/v3/naming)
// under which the leader publishes its gRPC address, bound to its session
// lease: a client resolving "etcd:///"+EndpointsTarget(id) with the etcd
// gRPC resolver follows the current leader.
func EndpointsTarget(clusterID string) string { return haKey(clusterID, "master_endpoints") }

func haKey(clusterID, leaf string) string {
	clusterID = strings.Trim(clusterID, "/")
	if clusterID == "" {
		return "mooncake-store/" + leaf
	}
	return "mooncake-store/" + clusterID + "/" + leaf
}

// HAConfig configures RunHA.
type HAConfig struct {
	// Endpoints are etcd's client endpoints (host:port). Required.
	Endpoints []string
	// ClusterID namespaces the election keys (--cluster_id); "" is the
	// default namespace.
	ClusterID string
	// Advertise is the gRPC address published for clients once elected.
	// "" means the server's listen address, with an unspecified host
	// (0.0.0.0, ::) replaced by os.Hostname().
	Advertise string
	// SessionTTL is the election lease; 0 means DefaultSessionTTL. It is
	// rounded up to whole seconds (etcd's lease unit).
	SessionTTL time.Duration
	// DialTimeout bounds reaching etcd at start and each cleanup call; 0
	// means DefaultEtcdDialTimeout.
	DialTimeout time.Duration
	// OnElected, if set, is called once with the advertised address after
	// the server was promoted and published.
	OnElected func(advertise string)
	// Logger receives election events; nil means slog.Default().
	Logger *slog.Logger
}

// RunHA makes srv one candidate of an etcd leader election. srv is
// started with StartStandby if it was not started yet (a server started
// with Start is demoted to standby). While another master leads, srv
// listens and answers every RPC UNAVAILABLE. Once elected, srv answers
// RPCs and its address is published under EndpointsTarget, bound to the
// session lease.
//
// RunHA blocks. It returns ErrEtcdUnavailable (wrapped) when etcd cannot
// be reached within DialTimeout at start; nil when ctx ends (it demotes
// srv, withdraws its address, resigns and revokes its lease so a standby
// takes over at once); and ErrLostLeadership when the session ends while
// leading or campaigning. In every case srv is left in standby and the
// caller closes it. A server whose RunHA returned must not campaign again.
func RunHA(ctx context.Context, srv *Server, cfg HAConfig) error {
	if len(cfg.Endpoints) == 0 {
		return fmt.Errorf("%w: HA needs at least one etcd endpoint", ErrInvalidOptions)
	}
	if cfg.SessionTTL < 0 || cfg.DialTimeout < 0 {
		return fmt.Errorf("%w: negative HA duration (session ttl %v, dial timeout %v)", ErrInvalidOptions, cfg.SessionTTL, cfg.DialTimeout)
	}
	if cfg.SessionTTL == 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = DefaultEtcdDialTimeout
	}
	ttl := int((cfg.SessionTTL + time.Second - 1) / time.Second)
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	srv.standby.Store(true)
	if err := srv.StartStandby(); err != nil && !errors.Is(err, ErrStarted) {
		return err
	}
	adv, err := advertised(srv, cfg.Advertise)
	if err != nil {
		return err
	}

	cli, err := clientv3.New(clientv3.Config{Endpoints: cfg.Endpoints, DialTimeout: cfg.DialTimeout, Logger: zap.NewNop()})
	if err != nil {
		return fmt.Errorf("%w: %v: %w", ErrEtcdUnavailable, cfg.Endpoints, err)
	}
	defer cli.Close()
	gctx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
	lease, err := cli.Grant(gctx, int64(ttl))
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("%w: %v not answering within %v: %w", ErrEtcdUnavailable, cfg.Endpoints, cfg.DialTimeout, err)
	}
	sess, err := concurrency.NewSession(cli, concurrency.WithLease(lease.ID), concurrency.WithTTL(ttl))
	if err != nil {
		return fmt.Errorf("%w: keep-alive of lease %x: %w", ErrEtcdUnavailable, lease.ID, err)
	}
	defer sess.Close() // revokes the lease: our keys vanish at once
	el := concurrency.NewElection(sess, ElectionPrefix(cfg.ClusterID))

	// Campaigning stops when ctx ends or the session dies.
	cctx, ccancel := context.WithCancel(ctx)
	defer ccancel()
	go func() {
		select {
		case <-sess.Done():
			ccancel()
		case <-cctx.Done():
		}
	}()
	log.Info("master: campaigning for leadership", "prefix", ElectionPrefix(cfg.ClusterID), "advertise", adv, "etcd", cfg.Endpoints)
	if err := el.Campaign(cctx, adv); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("%w: campaign: %w", ErrLostLeadership, err)
	}
	// Campaign can return after our key expired with the lease; Proclaim
	// succeeds only if we still hold the leader key.
	pctx, pcancel := context.WithTimeout(cctx, cfg.DialTimeout)
	err = el.Proclaim(pctx, adv)
	pcancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("%w: confirming leadership: %w", ErrLostLeadership, err)
	}
	em, err := endpoints.NewManager(cli, EndpointsTarget(cfg.ClusterID))
	if err != nil {
		return fmt.Errorf("master: etcd endpoints manager: %w", err)
	}
	epKey := EndpointsTarget(cfg.ClusterID) + "/" + adv
	srv.standby.Store(false)
	actx, acancel := context.WithTimeout(cctx, cfg.DialTimeout)
	err = em.AddEndpoint(actx, epKey, endpoints.Endpoint{Addr: adv}, clientv3.WithLease(sess.Lease()))
	acancel()
	if err != nil {
		srv.standby.Store(true)
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("%w: publishing %s: %w", ErrLostLeadership, adv, err)
	}
	log.Info("master: elected leader, serving", "advertise", adv, "lease", fmt.Sprintf("%x", sess.Lease()))
	if cfg.OnElected != nil {
		cfg.OnElected(adv)
	}

	select {
	case <-sess.Done():
		srv.standby.Store(true)
		log.Error("master: etcd session ended while leading; stopped serving", "advertise", adv)
		return ErrLostLeadership
	case <-ctx.Done():
	}
	srv.standby.Store(true)
	dctx, dcancel := context.WithTimeout(context.Background(), cfg.DialTimeout)
	defer dcancel()
	if err := em.DeleteEndpoint(dctx, epKey); err != nil {
		log.Warn("master: withdrawing the published address", "err", err)
	}
	if err := el.Resign(dctx); err != nil {
		log.Warn("master: resigning leadership", "err", err)
	}
	log.Info("master: stepped down", "advertise", adv)
	return nil
}

// advertised is the address published for srv.
func advertised(srv *Server, adv string) (string, error) {
	if adv != "" {
		if _, _, err := net.SplitHostPort(adv); err != nil {
			return "", fmt.Errorf("%w: advertise address %q: %w", ErrInvalidOptions, adv, err)
		}
		return adv, nil
	}
	a := srv.Addr()
	if a == nil {
		return "", ErrClosed
	}
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return "", fmt.Errorf("master: listen address %s: %w", a, err)
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		h, err := os.Hostname()
		if err != nil {
			return "", fmt.Errorf("master: listening on %s and no hostname to advertise: %w", a, err)
		}
		host = h
	}
	return net.JoinHostPort(host, port), nil
}
