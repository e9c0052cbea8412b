package gc

import (
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Resource is one kind the collector watches: its resource path, kind and scope.
type Resource struct {
	GVR        schema.GroupVersionResource
	Kind       string
	Namespaced bool
}

// GVK is the group/version/kind the resource is referenced by in ownerReferences.
func (r Resource) GVK() schema.GroupVersionKind {
	return r.GVR.GroupVersion().WithKind(r.Kind)
}

// DefaultResources lists the kinds batchlet's objects own or are owned by.
// Events are never owners nor owned, so they are left out.
func DefaultResources() []Resource {
	return []Resource{
		{GVR: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Kind: "Pod", Namespaced: true},
		{GVR: schema.GroupVersionResource{Version: "v1", Resource: "services"}, Kind: "Service", Namespaced: true},
		{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true},
		{GVR: schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, Kind: "Secret", Namespaced: true},
		{GVR: schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, Kind: "Node", Namespaced: false},
		{GVR: schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}, Kind: "Job", Namespaced: true},
		{GVR: schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}, Kind: "JobSet", Namespaced: true},
		{GVR: schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}, Kind: "Lease", Namespaced: true},
	}
}

// kindMapper resolves an ownerReference's apiVersion/kind to a watched
// resource. Discovered resources (custom resources) come and go while
// workers read it.
type kindMapper struct {
	mu sync.RWMutex
	m  map[schema.GroupVersionKind]Resource
}

func newKindMapper(rs []Resource) *kindMapper {
	m := &kindMapper{m: map[schema.GroupVersionKind]Resource{}}
	for _, r := range rs {
		m.m[r.GVK()] = r
	}
	return m
}

// lookup resolves apiVersion and kind. Unknown kinds report ok=false.
func (m *kindMapper) lookup(apiVersion, kind string) (Resource, bool) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return Resource{}, false
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	r, ok := m.m[gv.WithKind(kind)]
	return r, ok
}

func (m *kindMapper) add(r Resource) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.m[r.GVK()] = r
}

func (m *kindMapper) remove(r Resource) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.m, r.GVK())
}
