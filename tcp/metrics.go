package tcp

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics holds the transport's collectors with their label children
// resolved once, so that counting on the data path does not allocate.
type metrics struct {
	bytes    [2][2]prometheus.Counter // [role][op]
	requests [2][2]prometheus.Counter
	failures [2][2]prometheus.Counter
	inflight prometheus.Gauge
	latency  [2]prometheus.Observer // client task latency by op
}

const (
	roleClient = 0
	roleServer = 1
)

func opIndex(write bool) int {
	if write {
		return 1
	}
	return 0
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	bytes := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "ferry", Subsystem: "tcp", Name: "bytes_total",
		Help: "Payload bytes moved by the TCP transport, by role (client, server) and op (read, write).",
	}, []string{"role", "op"})
	reqs := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "ferry", Subsystem: "tcp", Name: "requests_total",
		Help: "Requests finished by the TCP transport (client: tasks; server: session headers served).",
	}, []string{"role", "op"})
	fails := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "ferry", Subsystem: "tcp", Name: "failures_total",
		Help: "Requests that failed (client: tasks finished with an error; server: rejected or broken requests).",
	}, []string{"role", "op"})
	infl := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "ferry", Subsystem: "tcp", Name: "inflight_tasks",
		Help: "Client tasks submitted and not yet finished.",
	})
	lat := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "ferry", Subsystem: "tcp", Name: "task_duration_seconds",
		Help:    "Client task latency from Submit to completion.",
		Buckets: prometheus.ExponentialBuckets(10e-6, 2.5, 14),
	}, []string{"op"})
	var err error
	if bytes, err = register(reg, bytes); err != nil {
		return nil, err
	}
	if reqs, err = register(reg, reqs); err != nil {
		return nil, err
	}
	if fails, err = register(reg, fails); err != nil {
		return nil, err
	}
	if infl, err = register(reg, infl); err != nil {
		return nil, err
	}
	if lat, err = register(reg, lat); err != nil {
		return nil, err
	}
	m := &metrics{inflight: infl}
	roles := [2]string{"client", "server"}
	ops := [2]string{"read", "write"}
	for r := range 2 {
		for o := range 2 {
			m.bytes[r][o] = bytes.WithLabelValues(roles[r], ops[o])
			m.requests[r][o] = reqs.WithLabelValues(roles[r], ops[o])
			m.failures[r][o] = fails.WithLabelValues(roles[r], ops[o])
		}
	}
	for o := range 2 {
		m.latency[o] = lat.WithLabelValues(ops[o])
	}
	return m, nil
}

// register adds c to reg; when an identical collector is already there
// (another transport on the same registry) it returns that one instead.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if reg == nil {
		return c, nil
	}
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if ex, ok := are.ExistingCollector.(C); ok {
				return ex, nil
			}
		}
		return c, err
	}
	return c, nil
}
