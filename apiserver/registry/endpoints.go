//lint:file-ignore SA1019 core/v1 Endpoints is deprecated, but upstream still keeps those of the kubernetes Service and serves the resource.

package registry

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Endpoints is core/v1 endpoints (batchlet keeps those of the kubernetes
// Service; others are stored as written).
func Endpoints() *Resource {
	return &Resource{
		GVR: corev1.SchemeGroupVersion.WithResource("endpoints"), Kind: "Endpoints", Singular: "endpoints", Namespaced: true,
		ShortNames: []string{"ep"},
		New:        func() runtime.Object { return &corev1.Endpoints{} },
		NewList:    func() runtime.Object { return &corev1.EndpointsList{} },
		Columns: []metav1.TableColumnDefinition{nameColumn(),
			col("Endpoints", corev1.Endpoints{}.SwaggerDoc()["subsets"]), ageColumn()},
		Row: func(obj runtime.Object, now time.Time) metav1.TableRow {
			ep := obj.(*corev1.Endpoints)
			return metav1.TableRow{Cells: []interface{}{ep.Name, endpointsString(ep), since(ep.CreationTimestamp, now)}}
		},
	}
}

// endpointsString is "ip:port,..." or <none>, as kubectl shows.
func endpointsString(ep *corev1.Endpoints) string {
	var out []string
	for _, ss := range ep.Subsets {
		for _, a := range ss.Addresses {
			if len(ss.Ports) == 0 {
				out = append(out, a.IP)
			}
			for _, p := range ss.Ports {
				out = append(out, fmt.Sprintf("%s:%d", a.IP, p.Port))
			}
		}
	}
	if len(out) == 0 {
		return "<none>"
	}
	return strings.Join(out, ",")
}

// EndpointSlices is discovery.k8s.io/v1 endpointslices.
func EndpointSlices() *Resource {
	return &Resource{
		GVR: discoveryv1.SchemeGroupVersion.WithResource("endpointslices"), Kind: "EndpointSlice", Singular: "endpointslice",
		Namespaced: true,
		New:        func() runtime.Object { return &discoveryv1.EndpointSlice{} },
		NewList:    func() runtime.Object { return &discoveryv1.EndpointSliceList{} },
		Columns: []metav1.TableColumnDefinition{nameColumn(),
			col("AddressType", discoveryv1.EndpointSlice{}.SwaggerDoc()["addressType"]),
			col("Ports", discoveryv1.EndpointSlice{}.SwaggerDoc()["ports"]),
			col("Endpoints", discoveryv1.EndpointSlice{}.SwaggerDoc()["endpoints"]), ageColumn()},
		Row: func(obj runtime.Object, now time.Time) metav1.TableRow {
			es := obj.(*discoveryv1.EndpointSlice)
			return metav1.TableRow{Cells: []interface{}{es.Name, string(es.AddressType), slicePorts(es), sliceAddresses(es), since(es.CreationTimestamp, now)}}
		},
	}
}

func slicePorts(es *discoveryv1.EndpointSlice) string {
	var out []string
	for _, p := range es.Ports {
		if p.Port != nil {
			out = append(out, fmt.Sprint(*p.Port))
		}
	}
	if len(out) == 0 {
		return "<unset>"
	}
	return strings.Join(out, ",")
}

func sliceAddresses(es *discoveryv1.EndpointSlice) string {
	var out []string
	for _, e := range es.Endpoints {
		out = append(out, e.Addresses...)
	}
	if len(out) == 0 {
		return "<unset>"
	}
	return strings.Join(out, ",")
}
