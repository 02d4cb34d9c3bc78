package owner

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	getBatches, putBatches, loadFailures, exhausted, expirations prometheus.Counter
	loadBytes, storeBytes                                        prometheus.Counter
	pings, pingFailures, remounts                                prometheus.Counter
	loadSeconds, storeSeconds                                    prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer, log *slog.Logger) *metrics {
	c := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: "ferry", Subsystem: "owner", Name: name, Help: help})
	}
	h := func(name, help string) prometheus.Histogram {
		return prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "ferry", Subsystem: "owner", Name: name, Help: help,
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)})
	}
	m := &metrics{
		getBatches:   c("get_batches_total", "Get batches loaded and handed out."),
		putBatches:   c("put_batches_total", "Put batches committed."),
		loadFailures: c("load_failures_total", "Get batches that failed to load from storage."),
		exhausted:    c("staging_exhausted_total", "Batches refused because staging memory was full."),
		expirations:  c("lease_expirations_total", "Batches whose lease expired before release."),
		loadBytes:    c("load_bytes_total", "Bytes loaded from storage into staging."),
		storeBytes:   c("store_bytes_total", "Bytes committed from staging to storage."),
		pings:        c("pings_total", "Liveness pings sent to the master."),
		pingFailures: c("ping_failures_total", "Liveness pings that failed."),
		remounts:     c("remounts_total", "Re-mounts after the master forgot the owner."),
		loadSeconds:  h("load_seconds", "Time to allocate and load a get batch."),
		storeSeconds: h("store_seconds", "Time to upload and record a put batch."),
	}
	if reg != nil {
		for _, col := range []prometheus.Collector{m.getBatches, m.putBatches, m.loadFailures, m.exhausted, m.expirations,
			m.loadBytes, m.storeBytes, m.pings, m.pingFailures, m.remounts, m.loadSeconds, m.storeSeconds} {
			if err := reg.Register(col); err != nil {
				log.Warn("owner metric not registered", "err", err)
			}
		}
	}
	return m
}
