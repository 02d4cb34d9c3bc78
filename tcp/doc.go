// Package tcp is Ferry's TCP transport. It speaks Mooncake's TCP data
// protocol (the 24-byte session header and the v2 status frame) on a data
// port of its own, so a Ferry node can serve and be served by Mooncake
// Transfer Engine nodes in P2PHANDSHAKE mode.
//
// Server side: every accepted connection runs its requests one after the
// other, checks each [addr, addr+size) against the registered regions and
// moves the payload straight between the socket and registered memory.
//
// Client side (beyond Mooncake): up to MC_TCP_LANES_PER_PEER persistent
// connections ("lanes") per peer, opened on demand; each lane pipelines many
// requests (headers and payloads back to back, responses read in order by
// one reader goroutine per lane); large requests are split into chunks that
// are spread over the lanes. The data path allocates nothing per request in
// steady state. Before a lane sends on a connection that has been idle it
// peeks at the socket: a connection the peer closed meanwhile (a restart)
// is replaced first, so the next request after a restart does not fail.
// A peer that dies while requests are outstanding fails them with
// transport.ErrPeerUnreachable; the next request dials again. A peer that
// goes FERRY_TCP_IDLE_TIMEOUT_SEC without requests is dropped (its
// connections closed, its lanes' goroutines ended) and made afresh by the
// next request, so peers that went away do not pile up.
//
// Environment (read by New; options override it):
//
//	MC_TCP_PROTO=1               use the v1 framing (no status frames) as client
//	MC_TCP_LANES_PER_PEER=4      lanes per peer, 1..16 (default: 4, or
//	                             GOMAXPROCS when smaller)
//	MC_TCP_STATUS_TIMEOUT_SEC=30 how long a peer may stay silent while a
//	                             request is outstanding
//	MC_MIN_RPC_PORT / MC_MAX_RPC_PORT = 15000 / 17000  data port range
//	FERRY_TCP_IDLE_TIMEOUT_SEC=120  drop a peer idle this long (0: never)
//	FERRY_TCP_CHUNK_BYTES=1MiB   requests larger than this are split
//	FERRY_TCP_INFLIGHT_PER_LANE=64  requests in flight per lane
//	FERRY_TCP_INFLIGHT_BYTES_PER_LANE=4MiB  payload bytes in flight per lane
package tcp
