// Package master is Ferry's offload master: the registry of LOCAL_DISK
// replicas that offload owners keep in object storage, served over gRPC
// (offloadv1.MasterService).
//
// State is (tenant, key) -> replicas, plus one record per mounted owner
// with its endpoint, segment name, capacity, used bytes (its replicas) and
// reserved bytes (puts placed on it and not yet reported). Owners stay
// mounted while they ping within the client TTL; an expired owner is
// forgotten with its replicas, and its next Ping answers NOT_MOUNTED so it
// mounts again and rescans its objects (NotifyOffloadSuccess without a
// reservation re-adopts them). The master never touches object bytes.
//
// Service implements the RPCs and is safe for concurrent use; Server binds
// it to a listener, runs the expiry sweeper and serves /metrics.
package master
