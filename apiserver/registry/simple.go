package registry

import (
	"fmt"
	"github.com/batchlet/batchlet/apiserver/defaults"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Services is core/v1 services.
func Services() *Resource {
	return &Resource{
		GVR: corev1.SchemeGroupVersion.WithResource("services"), Kind: "Service", Singular: "service", Namespaced: true,
		ShortNames: []string{"svc"}, Categories: []string{"all"}, Subresources: []string{"status"}, NameIsLabel: true,
		Verbs:   []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"},
		New:     func() runtime.Object { return &corev1.Service{} },
		NewList: func() runtime.Object { return &corev1.ServiceList{} },
		HasSpec: false,
		PrepareForCreate: func(obj runtime.Object) {
			svc := obj.(*corev1.Service)
			svc.Status = corev1.ServiceStatus{}
			defaults.Service(svc)
		},
		PrepareForUpdate: func(obj, old runtime.Object) {
			svc, prev := obj.(*corev1.Service), old.(*corev1.Service)
			svc.Status = prev.Status
			defaults.Service(svc)
			keepAllocatedClusterIP(svc, prev)
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validateClusterIPUnchanged(obj.(*corev1.Service), old.(*corev1.Service))
		},
		PrepareForStatusUpdate: func(obj, old runtime.Object) {
			obj.(*corev1.Service).Spec = old.(*corev1.Service).Spec
		},
		Columns: []metav1.TableColumnDefinition{
			nameColumn(),
			col("Type", corev1.ServiceSpec{}.SwaggerDoc()["type"]),
			col("Cluster-IP", corev1.ServiceSpec{}.SwaggerDoc()["clusterIP"]),
			col("External-IP", corev1.ServiceSpec{}.SwaggerDoc()["externalIPs"]),
			col("Port(s)", corev1.ServiceSpec{}.SwaggerDoc()["ports"]),
			ageColumn(),
			wideCol("Selector", corev1.ServiceSpec{}.SwaggerDoc()["selector"]),
		},
		Row: func(obj runtime.Object, now time.Time) metav1.TableRow { return serviceRow(obj.(*corev1.Service), now) },
	}
}

// keepAllocatedClusterIP: an update that leaves the ClusterIP out keeps the
// allocated one, as upstream's service storage does.
func keepAllocatedClusterIP(svc, old *corev1.Service) {
	if svc.Spec.Type == corev1.ServiceTypeExternalName || old.Spec.ClusterIP == "" {
		return
	}
	if svc.Spec.ClusterIP == "" && len(svc.Spec.ClusterIPs) == 0 {
		svc.Spec.ClusterIP, svc.Spec.ClusterIPs = old.Spec.ClusterIP, old.Spec.ClusterIPs
	}
	if svc.Spec.ClusterIP == old.Spec.ClusterIP {
		if len(svc.Spec.IPFamilies) == 0 {
			svc.Spec.IPFamilies = old.Spec.IPFamilies
		}
		if svc.Spec.IPFamilyPolicy == nil {
			svc.Spec.IPFamilyPolicy = old.Spec.IPFamilyPolicy
		}
	}
}

// validateClusterIPUnchanged: a ClusterIP may not change once set
// (batchlet allocates only on create).
func validateClusterIPUnchanged(svc, old *corev1.Service) field.ErrorList {
	if old.Spec.ClusterIP == "" || svc.Spec.ClusterIP == old.Spec.ClusterIP {
		return nil
	}
	return field.ErrorList{field.Invalid(field.NewPath("spec", "clusterIPs").Index(0), svc.Spec.ClusterIP, "may not change once set")}
}

func serviceRow(svc *corev1.Service, now time.Time) metav1.TableRow {
	clusterIP := svc.Spec.ClusterIP
	if clusterIP == "" {
		clusterIP = "<none>"
	}
	external := "<none>"
	if len(svc.Spec.ExternalIPs) > 0 {
		external = strings.Join(svc.Spec.ExternalIPs, ",")
	}
	ports := make([]string, 0, len(svc.Spec.Ports))
	for _, p := range svc.Spec.Ports {
		s := fmt.Sprintf("%d/%s", p.Port, p.Protocol)
		if p.NodePort > 0 {
			s = fmt.Sprintf("%d:%d/%s", p.Port, p.NodePort, p.Protocol)
		}
		ports = append(ports, s)
	}
	portStr := "<none>"
	if len(ports) > 0 {
		portStr = strings.Join(ports, ",")
	}
	return metav1.TableRow{Cells: []interface{}{svc.Name, string(svc.Spec.Type), clusterIP, external, portStr,
		since(svc.CreationTimestamp, now), selectorString(svc.Spec.Selector)}}
}

// ConfigMaps is core/v1 configmaps.
func ConfigMaps() *Resource {
	return &Resource{
		GVR: corev1.SchemeGroupVersion.WithResource("configmaps"), Kind: "ConfigMap", Singular: "configmap", Namespaced: true,
		ShortNames: []string{"cm"},
		New:        func() runtime.Object { return &corev1.ConfigMap{} },
		NewList:    func() runtime.Object { return &corev1.ConfigMapList{} },
		Columns:    []metav1.TableColumnDefinition{nameColumn(), col("Data", corev1.ConfigMap{}.SwaggerDoc()["data"]), ageColumn()},
		Row: func(obj runtime.Object, now time.Time) metav1.TableRow {
			cm := obj.(*corev1.ConfigMap)
			return metav1.TableRow{Cells: []interface{}{cm.Name, int64(len(cm.Data) + len(cm.BinaryData)), since(cm.CreationTimestamp, now)}}
		},
	}
}

// Secrets is core/v1 secrets.
func Secrets() *Resource {
	return &Resource{
		GVR: corev1.SchemeGroupVersion.WithResource("secrets"), Kind: "Secret", Singular: "secret", Namespaced: true,
		New:     func() runtime.Object { return &corev1.Secret{} },
		NewList: func() runtime.Object { return &corev1.SecretList{} },
		PrepareForCreate: func(obj runtime.Object) {
			if s := obj.(*corev1.Secret); s.Type == "" {
				s.Type = corev1.SecretTypeOpaque
			}
		},
		Fields: func(obj runtime.Object) fields.Set { return fields.Set{"type": string(obj.(*corev1.Secret).Type)} },
		Columns: []metav1.TableColumnDefinition{nameColumn(), col("Type", corev1.Secret{}.SwaggerDoc()["type"]),
			col("Data", corev1.Secret{}.SwaggerDoc()["data"]), ageColumn()},
		Row: func(obj runtime.Object, now time.Time) metav1.TableRow {
			s := obj.(*corev1.Secret)
			return metav1.TableRow{Cells: []interface{}{s.Name, string(s.Type), int64(len(s.Data) + len(s.StringData)), since(s.CreationTimestamp, now)}}
		},
	}
}

// ServiceAccounts is core/v1 serviceaccounts.
func ServiceAccounts() *Resource {
	return &Resource{
		GVR: corev1.SchemeGroupVersion.WithResource("serviceaccounts"), Kind: "ServiceAccount", Singular: "serviceaccount",
		Namespaced: true, ShortNames: []string{"sa"}, Subresources: []string{"token"},
		New:     func() runtime.Object { return &corev1.ServiceAccount{} },
		NewList: func() runtime.Object { return &corev1.ServiceAccountList{} },
		Columns: []metav1.TableColumnDefinition{nameColumn(), col("Secrets", corev1.ServiceAccount{}.SwaggerDoc()["secrets"]), ageColumn()},
		Row: func(obj runtime.Object, now time.Time) metav1.TableRow {
			sa := obj.(*corev1.ServiceAccount)
			return metav1.TableRow{Cells: []interface{}{sa.Name, int64(len(sa.Secrets)), since(sa.CreationTimestamp, now)}}
		},
	}
}

// Leases is coordination.k8s.io/v1 leases.
func Leases() *Resource {
	return &Resource{
		GVR: coordinationv1.SchemeGroupVersion.WithResource("leases"), Kind: "Lease", Singular: "lease", Namespaced: true,
		New:     func() runtime.Object { return &coordinationv1.Lease{} },
		NewList: func() runtime.Object { return &coordinationv1.LeaseList{} },
		Columns: []metav1.TableColumnDefinition{nameColumn(), col("Holder", coordinationv1.LeaseSpec{}.SwaggerDoc()["holderIdentity"]), ageColumn()},
		Row: func(obj runtime.Object, now time.Time) metav1.TableRow {
			l := obj.(*coordinationv1.Lease)
			holder := ""
			if l.Spec.HolderIdentity != nil {
				holder = *l.Spec.HolderIdentity
			}
			return metav1.TableRow{Cells: []interface{}{l.Name, holder, since(l.CreationTimestamp, now)}}
		},
	}
}
