package gc

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/batchlet/batchlet/controller/metricsreg"
)

type metrics struct {
	deletions *prometheus.CounterVec
	orphaned  prometheus.Counter
	errors    prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		deletions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "garbagecollector_controller", Name: "deletions_total",
			Help: "Objects deleted by the garbage collector, by resource.",
		}, []string{"resource"}),
		orphaned: prometheus.NewCounter(prometheus.CounterOpts{
			Subsystem: "garbagecollector_controller", Name: "orphaned_references_total",
			Help: "ownerReferences removed from dependents by the garbage collector.",
		}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Subsystem: "garbagecollector_controller", Name: "sync_errors_total",
			Help: "Work items the garbage collector had to retry.",
		}),
	}
	if err := metricsreg.Register(reg, "garbage collector", m.deletions, m.orphaned, m.errors); err != nil {
		return nil, err
	}
	return m, nil
}
