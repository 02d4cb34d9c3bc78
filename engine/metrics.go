package engine

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the engine's Prometheus collectors. Per-transport children
// are resolved once at New, so the hot path does no label lookups.
type metrics struct {
	bytes     *prometheus.CounterVec
	requests  *prometheus.CounterVec
	failures  *prometheus.CounterVec
	failovers *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	inflight  *prometheus.GaugeVec
}

// tmetrics are one transport's children.
type tmetrics struct {
	readBytes, writeBytes prometheus.Counter
	requests, failures    prometheus.Counter
	failovers             prometheus.Counter
	latency               prometheus.Observer
	inflight              prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "ferry", Subsystem: "engine", Name: "bytes_total",
			Help: "Bytes moved by completed transfers, by transport and direction.",
		}, []string{"transport", "op"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "ferry", Subsystem: "engine", Name: "requests_total",
			Help: "Transfer requests submitted to a transport.",
		}, []string{"transport"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "ferry", Subsystem: "engine", Name: "failures_total",
			Help: "Transfer requests that failed on a transport.",
		}, []string{"transport"}),
		failovers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "ferry", Subsystem: "engine", Name: "failovers_total",
			Help: "Failed requests retried on another transport, by the transport that failed.",
		}, []string{"transport"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "ferry", Subsystem: "engine", Name: "request_seconds",
			Help:    "Time from submit to completion of a transfer request.",
			Buckets: prometheus.ExponentialBuckets(10e-6, 4, 12),
		}, []string{"transport"}),
		inflight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "ferry", Subsystem: "engine", Name: "inflight_requests",
			Help: "Transfer requests submitted to a transport and not yet finished.",
		}, []string{"transport"}),
	}
	if reg != nil {
		if err := register(reg, &m.bytes); err != nil {
			return nil, err
		}
		if err := register(reg, &m.requests); err != nil {
			return nil, err
		}
		if err := register(reg, &m.failures); err != nil {
			return nil, err
		}
		if err := register(reg, &m.failovers); err != nil {
			return nil, err
		}
		if err := register(reg, &m.latency); err != nil {
			return nil, err
		}
		if err := register(reg, &m.inflight); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) forTransport(name string) *tmetrics {
	return &tmetrics{
		readBytes:  m.bytes.WithLabelValues(name, "read"),
		writeBytes: m.bytes.WithLabelValues(name, "write"),
		requests:   m.requests.WithLabelValues(name),
		failures:   m.failures.WithLabelValues(name),
		failovers:  m.failovers.WithLabelValues(name),
		latency:    m.latency.WithLabelValues(name),
		inflight:   m.inflight.WithLabelValues(name),
	}
}

// register registers *c with reg; when an identical collector is already
// registered (a second engine on the same registry), *c is replaced by it
// so both engines count into the same series.
func register[C prometheus.Collector](reg prometheus.Registerer, c *C) error {
	if err := reg.Register(*c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if ex, ok := are.ExistingCollector.(C); ok {
				*c = ex
				return nil
			}
		}
		return fmt.Errorf("register engine metrics: %w", err)
	}
	return nil
}
