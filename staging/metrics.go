package staging

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	reg        prometheus.Registerer
	collectors []prometheus.Collector
}

// newMetrics registers the arena's gauges. They read the arena's atomics at
// scrape time, so the allocation path does no metric work.
func newMetrics(a *Arena, reg prometheus.Registerer) (*metrics, error) {
	labels := prometheus.Labels{"arena": a.name}
	pinned := float64(0)
	if a.pinned {
		pinned = float64(len(a.mem))
	}
	cs := []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "ferry_staging_pinned_bytes", Help: "Bytes of staging memory locked in RAM.", ConstLabels: labels,
		}, func() float64 { return pinned }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "ferry_staging_size_bytes", Help: "Size of the staging arena in bytes.", ConstLabels: labels,
		}, func() float64 { return float64(len(a.mem)) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "ferry_staging_used_bytes", Help: "Bytes of the staging arena held by allocated slots.", ConstLabels: labels,
		}, func() float64 { return float64(a.used.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "ferry_staging_slots", Help: "Allocated staging slots.", ConstLabels: labels,
		}, func() float64 { return float64(a.slots.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "ferry_staging_leases", Help: "Live staging leases.", ConstLabels: labels,
		}, func() float64 { return float64(a.Leases()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "ferry_staging_lease_expirations_total", Help: "Staging leases freed because their TTL ran out.", ConstLabels: labels,
		}, func() float64 { return float64(a.leases.expired.Load()) }),
	}
	m := &metrics{reg: reg}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			m.unregister()
			return nil, fmt.Errorf("staging: register metrics for arena %q: %w", a.name, err)
		}
		m.collectors = append(m.collectors, c)
	}
	return m, nil
}

func (m *metrics) unregister() {
	for _, c := range m.collectors {
		m.reg.Unregister(c)
	}
	m.collectors = nil
}
