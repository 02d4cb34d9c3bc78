package topology

import (
	"fmt"
	"net/netip"

	"github.com/ferrylabs/ferry/rdma/verbs"
)

// FormatGID writes g the way Mooncake publishes it: 16 bytes of lowercase
// hex joined by ':' (verbs.GID.String).
func FormatGID(g [16]byte) string { return verbs.GID(g).String() }

// sysfsGIDLen is the length of the sysfs form: eight groups of four hex
// digits joined by ':'.
const sysfsGIDLen = 8*5 - 1

// ParseGID reads a GID in FormatGID's form with verbs.ParseGID
// (upper-case hex is accepted). It also accepts the sysfs form (eight
// groups of four hex digits). Any other text is an error wrapping
// ErrBadGID.
func ParseGID(s string) ([16]byte, error) {
	text := s
	if len(s) == sysfsGIDLen {
		// Split each group into two bytes: "abcd:..." -> "ab:cd:...".
		var b [verbs.GIDTextLen]byte
		for i := range 8 {
			grp := s[5*i : 5*i+4]
			if i < 7 && s[5*i+4] != ':' {
				return [16]byte{}, fmt.Errorf("%w: %q", ErrBadGID, s)
			}
			o := 6 * i
			b[o], b[o+1], b[o+2], b[o+3], b[o+4] = grp[0], grp[1], ':', grp[2], grp[3]
			if i < 7 {
				b[o+5] = ':'
			}
		}
		text = string(b[:])
	}
	g, err := verbs.ParseGID(text)
	if err != nil {
		return [16]byte{}, fmt.Errorf("%w: %q", ErrBadGID, s)
	}
	return g, nil
}

// GID ranking tiers, best first (Mooncake's rdma_gid_probe order). Tier 0
// means "not eligible".
const (
	TierRoutableNetdev = 1 + iota
	TierRoutable
	TierPrivateNetdev
	TierDegradedNetdev
	TierPrivate
	TierDegraded
	TierFirstNonNull
)

// addrClass is what a GID's address says about reachability.
type addrClass int

const (
	classRoutable addrClass = iota
	classPrivate
	classDegraded
)

var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// overlayKinds are netlink link types whose addresses are not a real
// fabric: traffic on them is tunnelled or bridged in software.
var overlayKinds = map[string]bool{
	"vxlan": true, "geneve": true, "bridge": true, "veth": true, "tun": true,
	"tuntap": true, "ipip": true, "gre": true, "gretap": true, "ip6tnl": true,
	"sit": true, "wireguard": true, "vti": true, "dummy": true,
}

// classify says how good an address is for a GID. The netdev's kind
// decides overlay-ness.
func classify(a netip.Addr, nd *Netdev) addrClass {
	a = a.Unmap()
	if nd != nil && overlayKinds[nd.Kind] {
		return classDegraded
	}
	switch {
	case a.IsLinkLocalUnicast(), a.IsLoopback(), !a.IsGlobalUnicast():
		return classDegraded
	case a.Is4() && cgnat.Contains(a):
		return classDegraded
	case a.Is4() && a.IsPrivate():
		return classPrivate
	}
	return classRoutable
}

// gidTier ranks one GID entry of a port with the given link layer.
// Only RoCE v2 entries (or any entry on InfiniBand) get tiers 1-6; every
// other non-null entry gets TierFirstNonNull.
func gidTier(e GIDEntry, linkLayer string, netdevs map[string]Netdev) int {
	if e.GID == ([16]byte{}) {
		return 0
	}
	ib := linkLayer == "InfiniBand"
	if !ib && e.Type != GIDTypeRoCEv2 {
		return TierFirstNonNull
	}
	var nd *Netdev
	if n, ok := netdevs[e.Netdev]; ok && e.Netdev != "" {
		nd = &n
	}
	hasNetdev := e.Netdev != ""
	c := classify(netip.AddrFrom16(e.GID), nd)
	switch {
	case c == classRoutable && hasNetdev:
		return TierRoutableNetdev
	case c == classRoutable:
		return TierRoutable
	case c == classPrivate && hasNetdev:
		return TierPrivateNetdev
	case c == classDegraded && hasNetdev:
		return TierDegradedNetdev
	case c == classPrivate:
		return TierPrivate
	default:
		return TierDegraded
	}
}

// bestGID picks the GID to use on a port: the entry with the best tier,
// the lowest index among equals. ok is false when the table has no
// non-null entry.
func bestGID(p Port, netdevs map[string]Netdev) (e GIDEntry, tier int, ok bool) {
	for _, g := range p.GIDs {
		t := gidTier(g, p.LinkLayer, netdevs)
		if t == 0 {
			continue
		}
		if !ok || t < tier || (t == tier && g.Index < e.Index) {
			e, tier, ok = g, t, true
		}
	}
	return e, tier, ok
}

// RankGIDs picks the best entry of a GID table with the 7-tier ranking
// (lowest index among equals). linkLayer is the port's ("InfiniBand" or
// "Ethernet"); netdevs may be nil. ok is false when every entry is null.
func RankGIDs(entries []GIDEntry, linkLayer string, netdevs map[string]Netdev) (best GIDEntry, tier int, ok bool) {
	return bestGID(Port{LinkLayer: linkLayer, GIDs: entries}, netdevs)
}
