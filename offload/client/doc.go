// Package client is the offload requester: it reads objects that offload
// owners keep in object storage, and writes new ones through them.
//
// Get asks the master where each key lives (BatchGetReplicaList), groups
// the keys by owner, asks each owner to load its keys into staging
// (BatchGetOffloadObject, split so every RPC fits the owner's staging),
// READs the bytes with the transfer engine straight into the caller's
// buffers, and always releases the owner's batch. A transfer is abandoned
// at the lease deadline, counted from before the owner RPC was sent, so
// its bytes are never trusted after the owner may have reused the slots.
//
// Put asks the master to place each key (BatchPutStart), has the chosen
// owner reserve staging slots, WRITEs the bytes into them and commits
// (the owner uploads and records the keys at the master).
//
// Every master and owner RPC is bounded by MC_RPC_TIMEOUT_MS, and
// connection set-up by MC_RPC_CONNECT_TIMEOUT_MS, so a dead owner costs at
// most those. Results carry per-stage timings for percentiles.
package client
