package topology

import (
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func v4gid(s string) [16]byte { return netip.MustParseAddr(s).As16() }

func v6gid(s string) [16]byte { return netip.MustParseAddr(s).As16() }

// fakeSnapshot is four NICs on two NUMA nodes with mixed GID tables.
func fakeSnapshot() Snapshot {
	ll := GIDEntry{Index: 0, GID: v6gid("fe80::1"), Type: GIDTypeIB, Netdev: "eth0"}
	return Snapshot{
		NUMANodes: []int{0, 1},
		Netdevs: map[string]Netdev{
			"eth0":   {Name: "eth0", Kind: "device", Up: true},
			"eth1":   {Name: "eth1", Kind: "device", Up: true},
			"vxlan0": {Name: "vxlan0", Kind: "vxlan", Up: true},
		},
		Devices: []Device{
			{Name: "mlx5_0", NUMANode: 0, Ports: []Port{{Num: 1, Active: true, LinkLayer: "Ethernet", GIDs: []GIDEntry{
				ll,
				{Index: 1, GID: v6gid("fe80::1"), Type: GIDTypeRoCEv2, Netdev: "eth0"},
				{Index: 2, GID: v4gid("10.0.0.5"), Type: GIDTypeIB, Netdev: "eth0"},
				{Index: 3, GID: v4gid("10.0.0.5"), Type: GIDTypeRoCEv2, Netdev: "eth0"},
			}}}},
			{Name: "mlx5_1", NUMANode: 1, Ports: []Port{{Num: 1, Active: true, LinkLayer: "Ethernet", GIDs: []GIDEntry{
				ll,
				{Index: 3, GID: v4gid("10.0.1.5"), Type: GIDTypeRoCEv2, Netdev: "eth1"},
				{Index: 5, GID: v4gid("203.0.113.9"), Type: GIDTypeRoCEv2, Netdev: "eth1"},
			}}}},
			{Name: "mlx5_2", NUMANode: 1, Ports: []Port{{Num: 1, Active: true, LinkLayer: "Ethernet", GIDs: []GIDEntry{
				{Index: 0, GID: v6gid("fe80::2"), Type: GIDTypeIB, Netdev: "vxlan0"},
				{Index: 1, GID: v4gid("192.168.9.9"), Type: GIDTypeRoCEv2, Netdev: "vxlan0"},
			}}}},
			{Name: "mlx5_3", NUMANode: 0, Ports: []Port{{Num: 1, Active: false, LinkLayer: "Ethernet"}}},
			{Name: "ib0dev", NUMANode: -1, Ports: []Port{{Num: 1, Active: true, LinkLayer: "InfiniBand", LID: 17, GIDs: []GIDEntry{
				{Index: 0, GID: v6gid("fe80::a:b"), Type: GIDTypeIB},
			}}}},
		},
	}
}

func TestGIDRankingTiers(t *testing.T) {
	nd := map[string]Netdev{"eth0": {Name: "eth0", Kind: "device"}, "vx": {Name: "vx", Kind: "vxlan"}}
	cases := []struct {
		name string
		e    GIDEntry
		ll   string
		want int
	}{
		{"routable+netdev", GIDEntry{GID: v4gid("8.8.8.8"), Type: GIDTypeRoCEv2, Netdev: "eth0"}, "Ethernet", TierRoutableNetdev},
		{"routable v6", GIDEntry{GID: v6gid("2001:db8::1"), Type: GIDTypeRoCEv2}, "Ethernet", TierRoutable},
		{"private+netdev", GIDEntry{GID: v4gid("172.16.0.1"), Type: GIDTypeRoCEv2, Netdev: "eth0"}, "Ethernet", TierPrivateNetdev},
		{"overlay netdev", GIDEntry{GID: v4gid("8.8.8.8"), Type: GIDTypeRoCEv2, Netdev: "vx"}, "Ethernet", TierDegradedNetdev},
		{"link-local+netdev", GIDEntry{GID: v6gid("fe80::5"), Type: GIDTypeRoCEv2, Netdev: "eth0"}, "Ethernet", TierDegradedNetdev},
		{"private", GIDEntry{GID: v4gid("10.1.1.1"), Type: GIDTypeRoCEv2}, "Ethernet", TierPrivate},
		{"cgnat", GIDEntry{GID: v4gid("100.64.1.1"), Type: GIDTypeRoCEv2}, "Ethernet", TierDegraded},
		{"roce v1", GIDEntry{GID: v4gid("8.8.8.8"), Type: GIDTypeIB, Netdev: "eth0"}, "Ethernet", TierFirstNonNull},
		{"infiniband", GIDEntry{GID: v6gid("fe80::9"), Type: GIDTypeIB}, "InfiniBand", TierDegraded},
		{"null", GIDEntry{Type: GIDTypeRoCEv2}, "Ethernet", 0},
	}
	for _, c := range cases {
		if got := gidTier(c.e, c.ll, nd); got != c.want {
			t.Errorf("%s: tier %d, want %d", c.name, got, c.want)
		}
	}
}

func TestBuildPicksGIDsAndMatrix(t *testing.T) {
	topo, err := Build(fakeSnapshot(), DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	// mlx5_3 is inactive and left out; HCA order is "*" order (sorted).
	if got, want := topo.HCAs(), []string{"ib0dev", "mlx5_0", "mlx5_1", "mlx5_2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("HCAs %v, want %v", got, want)
	}
	gidIdx := map[string]int{}
	tiers := map[string]int{}
	for _, n := range topo.NICs {
		gidIdx[n.Name] = n.GIDIndex
		tiers[n.Name] = n.GIDTier
	}
	want := map[string]int{"mlx5_0": 3, "mlx5_1": 5, "mlx5_2": 1, "ib0dev": 0}
	if !reflect.DeepEqual(gidIdx, want) {
		t.Errorf("GID indices %v, want %v", gidIdx, want)
	}
	if tiers["mlx5_1"] != TierRoutableNetdev || tiers["mlx5_0"] != TierPrivateNetdev || tiers["mlx5_2"] != TierDegradedNetdev {
		t.Errorf("tiers %v", tiers)
	}
	m := topo.Matrix
	if got := m["cpu:0"]; !reflect.DeepEqual(got, [2][]string{{"mlx5_0"}, {"ib0dev", "mlx5_1", "mlx5_2"}}) {
		t.Errorf("cpu:0 = %v", got)
	}
	if got := m["cpu:1"]; !reflect.DeepEqual(got, [2][]string{{"mlx5_1", "mlx5_2"}, {"ib0dev", "mlx5_0"}}) {
		t.Errorf("cpu:1 = %v", got)
	}
	if got := m["*"]; len(got[0]) != 4 || len(got[1]) != 0 {
		t.Errorf("* = %v", got)
	}
}

func TestForcedGIDIndex(t *testing.T) {
	cfg := ConfigFromEnv(env(map[string]string{"NCCL_IB_GID_INDEX": "0", "MC_GID_INDEX": ""}), nil)
	if cfg.GIDIndex != 0 {
		t.Fatalf("GIDIndex %d", cfg.GIDIndex)
	}
	topo, err := Build(fakeSnapshot(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range topo.NICs {
		if n.GIDIndex != 0 || n.GIDTier != 0 {
			t.Errorf("%s: index %d tier %d", n.Name, n.GIDIndex, n.GIDTier)
		}
	}
	cfg = ConfigFromEnv(env(map[string]string{"MC_GID_INDEX": "3", "NCCL_IB_GID_INDEX": "0"}), nil)
	if cfg.GIDIndex != 3 {
		t.Fatalf("MC_GID_INDEX must win, got %d", cfg.GIDIndex)
	}
	cfg = ConfigFromEnv(env(map[string]string{"MC_GID_INDEX": "x"}), nil)
	if cfg.GIDIndex != -1 {
		t.Fatalf("invalid index must be ignored, got %d", cfg.GIDIndex)
	}
}

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestFilters(t *testing.T) {
	cfg := ConfigFromEnv(env(map[string]string{"MC_TE_FILTERS": "mlx5_1, mlx5_3"}), nil)
	topo, err := Build(fakeSnapshot(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := topo.HCAs(); !reflect.DeepEqual(got, []string{"mlx5_1"}) {
		t.Fatalf("HCAs %v", got)
	}
	if got := topo.Matrix["cpu:0"]; len(got[0]) != 0 || !reflect.DeepEqual(got[1], []string{"mlx5_1"}) {
		t.Errorf("cpu:0 = %v", got)
	}
	cfg.Filters = []string{"nope"}
	if _, err := Build(fakeSnapshot(), cfg); !errors.Is(err, ErrNoDevices) {
		t.Fatalf("err %v, want ErrNoDevices", err)
	}
}

func TestCustomTopoJSON(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "topo.json")
	doc := `{"cpu:0": [["mlx5_2"], ["mlx5_0", "gone"]], "cuda:0": [["mlx5_1"], []]}`
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := ConfigFromEnv(env(map[string]string{"MC_CUSTOM_TOPO_JSON": p}), nil)
	topo, err := Build(fakeSnapshot(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := topo.HCAs(), []string{"mlx5_2", "mlx5_0", "mlx5_1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("HCAs %v, want %v (cpu:0 then cuda:0 order, unknown dropped)", got, want)
	}
	if topo.NICs[0].GIDIndex != 1 {
		t.Errorf("custom NIC keeps discovered GID: %+v", topo.NICs[0])
	}
	for _, bad := range []string{`[]`, `{"cpu:0": [["a"]]}`, `{"cpu:0": [["a"],[],[]]}`, `{"cpu:0": [[""],[]]}`, `{"cpu:0": [[1],[]]}`, `{`, `null`} {
		if err := os.WriteFile(p, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Build(fakeSnapshot(), cfg); !errors.Is(err, ErrBadMatrix) {
			t.Errorf("%s: err %v, want ErrBadMatrix", bad, err)
		}
	}
	cfg.CustomTopoPath = filepath.Join(dir, "missing.json")
	if _, err := Build(fakeSnapshot(), cfg); err == nil {
		t.Error("missing file accepted")
	}
}

func TestMatrixJSONRoundTrip(t *testing.T) {
	topo, err := Build(fakeSnapshot(), DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(topo.Matrix)
	if err != nil {
		t.Fatal(err)
	}
	// Mooncake's form: sorted keys, [] for empty lists, never null.
	want := `{"*":[["ib0dev","mlx5_0","mlx5_1","mlx5_2"],[]],"cpu:0":[["mlx5_0"],["ib0dev","mlx5_1","mlx5_2"]],"cpu:1":[["mlx5_1","mlx5_2"],["ib0dev","mlx5_0"]]}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	back, err := ParseMatrix(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, topo.Matrix) {
		t.Fatalf("round trip: %v != %v", back, topo.Matrix)
	}
	var viaDesc map[string][2][]string
	if err := json.Unmarshal(b, &viaDesc); err != nil || len(viaDesc) != 3 {
		t.Fatalf("descriptor type decode: %v %v", viaDesc, err)
	}
	empty, _ := json.Marshal(Matrix{"cpu:0": {nil, nil}})
	if string(empty) != `{"cpu:0":[[],[]]}` {
		t.Errorf("nil lists encode as %s", empty)
	}
}

func TestResolve(t *testing.T) {
	m := Matrix{"cpu:0": {{"b"}, {"a", "zz"}}, "*": {{"a", "b", "c"}, {}}}
	r := m.Resolve([]string{"a", "b", "c"})
	c := r.Lookup("cpu:0")
	if !reflect.DeepEqual(c.Preferred, []int{1}) || !reflect.DeepEqual(c.Available, []int{0}) {
		t.Fatalf("cpu:0 %+v", c)
	}
	if c.Len() != 2 || c.At(0) != 1 || c.At(1) != 0 {
		t.Fatalf("At: %+v", c)
	}
	if got := r.Lookup("cuda:3"); !reflect.DeepEqual(got.Preferred, []int{0, 1, 2}) {
		t.Fatalf("unknown location %+v", got)
	}
	r2 := Matrix{}.Resolve([]string{"x", "y"})
	if got := r2.Lookup("cpu:0"); got.Len() != 2 {
		t.Fatalf("no-star fallback %+v", got)
	}
}

func TestGIDText(t *testing.T) {
	g := v4gid("10.0.0.5")
	s := FormatGID(g)
	if s != "00:00:00:00:00:00:00:00:00:00:ff:ff:0a:00:00:05" {
		t.Fatal(s)
	}
	back, err := ParseGID(s)
	if err != nil || back != g {
		t.Fatal(back, err)
	}
	sys, err := ParseGID("0000:0000:0000:0000:0000:ffff:0a00:0005")
	if err != nil || sys != g {
		t.Fatal(sys, err)
	}
	for _, bad := range []string{"", "00:11", "zz:00:00:00:00:00:00:00:00:00:ff:ff:0a:00:00:05", "0000:0000:0000:0000:0000:ffff:0a00:005"} {
		if _, err := ParseGID(bad); !errors.Is(err, ErrBadGID) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestReadSysfsTree(t *testing.T) {
	root := t.TempDir()
	class := filepath.Join(root, "class")
	dev := filepath.Join(class, "mlx5_7")
	pci := filepath.Join(root, "pci", "0000:3b:00.0")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, v string) {
		must(os.MkdirAll(filepath.Dir(p), 0o755))
		must(os.WriteFile(p, []byte(v+"\n"), 0o644))
	}
	must(os.MkdirAll(filepath.Join(pci, "net", "ens1f0"), 0o755))
	write(filepath.Join(pci, "numa_node"), "1")
	must(os.MkdirAll(dev, 0o755))
	must(os.Symlink(pci, filepath.Join(dev, "device")))
	port := filepath.Join(dev, "ports", "1")
	write(filepath.Join(port, "state"), "4: ACTIVE")
	write(filepath.Join(port, "lid"), "0x11")
	write(filepath.Join(port, "link_layer"), "Ethernet")
	write(filepath.Join(port, "gids", "0"), "fe80:0000:0000:0000:0000:0000:0000:0001")
	write(filepath.Join(port, "gids", "1"), "0000:0000:0000:0000:0000:0000:0000:0000")
	write(filepath.Join(port, "gids", "3"), "0000:0000:0000:0000:0000:ffff:0a00:0005")
	write(filepath.Join(port, "gid_attrs", "types", "3"), "RoCE v2")
	write(filepath.Join(port, "gid_attrs", "ndevs", "3"), "ens1f0")
	write(filepath.Join(dev, "ports", "2", "state"), "1: DOWN")

	d, err := ReadSysfsDevice(class, "mlx5_7")
	if err != nil {
		t.Fatal(err)
	}
	if d.NUMANode != 1 || !reflect.DeepEqual(d.Netdevs, []string{"ens1f0"}) || len(d.Ports) != 2 {
		t.Fatalf("%+v", d)
	}
	p := d.Ports[0]
	if !p.Active || p.LID != 17 || p.LinkLayer != "Ethernet" || len(p.GIDs) != 2 {
		t.Fatalf("port %+v", p)
	}
	if p.GIDs[1] != (GIDEntry{Index: 3, GID: v4gid("10.0.0.5"), Type: GIDTypeRoCEv2, Netdev: "ens1f0"}) {
		t.Fatalf("gid %+v", p.GIDs[1])
	}
	if d.Ports[1].Active {
		t.Fatal("DOWN port reported active")
	}
	if _, err := ReadSysfsDevice(class, "missing"); err == nil {
		t.Fatal("missing device accepted")
	}
	write(filepath.Join(root, "node", "node1", "x"), "")
	write(filepath.Join(root, "node", "node0", "x"), "")
	write(filepath.Join(root, "node", "possible"), "0-1")
	if got := ReadNUMANodes(filepath.Join(root, "node")); !reflect.DeepEqual(got, []int{0, 1}) {
		t.Fatalf("nodes %v", got)
	}
}

// On a machine without RDMA the system source must give a clean
// ErrNoDevices, not a failure of discovery itself.
func TestSystemDiscovery(t *testing.T) {
	topo, err := Discover(context.Background(), System(nil), DefaultConfig())
	if _, statErr := os.Stat(InfinibandClassDir); statErr != nil || err == nil {
		if !errors.Is(err, ErrNoDevices) {
			t.Fatalf("no RDMA here: got %v, want ErrNoDevices", err)
		}
		return
	}
	if len(topo.NICs) == 0 {
		t.Fatal("topology without NICs and without error")
	}
}

func TestDiscoverPropagatesSourceErrors(t *testing.T) {
	boom := errors.New("boom")
	if _, err := Discover(context.Background(), &Fake{Err: boom}, DefaultConfig()); !errors.Is(err, boom) {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Discover(ctx, &Fake{Snap: fakeSnapshot()}, DefaultConfig()); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}
