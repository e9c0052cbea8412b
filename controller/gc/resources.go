package gc

import (
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

// kindMapper resolves an ownerReference's apiVersion/kind to a watched resource.
type kindMapper map[schema.GroupVersionKind]Resource

func newKindMapper(rs []Resource) kindMapper {
	m := kindMapper{}
	for _, r := range rs {
		m[r.GVK()] = r
	}
	return m
}

// lookup resolves apiVersion and kind. Unknown kinds report ok=false.
func (m kindMapper) lookup(apiVersion, kind string) (Resource, bool) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return Resource{}, false
	}
	r, ok := m[gv.WithKind(kind)]
	return r, ok
}
