// Package strategy is what a write does to one resource's objects before
// they are stored, around the hooks of its registry.Resource: the metadata
// a create sets and an update keeps, defaulting, validation, and the marks
// a delete leaves (propagation finalizers, graceful deletion). It is shaped
// like k8s.io/apiserver's RESTCreateStrategy, RESTUpdateStrategy and
// RESTDeleteStrategy together with rest.BeforeCreate/BeforeUpdate/
// BeforeDelete's metadata handling, and knows neither HTTP nor storage: the
// handlers call it between reading and writing through genericstore.
package strategy

import (
	"github.com/batchlet/batchlet/apiserver/registry"
	"k8s.io/utils/clock"
)

// Strategy is one resource's create, update and delete behaviour.
type Strategy struct {
	res   *registry.Resource
	clock clock.PassiveClock
}

// For is the strategy of res; clk stamps creation and deletion times.
func For(res *registry.Resource, clk clock.PassiveClock) Strategy {
	return Strategy{res: res, clock: clk}
}

// Mode selects the hooks of an update.
type Mode int

const (
	// Main is a PUT, PATCH or apply of the main resource.
	Main Mode = iota
	// Status is a write of the status subresource.
	Status
	// Raw is a server-internal write (binding, finalize, CRD status): the
	// metadata is kept and checked, no strategy hook runs.
	Raw
)
