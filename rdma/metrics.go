package rdma

import "github.com/prometheus/client_golang/prometheus"

// metrics are per-NIC counters. Children are resolved once per NIC so the
// data path only does atomic adds.
type metrics struct {
	bytes    *prometheus.CounterVec
	slices   *prometheus.CounterVec
	retries  *prometheus.CounterVec
	pauses   *prometheus.CounterVec
	inflight *prometheus.GaugeVec
	hsFail   prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "ferry", Subsystem: "rdma",
			Name: "bytes_total", Help: "Bytes moved by completed RDMA slices, per local NIC and operation."}, []string{"nic", "op"}),
		slices: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "ferry", Subsystem: "rdma",
			Name: "slices_total", Help: "RDMA slices finished, per local NIC and result (ok, failed)."}, []string{"nic", "result"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "ferry", Subsystem: "rdma",
			Name: "slice_retries_total", Help: "RDMA slice retries, per local NIC that failed the attempt."}, []string{"nic"}),
		pauses: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "ferry", Subsystem: "rdma",
			Name: "rail_pauses_total", Help: "Peer rails paused after errors, per local NIC."}, []string{"nic"}),
		inflight: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "ferry", Subsystem: "rdma",
			Name: "inflight_bytes", Help: "Bytes posted and not yet completed, per local NIC."}, []string{"nic"}),
		hsFail: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "ferry", Subsystem: "rdma",
			Name: "handshake_failures_total", Help: "RDMA connection handshakes that failed."}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.bytes, m.slices, m.retries, m.pauses, m.inflight, m.hsFail} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// nicMetrics are one NIC's resolved children.
type nicMetrics struct {
	readBytes, writeBytes prometheus.Counter
	ok, failed            prometheus.Counter
	retries, pauses       prometheus.Counter
	inflight              prometheus.Gauge
}

func (m *metrics) forNIC(name string) nicMetrics {
	return nicMetrics{
		readBytes: m.bytes.WithLabelValues(name, "read"), writeBytes: m.bytes.WithLabelValues(name, "write"),
		ok: m.slices.WithLabelValues(name, "ok"), failed: m.slices.WithLabelValues(name, "failed"),
		retries: m.retries.WithLabelValues(name), pauses: m.pauses.WithLabelValues(name),
		inflight: m.inflight.WithLabelValues(name),
	}
}
