package jobset

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are upstream's jobset_* counters.
type metrics struct {
	failedTotal    *prometheus.CounterVec
	completedTotal *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		failedTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "jobset", Name: "failed_total", Help: "The total number of failed JobSets",
		}, []string{"jobset_name", "namespace"}),
		completedTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "jobset", Name: "completed_total", Help: "The total number of completed JobSets",
		}, []string{"jobset_name", "namespace"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []**prometheus.CounterVec{&m.failedTotal, &m.completedTotal} {
		if err := register(reg, c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// register registers *c, reusing an already registered identical collector.
func register(reg prometheus.Registerer, c **prometheus.CounterVec) error {
	err := reg.Register(*c)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(*prometheus.CounterVec); ok {
			*c = existing
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("register jobset metrics: %w", err)
	}
	return nil
}

func (m *metrics) record(p *plan) {
	if p.failed {
		m.failedTotal.WithLabelValues(p.js.Name, p.js.Namespace).Inc()
	}
	if p.completed {
		m.completedTotal.WithLabelValues(p.js.Name, p.js.Namespace).Inc()
	}
}
