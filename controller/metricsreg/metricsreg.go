// Package metricsreg registers a component's Prometheus collectors with the
// Registerer it was given, the one shape every controller and the scheduler
// share (no package-level registration).
package metricsreg

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers each collector with reg; a nil reg registers nothing.
// The first failure stops it and is returned as "register <what> metrics: …".
func Register(reg prometheus.Registerer, what string, collectors ...prometheus.Collector) error {
	if reg == nil {
		return nil
	}
	for _, c := range collectors {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("register %s metrics: %w", what, err)
		}
	}
	return nil
}
