//go:build linux

package metadata

import (
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// listenTCP binds host:port and listens with the given backlog (Go's
// net.Listen always uses the system maximum). host "" binds every IPv4
// address, as Mooncake binds INADDR_ANY.
func listenTCP(host string, port, backlog int) (net.Listener, error) {
	var sa unix.Sockaddr
	family := unix.AF_INET
	ip := net.IPv4zero
	if host != "" {
		ip = net.ParseIP(host)
		if ip == nil {
			return nil, fmt.Errorf("%w: bind host %q is not an IP address", ErrInvalidName, host)
		}
	}
	if ip4 := ip.To4(); ip4 != nil {
		s := &unix.SockaddrInet4{Port: port}
		copy(s.Addr[:], ip4)
		sa = s
	} else {
		family = unix.AF_INET6
		s := &unix.SockaddrInet6{Port: port}
		copy(s.Addr[:], ip.To16())
		sa = s
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("setsockopt SO_REUSEADDR: %w", err)
	}
	if err := unix.Bind(fd, sa); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("bind port %d: %w", port, err)
	}
	if err := unix.Listen(fd, backlog); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("listen port %d: %w", port, err)
	}
	f := os.NewFile(uintptr(fd), "handshake-listener")
	l, err := net.FileListener(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("listener for port %d: %w", port, err)
	}
	return l, nil
}
