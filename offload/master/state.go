package master

import (
	"time"
)

// owner is one mounted offload owner.
type owner struct {
	id       string
	endpoint string
	segment  string
	enable   bool
	capacity uint64
	used     uint64 // sum of its replica sizes
	reserved uint64 // sum of its open put reservations
	lastSeen time.Time
	keys     map[string]struct{} // storage keys it holds a replica of
}

func (o *owner) free() uint64 {
	if o.used+o.reserved >= o.capacity {
		return 0
	}
	return o.capacity - o.used - o.reserved
}

// object is one (tenant, key) with at least one replica.
type object struct {
	tenant     string
	key        []byte
	replicas   []replica
	leaseUntil time.Time
}

type replica struct {
	owner *owner
	size  uint64
}

// reservation is a placed put awaiting the owner's notify.
type reservation struct {
	owner    *owner
	size     uint64
	deadline time.Time
}

// storageKey is Mooncake's scoped key: tenant, NUL, key.
func storageKey(tenant string, key []byte) string {
	return string(appendStorageKey(nil, tenant, key))
}

// appendStorageKey appends the scoped key to buf; map lookups with
// m[string(buf)] then do not allocate.
func appendStorageKey(buf []byte, tenant string, key []byte) []byte {
	buf = append(buf, tenant...)
	buf = append(buf, 0)
	return append(buf, key...)
}

// expired reports whether o missed its TTL at now.
func (s *Service) expired(o *owner, now time.Time) bool {
	return now.Sub(o.lastSeen) > s.opts.ClientTTL
}

// expireOwnersLocked drops every owner whose TTL ran out. Needs s.mu.
func (s *Service) expireOwnersLocked(now time.Time) {
	for _, o := range s.owners {
		if s.expired(o, now) {
			n := s.dropOwnerLocked(o)
			s.m.ownerExpirations.Inc()
			s.log.Warn("master: owner expired", "owner", o.id, "endpoint", o.endpoint, "last_ping", o.lastSeen, "replicas_dropped", n)
		}
	}
}

// dropOwnerLocked forgets o, its replicas (objects left with none
// disappear) and its reservations. It returns the replicas dropped.
func (s *Service) dropOwnerLocked(o *owner) int {
	n := 0
	for sk := range o.keys {
		obj := s.objects[sk]
		if obj == nil {
			continue
		}
		for i, r := range obj.replicas {
			if r.owner == o {
				obj.replicas = append(obj.replicas[:i], obj.replicas[i+1:]...)
				n++
				break
			}
		}
		if len(obj.replicas) == 0 {
			delete(s.objects, sk)
		}
	}
	for sk, r := range s.puts {
		if r.owner == o {
			delete(s.puts, sk)
		}
	}
	delete(s.owners, o.id)
	return n
}

// expirePutsLocked drops reservations past their deadline. Needs s.mu.
func (s *Service) expirePutsLocked(now time.Time) {
	for sk, r := range s.puts {
		if now.After(r.deadline) {
			s.dropPutLocked(sk, r)
			s.log.Info("master: put reservation timed out", "owner", r.owner.id, "size", r.size)
		}
	}
}

func (s *Service) dropPutLocked(sk string, r *reservation) {
	r.owner.reserved -= r.size
	delete(s.puts, sk)
}

// addReplicaLocked records that o stores sk with size, creating the object
// if needed, or updates o's existing replica.
func (s *Service) addReplicaLocked(o *owner, tenant string, key []byte, sk string, size uint64) {
	obj := s.objects[sk]
	if obj == nil {
		obj = &object{tenant: tenant, key: append([]byte(nil), key...)}
		s.objects[sk] = obj
	}
	for i := range obj.replicas {
		if r := &obj.replicas[i]; r.owner == o {
			o.used = o.used - r.size + size
			r.size = size
			return
		}
	}
	obj.replicas = append(obj.replicas, replica{owner: o, size: size})
	o.used += size
	o.keys[sk] = struct{}{}
}

// removeObjectLocked forgets obj and all its replicas.
func (s *Service) removeObjectLocked(sk string, obj *object) {
	for _, r := range obj.replicas {
		r.owner.used -= r.size
		delete(r.owner.keys, sk)
	}
	delete(s.objects, sk)
}

// place picks the live, offloading owner with the most free bytes that has
// room for size; ties go to the smaller owner id so placement is
// deterministic. Picking the emptiest owner spreads keys over owners.
func (s *Service) placeLocked(size uint64) *owner {
	var best *owner
	for _, o := range s.owners {
		if !o.enable || o.free() < size || (size == 0 && o.capacity == 0) {
			continue
		}
		if best == nil || o.free() > best.free() || (o.free() == best.free() && o.id < best.id) {
			best = o
		}
	}
	return best
}
