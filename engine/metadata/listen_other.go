//go:build !linux

package metadata

import (
	"net"
	"strconv"
)

// listenTCP binds host:port. The backlog is the system default here.
func listenTCP(host string, port, _ int) (net.Listener, error) {
	return net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
}
