package registry

import (
	"github.com/batchlet/batchlet/apiserver/defaults"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
)

// NamespaceNameLabel is the label kube-apiserver puts on every namespace.
const NamespaceNameLabel = "kubernetes.io/metadata.name"

// Namespaces is core/v1 namespaces (cluster-scoped).
func Namespaces() *Resource {
	return &Resource{
		GVR: corev1.SchemeGroupVersion.WithResource("namespaces"), Kind: "Namespace", Singular: "namespace",
		ShortNames: []string{"ns"}, Subresources: []string{"status", "finalize"}, NameIsLabel: true,
		Verbs:   []string{"create", "delete", "get", "list", "patch", "update", "watch"},
		New:     func() runtime.Object { return &corev1.Namespace{} },
		NewList: func() runtime.Object { return &corev1.NamespaceList{} },
		PrepareForCreate: func(obj runtime.Object) {
			ns := obj.(*corev1.Namespace)
			ns.Status = corev1.NamespaceStatus{}
			defaults.Namespace(ns)
			defaults.NamespaceForCreate(ns)
		},
		PrepareForUpdate: func(obj, old runtime.Object) {
			ns := obj.(*corev1.Namespace)
			ns.Status = old.(*corev1.Namespace).Status
			ns.Spec.Finalizers = old.(*corev1.Namespace).Spec.Finalizers
			defaults.Namespace(ns)
		},
		PrepareForStatusUpdate: func(obj, old runtime.Object) {
			obj.(*corev1.Namespace).Spec = old.(*corev1.Namespace).Spec
		},
		Fields: func(obj runtime.Object) fields.Set {
			return fields.Set{"status.phase": string(obj.(*corev1.Namespace).Status.Phase)}
		},
		Columns: []metav1.TableColumnDefinition{
			nameColumn(),
			col("Status", "The status of the namespace"),
			ageColumn(),
		},
		Row: func(obj runtime.Object, now time.Time) metav1.TableRow {
			ns := obj.(*corev1.Namespace)
			return metav1.TableRow{Cells: []interface{}{ns.Name, string(ns.Status.Phase), since(ns.CreationTimestamp, now)}}
		},
	}
}
