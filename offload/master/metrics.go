package master

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	hits, misses     prometheus.Counter
	ownerExpirations prometheus.Counter
}

// newMetrics builds the service's metrics and registers them with reg
// (when not nil). Gauges read the state under the service lock at scrape
// time.
func newMetrics(s *Service, reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		hits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ferry_master_replica_hits_total", Help: "Keys BatchGetReplicaList found.",
		}),
		misses: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ferry_master_replica_misses_total", Help: "Keys BatchGetReplicaList did not find.",
		}),
		ownerExpirations: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ferry_master_owner_expirations_total", Help: "Owners forgotten after missing pings for the client TTL.",
		}),
	}
	if reg == nil {
		return m, nil
	}
	sum := func(f func(*owner) uint64) func() float64 {
		return func() float64 {
			s.mu.Lock()
			defer s.mu.Unlock()
			var t uint64
			for _, o := range s.owners {
				t += f(o)
			}
			return float64(t)
		}
	}
	cs := []prometheus.Collector{
		m.hits, m.misses, m.ownerExpirations,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "ferry_master_offload_used_bytes", Help: "Bytes of LOCAL_DISK replicas over all mounted owners.",
		}, sum(func(o *owner) uint64 { return o.used })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "ferry_master_offload_capacity_bytes", Help: "Capacity reported by all mounted owners.",
		}, sum(func(o *owner) uint64 { return o.capacity })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "ferry_master_offload_reserved_bytes", Help: "Bytes reserved by puts awaiting the owner's notify.",
		}, sum(func(o *owner) uint64 { return o.reserved })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "ferry_master_owners", Help: "Mounted offload owners.",
		}, sum(func(*owner) uint64 { return 1 })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "ferry_master_keys", Help: "Keys with at least one replica.",
		}, func() float64 {
			s.mu.Lock()
			defer s.mu.Unlock()
			return float64(len(s.objects))
		}),
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("master: register metrics: %w", err)
		}
	}
	return m, nil
}
