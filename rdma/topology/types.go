package topology

import (
	"context"
	"net/netip"
)

// GIDType is the kind of a GID table entry, as sysfs names it
// (ports/N/gid_attrs/types/I).
type GIDType string

// GID types.
const (
	GIDTypeIB     GIDType = "IB/RoCE v1"
	GIDTypeRoCEv2 GIDType = "RoCE v2"
)

// GIDEntry is one non-null entry of a port's GID table.
type GIDEntry struct {
	// Index is the GID index (sgid_index in the address vector).
	Index int
	// GID is the raw 16-byte GID.
	GID [16]byte
	// Type is the entry's type; empty when sysfs does not say.
	Type GIDType
	// Netdev is the network interface the entry belongs to, or "".
	Netdev string
}

// Port is one port of an RDMA device.
type Port struct {
	// Num is the port number (1-based).
	Num int
	// Active is true when the port state is ACTIVE.
	Active bool
	// LID is the port's local identifier (0 on RoCE).
	LID uint16
	// LinkLayer is "InfiniBand" or "Ethernet".
	LinkLayer string
	// GIDs is the non-null part of the GID table, in index order.
	GIDs []GIDEntry
}

// Device is one RDMA device as a Source reports it.
type Device struct {
	// Name is the verbs device name, e.g. "mlx5_0".
	Name string
	// NUMANode is the device's NUMA node, or -1 when unknown.
	NUMANode int
	// PCIPath is the resolved sysfs path of the device's PCI function,
	// or "" (used for distance ranking).
	PCIPath string
	// Netdevs are the network interfaces bound to the device.
	Netdevs []string
	// Ports are the device's ports.
	Ports []Port
}

// Netdev is a network interface as a Source reports it.
type Netdev struct {
	// Name is the interface name.
	Name string
	// Kind is the netlink link type ("device", "vxlan", "bridge", ...).
	Kind string
	// Up is true when the interface is administratively and
	// operationally up.
	Up bool
	// Addrs are the interface's addresses.
	Addrs []netip.Prefix
	// Gateway is true when some route through the interface has a
	// gateway (the interface reaches beyond its own subnets).
	Gateway bool
}

// Snapshot is what a Source saw at one moment.
type Snapshot struct {
	// Devices are the RDMA devices, in name order.
	Devices []Device
	// Netdevs are the network interfaces by name.
	Netdevs map[string]Netdev
	// NUMANodes are the online NUMA node numbers, ascending. Empty means
	// the machine does not expose NUMA (treated as node 0).
	NUMANodes []int
}

// Source reads the machine's RDMA and network topology.
type Source interface {
	// Snapshot returns the current topology. A machine without RDMA
	// devices yields a Snapshot with no Devices and a nil error; errors
	// mean discovery itself failed.
	Snapshot(ctx context.Context) (Snapshot, error)
}

// Fake is a Source that returns a fixed Snapshot, for tests.
type Fake struct {
	// Snap is returned by every call.
	Snap Snapshot
	// Err, when set, is returned instead.
	Err error
}

// Snapshot returns f.Snap or f.Err.
func (f *Fake) Snapshot(ctx context.Context) (Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return Snapshot{}, err
	}
	if f.Err != nil {
		return Snapshot{}, f.Err
	}
	return f.Snap, nil
}
