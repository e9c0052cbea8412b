package registry

import (
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
)

// Nodes is core/v1 nodes (cluster-scoped).
func Nodes() *Resource {
	return &Resource{
		GVR: corev1.SchemeGroupVersion.WithResource("nodes"), Kind: "Node", Singular: "node",
		ShortNames: []string{"no"}, Subresources: []string{"status", "proxy"},
		New:     func() runtime.Object { return &corev1.Node{} },
		NewList: func() runtime.Object { return &corev1.NodeList{} },
		PrepareForUpdate: func(obj, old runtime.Object) {
			obj.(*corev1.Node).Status = old.(*corev1.Node).Status
		},
		PrepareForStatusUpdate: func(obj, old runtime.Object) { obj.(*corev1.Node).Spec = old.(*corev1.Node).Spec },
		Fields: func(obj runtime.Object) fields.Set {
			return fields.Set{"spec.unschedulable": strconv.FormatBool(obj.(*corev1.Node).Spec.Unschedulable)}
		},
		Columns: []metav1.TableColumnDefinition{
			nameColumn(),
			col("Status", "The status of the node"),
			col("Roles", "The roles of the node"),
			ageColumn(),
			col("Version", corev1.NodeSystemInfo{}.SwaggerDoc()["kubeletVersion"]),
			wideCol("Internal-IP", corev1.NodeStatus{}.SwaggerDoc()["addresses"]),
			wideCol("External-IP", corev1.NodeStatus{}.SwaggerDoc()["addresses"]),
			wideCol("OS-Image", corev1.NodeSystemInfo{}.SwaggerDoc()["osImage"]),
			wideCol("Kernel-Version", corev1.NodeSystemInfo{}.SwaggerDoc()["kernelVersion"]),
			wideCol("Container-Runtime", corev1.NodeSystemInfo{}.SwaggerDoc()["containerRuntimeVersion"]),
		},
		Row: func(obj runtime.Object, now time.Time) metav1.TableRow { return nodeRow(obj.(*corev1.Node), now) },
	}
}

func nodeRow(node *corev1.Node, now time.Time) metav1.TableRow {
	var status []string
	ready := "Unknown"
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			ready = "NotReady"
			if c.Status == corev1.ConditionTrue {
				ready = "Ready"
			}
		}
	}
	status = append(status, ready)
	if node.Spec.Unschedulable {
		status = append(status, "SchedulingDisabled")
	}
	var roles []string
	for k, v := range node.Labels {
		switch {
		case strings.HasPrefix(k, "node-role.kubernetes.io/"):
			if role := strings.TrimPrefix(k, "node-role.kubernetes.io/"); role != "" {
				roles = append(roles, role)
			}
		case k == "kubernetes.io/role" && v != "":
			roles = append(roles, v)
		}
	}
	sort.Strings(roles)
	rolesStr := "<none>"
	if len(roles) > 0 {
		rolesStr = strings.Join(roles, ",")
	}
	internal, external := "<none>", "<none>"
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP && internal == "<none>" {
			internal = a.Address
		}
		if a.Type == corev1.NodeExternalIP && external == "<none>" {
			external = a.Address
		}
	}
	info := node.Status.NodeInfo
	osImage, kernel, rt := "<unknown>", "<unknown>", "<unknown>"
	if info.OSImage != "" {
		osImage = info.OSImage
	}
	if info.KernelVersion != "" {
		kernel = info.KernelVersion
	}
	if info.ContainerRuntimeVersion != "" {
		rt = info.ContainerRuntimeVersion
	}
	return metav1.TableRow{Cells: []interface{}{node.Name, strings.Join(status, ","), rolesStr, since(node.CreationTimestamp, now),
		info.KubeletVersion, internal, external, osImage, kernel, rt}}
}
