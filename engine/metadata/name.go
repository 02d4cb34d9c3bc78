package metadata

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// ParseServerName splits a Mooncake local_server_name, "host[:port]", into
// its host. The port, if any, is ignored (as Mooncake does in P2PHANDSHAKE
// mode). IPv6 hosts may be bracketed ("[::1]:80", "[::1]") or bare ("::1").
func ParseServerName(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", fmt.Errorf("%w: empty server name", ErrInvalidName)
	}
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		return s[1 : len(s)-1], nil
	}
	if h, _, err := net.SplitHostPort(s); err == nil {
		if h == "" {
			return "", fmt.Errorf("%w: %q has no host", ErrInvalidName, s)
		}
		return h, nil
	}
	if strings.HasPrefix(s, "[") || strings.HasSuffix(s, "]") {
		return "", fmt.Errorf("%w: %q has unbalanced brackets", ErrInvalidName, s)
	}
	return s, nil
}

// SplitSegmentName splits a P2PHANDSHAKE segment name "host:port" into
// host and handshake port. A leading "/" is stripped, as openSegment does.
func SplitSegmentName(name string) (string, int, error) {
	name = strings.TrimLeft(name, "/")
	h, p, err := net.SplitHostPort(name)
	if err != nil {
		return "", 0, fmt.Errorf("%w: %q: %v", ErrInvalidName, name, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port <= 0 || port > 65535 || h == "" {
		return "", 0, fmt.Errorf("%w: %q: want host:port with a port in 1..65535", ErrInvalidName, name)
	}
	return h, port, nil
}

// SegmentName joins host and port into a segment name ("[v6]:port" for
// IPv6 hosts).
func SegmentName(host string, port int) string {
	return net.JoinHostPort(host, strconv.Itoa(port))
}
