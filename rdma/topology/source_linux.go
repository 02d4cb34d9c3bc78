//go:build linux

package topology

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"slices"

	"github.com/Mellanox/rdmamap"
	"github.com/vishvananda/netlink"
)

// dumpRetries bounds the retries of a netlink dump that the kernel
// reports as interrupted (netlink.ErrDumpInterrupted).
const dumpRetries = 5

// System returns the Source that reads this machine: RDMA devices from
// sysfs (via rdmamap), netdevs, addresses and routes from netlink, NUMA
// nodes from sysfs. log may be nil.
func System(log *slog.Logger) Source {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &systemSource{log: log}
}

type systemSource struct{ log *slog.Logger }

func (s *systemSource) Snapshot(ctx context.Context) (Snapshot, error) {
	var snap Snapshot
	if _, err := os.Stat(InfinibandClassDir); err != nil {
		if isNotExist(err) {
			return snap, nil // no RDMA stack: clean empty result
		}
		return snap, fmt.Errorf("reading %s: %w", InfinibandClassDir, err)
	}
	names := rdmamap.GetRdmaDeviceList()
	slices.Sort(names)
	if len(names) == 0 {
		return snap, nil
	}
	snap.NUMANodes = ReadNUMANodes(NodeDir)
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			return snap, err
		}
		d, err := ReadSysfsDevice(InfinibandClassDir, n)
		if err != nil {
			s.log.Warn("skipping unreadable RDMA device", "device", n, "err", err)
			continue
		}
		snap.Devices = append(snap.Devices, d)
	}
	nds, err := s.netdevs(ctx, snap.Devices)
	if err != nil {
		return snap, err
	}
	snap.Netdevs = nds
	return snap, nil
}

// retryDump runs a netlink dump, retrying while the kernel says it was
// interrupted. After dumpRetries it keeps the partial result.
func retryDump[T any](ctx context.Context, log *slog.Logger, what string, f func() (T, error)) (T, error) {
	var v T
	var err error
	for i := 0; i < dumpRetries; i++ {
		v, err = f()
		if !errors.Is(err, netlink.ErrDumpInterrupted) {
			return v, err
		}
		if cerr := ctx.Err(); cerr != nil {
			return v, cerr
		}
	}
	log.Warn("netlink dump kept being interrupted; using partial result", "dump", what)
	return v, nil
}

func (s *systemSource) netdevs(ctx context.Context, devs []Device) (map[string]Netdev, error) {
	links, err := retryDump(ctx, s.log, "links", netlink.LinkList)
	if err != nil {
		return nil, fmt.Errorf("netlink link list: %w", err)
	}
	addrs, err := retryDump(ctx, s.log, "addrs", func() ([]netlink.Addr, error) { return netlink.AddrList(nil, netlink.FAMILY_ALL) })
	if err != nil {
		return nil, fmt.Errorf("netlink address list: %w", err)
	}
	routes, err := retryDump(ctx, s.log, "routes", func() ([]netlink.Route, error) { return netlink.RouteList(nil, netlink.FAMILY_ALL) })
	if err != nil {
		return nil, fmt.Errorf("netlink route list: %w", err)
	}
	out := make(map[string]Netdev, len(links))
	byIndex := make(map[int]string, len(links))
	for _, l := range links {
		a := l.Attrs()
		byIndex[a.Index] = a.Name
		out[a.Name] = Netdev{Name: a.Name, Kind: l.Type(),
			Up: a.Flags&(1<<0) != 0 && (a.OperState == netlink.OperUp || a.OperState == netlink.OperUnknown)}
		// Bind netdevs to RDMA devices that sysfs did not list under
		// device/net (e.g. IPoIB child interfaces).
		if rd, err := rdmamap.GetRdmaDeviceForNetdevice(a.Name); err == nil {
			for i := range devs {
				if devs[i].Name == rd && !slices.Contains(devs[i].Netdevs, a.Name) {
					devs[i].Netdevs = append(devs[i].Netdevs, a.Name)
				}
			}
		}
	}
	for _, ad := range addrs {
		name := byIndex[ad.LinkIndex]
		nd, ok := out[name]
		if !ok || ad.IPNet == nil {
			continue
		}
		ip, ok := netip.AddrFromSlice(ad.IP)
		if !ok {
			continue
		}
		ones, _ := ad.Mask.Size()
		nd.Addrs = append(nd.Addrs, netip.PrefixFrom(ip.Unmap(), ones))
		out[name] = nd
	}
	for _, r := range routes {
		if r.Gw == nil {
			continue
		}
		if nd, ok := out[byIndex[r.LinkIndex]]; ok {
			nd.Gateway = true
			out[nd.Name] = nd
		}
	}
	return out, nil
}
