package topology

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Sysfs locations read by the system Source.
const (
	InfinibandClassDir = "/sys/class/infiniband"
	NodeDir            = "/sys/devices/system/node"
)

// ReadSysfsDevice reads one RDMA device under classDir (normally
// InfinibandClassDir): NUMA node, PCI path, bound netdevs, and for each
// port its state, LID, link layer and non-null GID table entries. Missing
// attribute files leave zero values; only an unreadable device directory
// is an error.
func ReadSysfsDevice(classDir, name string) (Device, error) {
	dir := filepath.Join(classDir, name)
	d := Device{Name: name, NUMANode: -1}
	if _, err := os.Stat(dir); err != nil {
		return d, err
	}
	if v, err := readTrim(filepath.Join(dir, "device", "numa_node")); err == nil {
		if n, err := strconv.Atoi(v); err == nil {
			d.NUMANode = n
		}
	}
	if p, err := filepath.EvalSymlinks(filepath.Join(dir, "device")); err == nil {
		d.PCIPath = p
	}
	if ents, err := os.ReadDir(filepath.Join(dir, "device", "net")); err == nil {
		for _, e := range ents {
			d.Netdevs = append(d.Netdevs, e.Name())
		}
	}
	ports, _ := os.ReadDir(filepath.Join(dir, "ports"))
	for _, pe := range ports {
		num, err := strconv.Atoi(pe.Name())
		if err != nil {
			continue
		}
		d.Ports = append(d.Ports, readPort(filepath.Join(dir, "ports", pe.Name()), num))
	}
	sort.Slice(d.Ports, func(i, j int) bool { return d.Ports[i].Num < d.Ports[j].Num })
	return d, nil
}

func readPort(dir string, num int) Port {
	p := Port{Num: num}
	if v, err := readTrim(filepath.Join(dir, "state")); err == nil {
		// "4: ACTIVE"
		p.Active = strings.HasSuffix(v, "ACTIVE") && !strings.Contains(v, "INACTIVE")
	}
	if v, err := readTrim(filepath.Join(dir, "lid")); err == nil {
		if n, err := strconv.ParseUint(strings.TrimPrefix(v, "0x"), 16, 16); err == nil {
			p.LID = uint16(n)
		}
	}
	p.LinkLayer, _ = readTrim(filepath.Join(dir, "link_layer"))
	ents, _ := os.ReadDir(filepath.Join(dir, "gids"))
	for _, e := range ents {
		idx, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		v, err := readTrim(filepath.Join(dir, "gids", e.Name()))
		if err != nil {
			continue
		}
		g, err := ParseGID(v)
		if err != nil || g == ([16]byte{}) {
			continue
		}
		ge := GIDEntry{Index: idx, GID: g}
		if t, err := readTrim(filepath.Join(dir, "gid_attrs", "types", e.Name())); err == nil {
			ge.Type = GIDType(t)
		}
		ge.Netdev, _ = readTrim(filepath.Join(dir, "gid_attrs", "ndevs", e.Name()))
		p.GIDs = append(p.GIDs, ge)
	}
	sort.Slice(p.GIDs, func(i, j int) bool { return p.GIDs[i].Index < p.GIDs[j].Index })
	return p
}

// ReadNUMANodes lists the online NUMA nodes under dir (normally NodeDir).
// It returns nil when the directory does not exist.
func ReadNUMANodes(dir string) []int {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		if s, ok := strings.CutPrefix(e.Name(), "node"); ok {
			if n, err := strconv.Atoi(s); err == nil {
				out = append(out, n)
			}
		}
	}
	sort.Ints(out)
	return out
}

func readTrim(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
