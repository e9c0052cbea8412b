package scheduler

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/batchlet/batchlet/controller/metricsreg"
)

type metrics struct {
	attempts    *prometheus.CounterVec
	latency     prometheus.Histogram
	preemptions prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "scheduler", Name: "schedule_attempts_total",
			Help: "Number of attempts to schedule pods, by the result.",
		}, []string{"result"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem: "scheduler", Name: "scheduling_algorithm_duration_seconds",
			Help:    "Scheduling algorithm latency in seconds.",
			Buckets: prometheus.ExponentialBuckets(0.00001, 4, 10),
		}),
		preemptions: prometheus.NewCounter(prometheus.CounterOpts{
			Subsystem: "scheduler", Name: "preemption_victims_total",
			Help: "Pods preempted by the scheduler.",
		}),
	}
	if err := metricsreg.Register(reg, "scheduler", m.attempts, m.latency, m.preemptions); err != nil {
		return nil, err
	}
	return m, nil
}
