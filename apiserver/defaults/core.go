package defaults

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Service applies core/v1 Service defaults (SetDefaults_Service): type
// ClusterIP, sessionAffinity None, ports protocol TCP and targetPort = port,
// internalTrafficPolicy Cluster unless ExternalName.
func Service(svc *corev1.Service) {
	spec := &svc.Spec
	if spec.SessionAffinity == "" {
		spec.SessionAffinity = corev1.ServiceAffinityNone
	}
	if spec.Type == "" {
		spec.Type = corev1.ServiceTypeClusterIP
	}
	for i := range spec.Ports {
		p := &spec.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if p.TargetPort == intstr.FromInt32(0) || p.TargetPort == intstr.FromString("") {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
	if spec.Type != corev1.ServiceTypeExternalName && spec.InternalTrafficPolicy == nil {
		spec.InternalTrafficPolicy = ptrTo(corev1.ServiceInternalTrafficPolicyCluster)
	}
	if (spec.Type == corev1.ServiceTypeNodePort || spec.Type == corev1.ServiceTypeLoadBalancer) &&
		spec.ExternalTrafficPolicy == "" {
		spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	}
}

// Namespace applies core/v1 Namespace defaults: the
// kubernetes.io/metadata.name label (always equal to the name) and
// status.phase Active.
func Namespace(ns *corev1.Namespace) {
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels[corev1.LabelMetadataName] = ns.Name
	if ns.Status.Phase == "" {
		ns.Status.Phase = corev1.NamespaceActive
	}
}

// NamespaceForCreate adds what the namespace registry strategy adds on
// create: the "kubernetes" spec finalizer.
func NamespaceForCreate(ns *corev1.Namespace) {
	for _, f := range ns.Spec.Finalizers {
		if f == corev1.FinalizerKubernetes {
			return
		}
	}
	ns.Spec.Finalizers = append(ns.Spec.Finalizers, corev1.FinalizerKubernetes)
}
