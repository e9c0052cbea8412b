package gc

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
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
	if reg == nil {
		return m, nil
	}
	for _, col := range []prometheus.Collector{m.deletions, m.orphaned, m.errors} {
		if err := reg.Register(col); err != nil {
			return nil, fmt.Errorf("register garbage collector metrics: %w", err)
		}
	}
	return m, nil
}
