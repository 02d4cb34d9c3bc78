// Package metadata holds Ferry's Mooncake-compatible metadata wire formats
// and the P2PHANDSHAKE daemon and client: the handshake frames (u64
// little-endian length that counts the type byte, one type byte, JSON), the
// segment descriptor JSON and the RDMA connection handshake JSON.
package metadata
