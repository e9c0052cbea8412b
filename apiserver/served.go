package apiserver

import (
	"sync"

	"github.com/batchlet/batchlet/apiserver/registry"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// servedTable is the set of served resources: the built-in ones from the
// start, and those of established CRDs, added and removed at run time.
// Request routing, discovery, decoding and namespace deletion all read it.
type servedTable struct {
	mu      sync.RWMutex
	byGVR   map[schema.GroupVersionResource]*registry.Resource
	ordered []*registry.Resource
	// terminating CRDs still serve their objects but refuse new ones.
	terminating map[string]bool
	// builtFrom is the resourceVersion of the CRD each served one was
	// built from: an unchanged CRD is not built again.
	builtFrom map[string]string
}

func newServedTable(builtin []*registry.Resource) *servedTable {
	t := &servedTable{byGVR: map[schema.GroupVersionResource]*registry.Resource{}, terminating: map[string]bool{}, builtFrom: map[string]string{}}
	for _, r := range builtin {
		t.byGVR[r.GVR] = r
		t.ordered = append(t.ordered, r)
	}
	return t
}

func (t *servedTable) get(gvr schema.GroupVersionResource) *registry.Resource {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.byGVR[gvr]
}

// forKind finds the served resource of a kind (nil if none).
func (t *servedTable) forKind(gvk schema.GroupVersionKind) *registry.Resource {
	t.mu.RLock()
	defer t.mu.RUnlock()
	for _, r := range t.ordered {
		if r.GVK() == gvk {
			return r
		}
	}
	return nil
}

// list is a snapshot of the served resources in discovery order.
func (t *servedTable) list() []*registry.Resource {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return append([]*registry.Resource(nil), t.ordered...)
}

// setDefinition replaces the resources served for the CRD named crd by rs,
// built from its version rv (none: stop serving it). A resource whose GVR
// another owner serves is skipped: the names check should have refused it.
func (t *servedTable) setDefinition(crd, rv string, rs []*registry.Resource) {
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

// servedFrom is the resourceVersion the served CRD named crd was built
// from ("" when not served).
func (t *servedTable) servedFrom(crd string) string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.builtFrom[crd]
}

// setTerminating marks the CRD named crd as being deleted.
func (t *servedTable) setTerminating(crd string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.terminating[crd] = true
}

// isTerminating says whether the CRD named crd is being deleted.
func (t *servedTable) isTerminating(crd string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.terminating[crd]
}

// definitions lists the CRD names being served.
func (t *servedTable) definitions() map[string]bool {
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
