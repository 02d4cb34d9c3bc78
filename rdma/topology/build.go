package topology

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
)

// NIC is one RDMA NIC of the topology, with the port and GID Ferry uses.
type NIC struct {
	// Name is the verbs device name.
	Name string
	// NUMANode is the device's NUMA node, -1 when unknown.
	NUMANode int
	// PCIPath is the device's PCI sysfs path, or "".
	PCIPath string
	// Port is the port number in use.
	Port int
	// Active is true when that port is ACTIVE.
	Active bool
	// LID is the port's LID.
	LID uint16
	// LinkLayer is "InfiniBand" or "Ethernet".
	LinkLayer string
	// GIDIndex is the chosen GID index, -1 when the table had none.
	GIDIndex int
	// GID is the chosen GID (zero when GIDIndex is -1).
	GID [16]byte
	// GIDTier is the chosen GID's rank (TierRoutableNetdev..
	// TierFirstNonNull), 0 when forced by MC_GID_INDEX or absent.
	GIDTier int
	// Netdev is the chosen GID's network interface, or "".
	Netdev string
}

// Topology is the result of discovery: NICs in HCA-list order (the order
// of devices, rkeys and lkeys in descriptors) and the priority matrix.
type Topology struct {
	NICs   []NIC
	Matrix Matrix
}

// HCAs returns the NIC names in order.
func (t *Topology) HCAs() []string {
	out := make([]string, len(t.NICs))
	for i, n := range t.NICs {
		out[i] = n.Name
	}
	return out
}

// Discover reads src and builds the topology with cfg. It fails with an
// error wrapping ErrNoDevices when nothing usable is found.
func Discover(ctx context.Context, src Source, cfg Config) (*Topology, error) {
	snap, err := src.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("topology discovery: %w", err)
	}
	return Build(snap, cfg)
}

// Build turns a snapshot into a topology: it applies the MC_TE_FILTERS
// allow-list, picks each NIC's GID (forced index, or the best-ranked
// entry), and builds the priority matrix from NUMA affinity, or loads it
// from cfg.CustomTopoPath. Devices whose port is not active are left out
// of a discovered matrix.
func Build(s Snapshot, cfg Config) (*Topology, error) {
	log := cfg.logger()
	if cfg.Port == 0 {
		cfg.Port = 1
	}
	allowed := func(name string) bool {
		return len(cfg.Filters) == 0 || slices.Contains(cfg.Filters, name)
	}
	byName := map[string]NIC{}
	var active []NIC
	for _, d := range s.Devices {
		if !allowed(d.Name) {
			continue
		}
		var port *Port
		for i := range d.Ports {
			if d.Ports[i].Num == cfg.Port {
				port = &d.Ports[i]
			}
		}
		if port == nil {
			log.Warn("RDMA device has no such port", "device", d.Name, "port", cfg.Port)
			continue
		}
		n := NIC{Name: d.Name, NUMANode: d.NUMANode, PCIPath: d.PCIPath, Port: port.Num,
			Active: port.Active, LID: port.LID, LinkLayer: port.LinkLayer, GIDIndex: -1}
		if cfg.GIDIndex >= 0 {
			n.GIDIndex = cfg.GIDIndex
			for _, g := range port.GIDs {
				if g.Index == cfg.GIDIndex {
					n.GID, n.Netdev = g.GID, g.Netdev
				}
			}
			if n.GID == ([16]byte{}) {
				log.Warn("forced GID index has no GID on this port", "device", d.Name, "index", cfg.GIDIndex)
			}
		} else if g, tier, ok := bestGID(*port, s.Netdevs); ok {
			n.GIDIndex, n.GID, n.GIDTier, n.Netdev = g.Index, g.GID, tier, g.Netdev
		}
		byName[n.Name] = n
		if n.Active {
			active = append(active, n)
		} else {
			log.Info("RDMA port not active", "device", d.Name, "port", port.Num)
		}
	}

	var m Matrix
	if cfg.CustomTopoPath != "" {
		data, err := os.ReadFile(cfg.CustomTopoPath)
		if err != nil {
			return nil, fmt.Errorf("MC_CUSTOM_TOPO_JSON: %w", err)
		}
		m, err = ParseMatrix(data)
		if err != nil {
			return nil, fmt.Errorf("MC_CUSTOM_TOPO_JSON %s: %w", cfg.CustomTopoPath, err)
		}
		m = m.Filter(func(name string) bool {
			_, ok := byName[name]
			if !ok && allowed(name) {
				log.Warn("custom topology names an unknown RDMA device", "device", name)
			}
			return ok
		})
	} else {
		m = numaMatrix(active, s.NUMANodes)
	}
	t := &Topology{Matrix: m}
	for _, name := range m.HCAs() {
		t.NICs = append(t.NICs, byName[name])
	}
	if len(t.NICs) == 0 {
		return nil, fmt.Errorf("%w (%d devices seen, %d after filters, %d active)", ErrNoDevices, len(s.Devices), len(byName), len(active))
	}
	return t, nil
}

// numaMatrix builds the discovered matrix: cpu:N prefers NICs on node N
// and lists the others as available; "*" prefers all.
func numaMatrix(nics []NIC, nodes []int) Matrix {
	if len(nics) == 0 {
		return Matrix{}
	}
	if len(nodes) == 0 {
		nodes = []int{0}
	}
	m := Matrix{}
	all := make([]string, 0, len(nics))
	for _, n := range nics {
		all = append(all, n.Name)
	}
	slices.Sort(all)
	m["*"] = [2][]string{all, {}}
	for _, node := range nodes {
		pref, avail := []string{}, []string{}
		for _, name := range all {
			if byNameNode(nics, name) == node {
				pref = append(pref, name)
			} else {
				avail = append(avail, name)
			}
		}
		m["cpu:"+strconv.Itoa(node)] = [2][]string{pref, avail}
	}
	return m
}

func byNameNode(nics []NIC, name string) int {
	for _, n := range nics {
		if n.Name == name {
			return n.NUMANode
		}
	}
	return -1
}
