// Package topology discovers the RDMA NICs of this machine and builds the
// NIC priority matrix that Ferry publishes in its segment descriptor, with
// Mooncake's rules and environment variables.
//
// Discovery is split in two: a Source returns a raw Snapshot (RDMA devices
// with their ports and GID tables, network interfaces with addresses and
// routes, NUMA nodes), and Build turns a Snapshot plus a Config into a
// Topology (the HCA list, one chosen GID per NIC, the priority matrix).
// System returns the Source that reads sysfs (through rdmamap) and netlink;
// Fake is a Source for tests.
//
// On a machine without RDMA devices, Discover fails with an error that
// wraps ErrNoDevices.
package topology

import "errors"

// Sentinel errors. Functions wrap them with %w and add what was wrong.
var (
	// ErrNoDevices means no usable RDMA device was found (none present,
	// none with an active port, or all filtered out by MC_TE_FILTERS).
	ErrNoDevices = errors.New("no RDMA devices")
	// ErrBadMatrix means a priority matrix (custom JSON file or a peer's
	// descriptor) is malformed.
	ErrBadMatrix = errors.New("malformed priority matrix")
	// ErrBadGID means a GID string is not 16 bytes of hex joined by ':'.
	ErrBadGID = errors.New("malformed GID")
)
