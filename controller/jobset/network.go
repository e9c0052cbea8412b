package jobset

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	jobsetapi "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// dnsHostnamesEnabled reports whether pods get stable DNS hostnames. A nil
// network is treated like the webhook default (enabled).
func dnsHostnamesEnabled(js *jobsetapi.JobSet) bool {
	if js.Spec.Network == nil {
		return true
	}
	return ptr.Deref(js.Spec.Network.EnableDNSHostnames, true)
}

func publishNotReadyAddresses(js *jobsetapi.JobSet) bool {
	if js.Spec.Network == nil {
		return true
	}
	return ptr.Deref(js.Spec.Network.PublishNotReadyAddresses, true)
}

// subdomain is network.subdomain, or the JobSet name when empty.
func subdomain(js *jobsetapi.JobSet) string {
	if js.Spec.Network != nil && js.Spec.Network.Subdomain != "" {
		return js.Spec.Network.Subdomain
	}
	return js.Name
}

// coordinatorEndpoint is the stable DNS name of the coordinator pod.
func coordinatorEndpoint(js *jobsetapi.JobSet) string {
	c := js.Spec.Coordinator
	return fmt.Sprintf("%s-%s-%d-%d.%s", js.Name, c.ReplicatedJob, c.JobIndex, c.PodIndex, subdomain(js))
}

// headlessService builds the Service that gives the JobSet's pods DNS names.
func headlessService(js *jobsetapi.JobSet) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name:            subdomain(js),
			Namespace:       js.Namespace,
			OwnerReferences: []metav1.OwnerReference{controllerRef(js)},
		},
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			Selector:                 map[string]string{jobsetapi.JobSetNameKey: js.Name},
			PublishNotReadyAddresses: publishNotReadyAddresses(js),
		},
	}
}

// controllerRef is the controller ownerReference pointing at js.
func controllerRef(js *jobsetapi.JobSet) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion:         jobsetapi.GroupVersion.String(),
		Kind:               jobSetKind,
		Name:               js.Name,
		UID:                js.UID,
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(true),
	}
}
