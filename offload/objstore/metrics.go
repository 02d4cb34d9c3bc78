package objstore

import (
	"errors"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the Executor's Prometheus collectors. Counters for every
// method and outcome class are resolved once so counting allocates nothing.
type metrics struct {
	inflight prometheus.Gauge
	bytesIn  prometheus.Counter
	bytesOut prometheus.Counter
	reqs     [len(methods)][3]prometheus.Counter // ok, http_error, transport_error
}

var methods = [...]string{http.MethodGet, http.MethodPut, http.MethodHead, http.MethodDelete, http.MethodPost}

func newMetrics(name string, reg prometheus.Registerer) *metrics {
	if name == "" {
		name = "objstore"
	}
	labels := prometheus.Labels{"adapter": name}
	inflight := prometheus.NewGauge(prometheus.GaugeOpts{Name: "ferry_objstore_requests_in_flight",
		Help: "HTTP requests admitted and not yet answered.", ConstLabels: labels})
	bytes := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ferry_objstore_bytes_total",
		Help: "Payload bytes received by GETs (in) and sent by successful PUTs (out).", ConstLabels: labels},
		[]string{"direction"})
	reqs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ferry_objstore_requests_total",
		Help: "HTTP exchanges by method and outcome (ok, http_error, transport_error).", ConstLabels: labels},
		[]string{"method", "outcome"})
	if reg != nil {
		inflight = register(reg, inflight)
		bytes = register(reg, bytes)
		reqs = register(reg, reqs)
	}
	m := &metrics{inflight: inflight, bytesIn: bytes.WithLabelValues("in"), bytesOut: bytes.WithLabelValues("out")}
	for i, meth := range methods {
		for j, oc := range []string{"ok", "http_error", "transport_error"} {
			m.reqs[i][j] = reqs.WithLabelValues(meth, oc)
		}
	}
	return m
}

// register registers c, or returns the collector already registered under
// the same description (two adapters with the same name share counters).
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if old, ok := are.ExistingCollector.(C); ok {
				return old
			}
		}
	}
	return c
}

func (m *metrics) count(method string, o *Outcome) {
	j := 0
	switch {
	case o.Err != nil || o.Overflow:
		j = 2
	case o.Status/100 != 2:
		j = 1
	}
	for i, meth := range methods {
		if meth == method {
			m.reqs[i][j].Inc()
			return
		}
	}
}

// withWroteTrace records in o whether the request was fully written, so a
// retry policy can tell a timeout before sending from one after.
func withWroteTrace(req *http.Request) (*http.Request, *atomic.Bool) {
	wrote := new(atomic.Bool)
	trace := &httptrace.ClientTrace{WroteRequest: func(info httptrace.WroteRequestInfo) {
		if info.Err == nil {
			wrote.Store(true)
		}
	}}
	return req.WithContext(httptrace.WithClientTrace(req.Context(), trace)), wrote
}
