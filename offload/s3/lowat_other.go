//go:build !linux

package s3

import (
	"context"
	"net"
)

// dialLowat is the plain dialer where SO_RCVLOWAT tuning is not used.
func dialLowat(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return d.DialContext
}
