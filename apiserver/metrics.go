package apiserver

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the server's request counters, named as kube-apiserver's.
type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	watchers *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_request_total",
			Help: "Counter of apiserver requests broken out for each verb, group, version, resource, subresource and HTTP response code.",
		}, []string{"verb", "group", "version", "resource", "subresource", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_request_duration_seconds",
			Help:    "Response latency distribution in seconds for each verb, group, version, resource and subresource.",
			Buckets: []float64{0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60},
		}, []string{"verb", "group", "version", "resource", "subresource"}),
		watchers: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_registered_watchers",
			Help: "Number of currently registered watchers for a given resources",
		}, []string{"group", "version", "kind"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.latency, m.watchers} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) observe(verb, group, version, resource, sub string, code int, d time.Duration) {
	if code == 0 {
		code = 200
	}
	verb = map[string]string{"get": "GET", "list": "LIST", "watch": "WATCH", "create": "POST", "update": "PUT",
		"patch": "PATCH", "delete": "DELETE", "deletecollection": "DELETE"}[verb]
	m.requests.WithLabelValues(verb, group, version, resource, sub, strconv.Itoa(code)).Inc()
	if verb != "WATCH" {
		m.latency.WithLabelValues(verb, group, version, resource, sub).Observe(d.Seconds())
	}
}
