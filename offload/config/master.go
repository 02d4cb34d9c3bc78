package config

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// ErrMasterAddress means MOONCAKE_MASTER (or --master, or the JSON
// master_server_address) is malformed; the message names what is wrong.
var ErrMasterAddress = errors.New("invalid master address")

// EtcdScheme prefixes a master address that names etcd endpoints instead
// of a master: "etcd://h:p[,h:p...][/cluster_id]". Clients then follow
// whichever master etcd's election made leader.
const EtcdScheme = "etcd://"

// MasterAddr is a parsed master address.
type MasterAddr struct {
	// Direct is the gRPC target of a single master (host:port, or any
	// target grpc.NewClient accepts), passed on unchanged. Empty when
	// Etcd is set.
	Direct string
	// Etcd lists the etcd endpoints (host:port) of an HA deployment.
	Etcd []string
	// ClusterID is the key namespace the masters were started with
	// (--cluster_id); "" is the default namespace.
	ClusterID string
}

// HA reports whether the address names etcd rather than one master.
func (m MasterAddr) HA() bool { return len(m.Etcd) > 0 }

// ParseMaster parses a master address. Accepted forms:
//
//	host:port                       one master, dialled directly (as before HA)
//	etcd://h:p[,h:p...]             the elected master of the default cluster
//	etcd://h:p[,h:p...]/cluster_id  the elected master of cluster_id
//
// Endpoints may be separated by ',' or ';' (Mooncake's separator). Any
// other scheme ("redis://", "http://") is rejected with ErrMasterAddress,
// as is an empty address. A plain address is not checked further: gRPC
// reports a bad target when it is dialled, exactly as before.
func ParseMaster(s string) (MasterAddr, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return MasterAddr{}, fmt.Errorf("%w: empty (set MOONCAKE_MASTER to host:port or etcd://host:port)", ErrMasterAddress)
	}
	// Index s itself: lower-casing can change the length of bytes that
	// are not UTF-8.
	if len(s) < len(EtcdScheme) || !strings.EqualFold(s[:len(EtcdScheme)], EtcdScheme) {
		if i := strings.Index(s, "://"); i > 0 {
			switch strings.ToLower(s[:i]) {
			case "dns", "unix", "unix-abstract", "passthrough", "ipv4", "ipv6":
				return MasterAddr{Direct: s}, nil
			}
			return MasterAddr{}, fmt.Errorf("%w: %q: scheme %q is not supported (use host:port or etcd://host:port[,host:port][/cluster_id])", ErrMasterAddress, s, s[:i])
		}
		return MasterAddr{Direct: s}, nil
	}
	rest := s[len(EtcdScheme):]
	hosts, cluster, _ := strings.Cut(rest, "/")
	cluster = strings.Trim(cluster, "/")
	var m MasterAddr
	m.ClusterID = cluster
	for _, h := range strings.FieldsFunc(hosts, func(r rune) bool { return r == ',' || r == ';' }) {
		h = strings.TrimSpace(h)
		host, port, err := net.SplitHostPort(h)
		if err != nil {
			return MasterAddr{}, fmt.Errorf("%w: %q: etcd endpoint %q: want host:port", ErrMasterAddress, s, h)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || host == "" {
			return MasterAddr{}, fmt.Errorf("%w: %q: etcd endpoint %q: want host:port with a port in 1..65535", ErrMasterAddress, s, h)
		}
		m.Etcd = append(m.Etcd, h)
	}
	if len(m.Etcd) == 0 {
		return MasterAddr{}, fmt.Errorf("%w: %q: no etcd endpoint after %s", ErrMasterAddress, s, EtcdScheme)
	}
	return m, nil
}
