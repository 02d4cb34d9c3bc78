package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/ferrylabs/ferry/engine/metadata"
)

// storeTimeout bounds a publication to, or a lookup in, the central store
// when the caller has no deadline.
const storeTimeout = 5 * time.Second

// central is the engine's state in a central-store metadata mode; nil in
// P2PHANDSHAKE mode.
type central struct {
	store metadata.Store
	owned bool // opened by the engine, closed by Close
	keys  metadata.Keys
	// claimed is set in New once the name is this engine's: only then
	// does Close delete the name's keys. Not changed afterwards.
	claimed bool
}

// openCentral opens (or takes) the configured central store.
func openCentral(cfg *Config) (*central, error) {
	if cfg.p2p() {
		return nil, nil
	}
	c := &central{store: cfg.MetadataStore, keys: metadata.NewKeys(cfg.MetadataClusterID)}
	if c.store == nil {
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		defer cancel()
		s, err := OpenMetadataStore(ctx, cfg.MetadataServer)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrMetadata, err)
		}
		c.store, c.owned = s, true
	}
	return c, nil
}

// rpcHost is the address a central-mode engine publishes: cfg.RPCHost,
// else the first up, running, non-loopback IPv4 address, as Mooncake
// picks it.
func rpcHost(cfg *Config) (string, error) {
	if cfg.RPCHost != "" {
		return cfg.RPCHost, nil
	}
	ifs, err := net.Interfaces()
	if err != nil {
		return "", fmt.Errorf("%w: listing interfaces: %w", ErrDNS, err)
	}
	for _, ifc := range ifs {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagRunning == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && !ipn.IP.IsLoopback() {
				return ipn.IP.String(), nil
			}
		}
	}
	return "", fmt.Errorf("%w: no up, running, non-loopback IPv4 address to publish; set MC_TCP_BIND_ADDRESS (Config.RPCHost)", ErrDNS)
}

// storeCtx returns ctx with the store timeout when it has no deadline.
func storeCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, storeTimeout)
}

