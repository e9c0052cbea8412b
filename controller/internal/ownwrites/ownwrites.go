// Package ownwrites remembers the status updates a controller made itself
// until its informer shows them.
//
// Controllers read objects from their informer's cache, which can lag
// behind their own last write: an event about a child (a pod, a Job)
// may arrive before the parent's update event. A sync on such a copy acts
// on a status the controller has already moved past — a Job controller
// that has just counted a pod and removed its finalizer would see the pod
// neither counted nor tracked and create a replacement; a JobSet
// controller would create Jobs of a restart attempt it has counted past.
// Upstream's controllers mostly hide this window behind a 1 s sync batch;
// batchlet's syncs are faster, so they skip a copy they know is stale and
// wait for the update's own event, which queues the object again.
package ownwrites

import (
	"sync"

	"k8s.io/apimachinery/pkg/util/sets"
)

// Tracker holds, per object key, the resourceVersions the controller's own
// updates replaced since its cache last caught up. resourceVersions are
// compared only for equality, as clients must.
type Tracker struct {
	mu       sync.Mutex
	replaced map[string]sets.Set[string]
}

// New returns an empty Tracker.
func New() *Tracker {
	return &Tracker{replaced: map[string]sets.Set[string]{}}
}

// Wrote records an update of key from resourceVersion from to to. An
// update the server made no change for (to == from) brings no event, so
// it is not waited for.
func (t *Tracker) Wrote(key, from, to string) {
	if from == "" || to == from {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.replaced[key] == nil {
		t.replaced[key] = sets.New[string]()
	}
	t.replaced[key].Insert(from)
}

// Behind reports whether a cached copy at resourceVersion rv is one the
// controller's own updates replaced; once a copy is not, the cache has
// caught up and the record of key is dropped.
func (t *Tracker) Behind(key, rv string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.replaced[key].Has(rv) {
		return true
	}
	delete(t.replaced, key)
	return false
}

// Forget drops what is known of key (the object is gone).
func (t *Tracker) Forget(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.replaced, key)
}
