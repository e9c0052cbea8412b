package registry

import (
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Table is the set of served resources: the built-in ones from the
// start, and those of established CRDs, added and removed at run time.
// Request routing, discovery, decoding and namespace deletion all read it.
type Table struct {
	mu      sync.RWMutex
	byGVR   map[schema.GroupVersionResource]*Resource
	ordered []*Resource
	// terminating CRDs still serve their objects but refuse new ones.
	terminating map[string]bool
	// builtFrom is the resourceVersion of the CRD each served one was
	// built from: an unchanged CRD is not built again.
	builtFrom map[string]string
}

// NewTable serves builtin (All()) and nothing else yet.
func NewTable(builtin []*Resource) *Table {
	t := &Table{byGVR: map[schema.GroupVersionResource]*Resource{}, terminating: map[string]bool{}, builtFrom: map[string]string{}}
	for _, r := range builtin {
		t.byGVR[r.GVR] = r
		t.ordered = append(t.ordered, r)
	}
	return t
}

// Get is the served resource gvr names (nil if none).
func (t *Table) Get(gvr schema.GroupVersionResource) *Resource {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.byGVR[gvr]
}

// ForKind finds the served resource of a kind (nil if none).
func (t *Table) ForKind(gvk schema.GroupVersionKind) *Resource {
	t.mu.RLock()
	defer t.mu.RUnlock()
	for _, r := range t.ordered {
		if r.GVK() == gvk {
			return r
		}
	}
	return nil
}

// List is a snapshot of the served resources in discovery order.
func (t *Table) List() []*Resource {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return append([]*Resource(nil), t.ordered...)
}

// SetDefinition replaces the resources served for the CRD named crd by rs,
// built from its version rv (none: stop serving it). A resource whose GVR
// another owner serves is skipped: the names check should have refused it.
func (t *Table) SetDefinition(crd, rv string, rs []*Resource) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(rs) == 0 {
		delete(t.terminating, crd)
		delete(t.builtFrom, crd)
	} else {
		t.builtFrom[crd] = rv
	}
	kept := t.ordered[:0:0]
	for _, r := range t.ordered {
		if r.CustomResource && r.Definition == crd {
			delete(t.byGVR, r.GVR)
			continue
		}
		kept = append(kept, r)
	}
	for _, r := range rs {
		if _, taken := t.byGVR[r.GVR]; taken {
			continue
		}
		t.byGVR[r.GVR] = r
		kept = append(kept, r)
	}
	t.ordered = kept
}

// ServedFrom is the resourceVersion the served CRD named crd was built
// from ("" when not served).
func (t *Table) ServedFrom(crd string) string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.builtFrom[crd]
}

// SetTerminating marks the CRD named crd as being deleted.
func (t *Table) SetTerminating(crd string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.terminating[crd] = true
}

// IsTerminating says whether the CRD named crd is being deleted.
func (t *Table) IsTerminating(crd string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.terminating[crd]
}

// Definitions lists the CRD names being served.
func (t *Table) Definitions() map[string]bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := map[string]bool{}
	for _, r := range t.ordered {
		if r.CustomResource {
			out[r.Definition] = true
		}
	}
	return out
}
