package metadata

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// Store is a central metadata service (etcd, redis or an HTTP metadata
// server) holding the keys Mooncake's engines publish when they do not
// run in P2PHANDSHAKE mode: where each engine's handshake daemon listens
// (RPCMetaKey) and each segment's descriptor (SegmentKey). Values are
// JSON text; a Store moves them verbatim. Implementations are safe for
// concurrent use.
type Store interface {
	// Get returns the value stored under key. A missing key is an error
	// wrapping ErrNotFound; a store that cannot be reached or answers
	// badly gives an error wrapping ErrStore.
	Get(ctx context.Context, key string) ([]byte, error)
	// Put stores value under key, replacing any previous value. The
	// store does not retain value.
	Put(ctx context.Context, key string, value []byte) error
	// Delete removes key. Deleting a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// Close releases the store's connections. It is idempotent; calls
	// after Close fail with an error wrapping ErrStore.
	Close() error
}

// Errors of central metadata stores.
var (
	// ErrNotFound means the store holds no value under the key.
	ErrNotFound = errors.New("metadata key not found")
	// ErrStore means the store could not be reached, refused the request
	// or answered with something that is not a value.
	ErrStore = errors.New("metadata store failed")
	// ErrBadServer means a metadata server string is not one of the
	// forms ParseServer accepts.
	ErrBadServer = errors.New("invalid metadata server")
)

// P2PHandshake is the metadata server string of P2PHANDSHAKE mode: no
// store; descriptors come from each peer's handshake daemon.
const P2PHandshake = "P2PHANDSHAKE"

// ServerKind is the kind of metadata service a server string names.
type ServerKind string

// The metadata service kinds (Mooncake's plugin names).
const (
	KindP2P   ServerKind = "p2p"
	KindEtcd  ServerKind = "etcd"
	KindRedis ServerKind = "redis"
	KindHTTP  ServerKind = "http"
)

// Server is a parsed metadata server string.
type Server struct {
	Kind ServerKind
	// Endpoints are the etcd endpoints ("host:port", at least one) or the
	// single redis "host:port".
	Endpoints []string
	// URL is the HTTP metadata endpoint ("http://host:port/path"), the
	// key being passed as the "key" query parameter.
	URL string
}

// ParseServer parses a metadata server string as Mooncake does:
// "P2PHANDSHAKE" (or ""); "etcd://h:p[,h:p...]"; a bare "h:p[,h:p...]",
// taken as etcd; "redis://h:p"; "http://h:p/path" (or https). Anything
// else is an error wrapping ErrBadServer.
func ParseServer(s string) (Server, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == P2PHandshake {
		return Server{Kind: KindP2P}, nil
	}
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		scheme, rest = "etcd", s
	}
	switch strings.ToLower(scheme) {
	case "etcd":
		eps, err := hostPorts(s, rest)
		if err != nil {
			return Server{}, err
		}
		return Server{Kind: KindEtcd, Endpoints: eps}, nil
	case "redis":
		eps, err := hostPorts(s, strings.TrimSuffix(rest, "/"))
		if err != nil {
			return Server{}, err
		}
		if len(eps) != 1 {
			return Server{}, fmt.Errorf("%w: %q: redis takes one host:port", ErrBadServer, s)
		}
		return Server{Kind: KindRedis, Endpoints: eps}, nil
	case "http", "https":
		u, err := url.Parse(s)
		if err != nil || u.Host == "" {
			return Server{}, fmt.Errorf("%w: %q is not an http URL with a host", ErrBadServer, s)
		}
		return Server{Kind: KindHTTP, URL: s}, nil
	default:
		return Server{}, fmt.Errorf("%w: %q: unknown scheme %q (want etcd, redis, http or %s)", ErrBadServer, s, scheme, P2PHandshake)
	}
}

// hostPorts splits a comma-separated list of host:port endpoints.
func hostPorts(orig, list string) ([]string, error) {
	var eps []string
	for _, ep := range strings.Split(list, ",") {
		ep = strings.TrimSpace(ep)
		if ep == "" {
			continue
		}
		h, p, err := net.SplitHostPort(ep)
		if err != nil || h == "" || p == "" {
			return nil, fmt.Errorf("%w: %q: endpoint %q is not host:port", ErrBadServer, orig, ep)
		}
		eps = append(eps, ep)
	}
	if len(eps) == 0 {
		return nil, fmt.Errorf("%w: %q names no endpoint", ErrBadServer, orig)
	}
	return eps, nil
}

// Keys builds the store keys of one cluster, as Mooncake does:
// "mooncake/" + the cluster ID (MC_METADATA_CLUSTER_ID, with a "/"
// appended when missing) + "rpc_meta/<server name>" or
// "ram/<segment name>". The zero Keys is the default cluster.
type Keys struct {
	prefix string
}

// NewKeys returns the keys of the cluster with the given ID ("" is the
// default cluster).
func NewKeys(clusterID string) Keys {
	if clusterID != "" && !strings.HasSuffix(clusterID, "/") {
		clusterID += "/"
	}
	return Keys{prefix: "mooncake/" + clusterID}
}

func (k Keys) base() string {
	if k.prefix == "" {
		return "mooncake/"
	}
	return k.prefix
}

// RPCMeta is the key of the RPC location of the engine named server.
func (k Keys) RPCMeta(server string) string { return k.base() + "rpc_meta/" + server }

// Segment is the key of the descriptor of the segment name. A name that
// already contains "/" is taken as a path under the cluster prefix.
func (k Keys) Segment(name string) string {
	if strings.Contains(name, "/") {
		return k.base() + name
	}
	return k.base() + "ram/" + name
}

// RPCMetaDesc is the value under an RPCMeta key: where the engine's
// handshake daemon listens.
type RPCMetaDesc struct {
	IPOrHostName string `json:"ip_or_host_name"`
	RPCPort      int    `json:"rpc_port"`
}

// Addr is the daemon's "host:port".
func (d RPCMetaDesc) Addr() string { return SegmentName(d.IPOrHostName, d.RPCPort) }

// DecodeRPCMeta parses and checks an RPCMeta value: a host and a port in
// 1..65535. Errors wrap ErrMalformedJSON or ErrInvalidDescriptor.
func DecodeRPCMeta(b []byte) (RPCMetaDesc, error) {
	var d RPCMetaDesc
	if err := json.Unmarshal(b, &d); err != nil {
		return RPCMetaDesc{}, fmt.Errorf("%w: rpc_meta: %w", ErrMalformedJSON, err)
	}
	if strings.TrimSpace(d.IPOrHostName) == "" || d.RPCPort < 1 || d.RPCPort > 65535 {
		return RPCMetaDesc{}, fmt.Errorf("%w: rpc_meta %s: want a host and a port in 1..65535", ErrInvalidDescriptor, b)
	}
	return d, nil
}

// AppendRPCMeta appends the JSON of d to dst, with Mooncake's field names.
func AppendRPCMeta(dst []byte, d RPCMetaDesc) []byte {
	b, _ := json.Marshal(d) // a struct of a string and an int: cannot fail
	return append(dst, b...)
}