// claimName fails when another running engine already publishes this
// engine's name: its rpc_meta entry exists and its daemon answers a probe.
// An entry whose daemon does not answer is left by an engine that died,
// and is taken over.
func (e *Engine) claimName(ctx context.Context) error {
	d, err := e.lookupRPCMeta(ctx, e.name)
	if errors.Is(err, metadata.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if e.client.Probe(pctx, d.Addr()) == nil {
		return fmt.Errorf("%w: segment name %q is in use by a running engine at %s; give each engine its own LocalServerName", ErrInvalidArgument, e.name, d.Addr())
	}
	e.log.Info("taking over the name of an engine that no longer answers", "segment", e.name, "was", d.Addr())
	// Mooncake's HTTP metadata servers refuse to rewrite an rpc_meta key
	// with another value: remove the stale one first.
	dctx, dcancel := storeCtx(ctx)
	defer dcancel()
	if err := e.central.store.Delete(dctx, e.central.keys.RPCMeta(e.name)); err != nil {
		return fmt.Errorf("%w: removing the stale rpc_meta of %s: %w", ErrMetadata, e.name, err)
	}
	return nil
}

// publishRPCMeta writes where this engine's handshake daemon listens.
func (e *Engine) publishRPCMeta(ctx context.Context) error {
	ctx, cancel := storeCtx(ctx)
	defer cancel()
	v := metadata.AppendRPCMeta(nil, metadata.RPCMetaDesc{IPOrHostName: e.host, RPCPort: e.daemon.Port()})
	if err := e.central.store.Put(ctx, e.central.keys.RPCMeta(e.name), v); err != nil {
		return fmt.Errorf("%w: publishing rpc_meta of %s: %w", ErrMetadata, e.name, err)
	}
	return nil
}

// publishDesc writes the local segment descriptor to the central store.
// Callers serialize it (regMu, or before the engine is shared).
func (e *Engine) publishDesc(ctx context.Context) error {
	ctx, cancel := storeCtx(ctx)
	defer cancel()
	v := metadata.AppendDesc(nil, e.localDesc(), time.Now())
	if err := e.central.store.Put(ctx, e.central.keys.Segment(e.name), v); err != nil {
		return fmt.Errorf("%w: publishing the descriptor of %s: %w", ErrMetadata, e.name, err)
	}
	return nil
}

// unpublish deletes this engine's keys, as Mooncake's teardown does.
func (e *Engine) unpublish() error {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	return errors.Join(
		e.central.store.Delete(ctx, e.central.keys.Segment(e.name)),
		e.central.store.Delete(ctx, e.central.keys.RPCMeta(e.name)),
	)
}

// rpcAddr returns the "host:port" of the handshake daemon of the engine
// named name: the name itself in P2PHANDSHAKE mode, else its rpc_meta
// entry (cached; fresh is true to look it up again).
func (e *Engine) rpcAddr(ctx context.Context, name string, fresh bool) (string, error) {
	if e.central == nil {
		return name, nil
	}
	if !fresh {
		e.segMu.Lock()
		addr, ok := e.rpcAddrs[name]
		e.segMu.Unlock()
		if ok {
			return addr, nil
		}
	}
	d, err := e.lookupRPCMeta(ctx, name)
	if err != nil {
		return "", err
	}
	return d.Addr(), nil
}

// withRPCAddr runs call with the daemon address of the engine named name.
// With a central store, a call that cannot reach a cached address is
// tried once more at a freshly looked-up one if it changed: an engine
// that restarted under the same name listens elsewhere.
func (e *Engine) withRPCAddr(ctx context.Context, name string, call func(addr string) error) error {
	addr, err := e.rpcAddr(ctx, name, false)
	if err != nil {
		return err
	}
	err = call(addr)
	if e.central == nil || !errors.Is(err, metadata.ErrUnreachable) {
		return err
	}
	fresh, ferr := e.rpcAddr(ctx, name, true)
	if ferr != nil || fresh == addr {
		return err
	}
	return call(fresh)
}

// lookupRPCMeta reads the rpc_meta entry of the engine named name from
// the store and caches its address for rpcAddr.
func (e *Engine) lookupRPCMeta(ctx context.Context, name string) (metadata.RPCMetaDesc, error) {
	ctx, cancel := storeCtx(ctx)
	defer cancel()
	b, err := e.central.store.Get(ctx, e.central.keys.RPCMeta(name))
	if err != nil {
		return metadata.RPCMetaDesc{}, fmt.Errorf("%w: location of %q: %w", ErrMetadata, name, err)
	}
	d, err := metadata.DecodeRPCMeta(b)
	if err != nil {
		return metadata.RPCMetaDesc{}, fmt.Errorf("location of %q: %w", name, err)
	}
	e.segMu.Lock()
	e.rpcAddrs[name] = d.Addr()
	e.segMu.Unlock()
	return d, nil
}

// fetchCentral reads the descriptor of segment name and its engine's
// location from the central store. It returns the descriptor and the
// host peers dial.
func (e *Engine) fetchCentral(ctx context.Context, name string) (*metadata.SegmentDesc, string, error) {
	ctx, cancel := storeCtx(ctx)
	defer cancel()
	b, err := e.central.store.Get(ctx, e.central.keys.Segment(name))
	if err != nil {
		return nil, "", fmt.Errorf("%w: descriptor of %q: %w", ErrMetadata, name, err)
	}
	d, err := metadata.DecodeDesc(b)
	if err != nil {
		return nil, "", fmt.Errorf("descriptor of %q from the metadata store: %w", name, err)
	}
	rm, err := e.lookupRPCMeta(ctx, name)
	if err != nil {
		return nil, "", err
	}
	return d, rm.IPOrHostName, nil
}
