// Package admission holds the admission plugins the API server runs on a
// create, after decoding and before (or around) its strategy, as
// kube-apiserver's admission chain does: NamespaceLifecycle (no new
// content in missing or terminating namespaces), ServiceAccount (a pod's
// account must exist; its token is mounted) and ClusterIPs (a new
// Service's address, from kube-apiserver's Service REST allocator). The
// plugins read stored objects only through Objects.
package admission

import (
	"context"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Objects reads stored objects for the plugins. What it returns may be
// shared with other readers: the plugins only read it.
type Objects interface {
	Get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error)
	List(ctx context.Context, gvr schema.GroupVersionResource, namespace string, fieldSelector fields.Selector) ([]runtime.Object, error)
}
