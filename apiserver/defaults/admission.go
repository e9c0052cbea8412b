package defaults

import (
	corev1 "k8s.io/api/core/v1"
)

// Values the default kube-apiserver admission plugins write into new pods.
const (
	DefaultServiceAccountName = "default"
	DefaultTolerationSeconds  = int64(300)
	taintNodeNotReady         = "node.kubernetes.io/not-ready"
	taintNodeUnreachable      = "node.kubernetes.io/unreachable"
	defaultPreemptionPolicy   = corev1.PreemptLowerPriority
	defaultPriority           = int32(0)
)

// AdmitPod applies what kube-apiserver's default admission chain adds to a
// pod on create, as opposed to API defaults: ServiceAccount
// (serviceAccountName "default"; batchlet adds no token volume), Priority
// (priority 0 and preemptionPolicy PreemptLowerPriority when no
// priorityClassName is set), and DefaultTolerationSeconds (NoExecute
// tolerations for not-ready and unreachable nodes, 300 s, unless present).
func AdmitPod(pod *corev1.Pod) {
	spec := &pod.Spec
	if spec.ServiceAccountName == "" {
		spec.ServiceAccountName = DefaultServiceAccountName
		spec.DeprecatedServiceAccount = DefaultServiceAccountName
	}
	if spec.PriorityClassName == "" && spec.Priority == nil {
		spec.Priority = ptrTo(defaultPriority)
	}
	if spec.PreemptionPolicy == nil && spec.PriorityClassName == "" {
		spec.PreemptionPolicy = ptrTo(defaultPreemptionPolicy)
	}
	addDefaultToleration(spec, taintNodeNotReady)
	addDefaultToleration(spec, taintNodeUnreachable)
}

func addDefaultToleration(spec *corev1.PodSpec, key string) {
	for _, t := range spec.Tolerations {
		if (t.Key == key || t.Key == "") && (t.Effect == corev1.TaintEffectNoExecute || t.Effect == "") &&
			(t.Operator == corev1.TolerationOpExists || t.Key == key) {
			return
		}
	}
	spec.Tolerations = append(spec.Tolerations, corev1.Toleration{
		Key:               key,
		Operator:          corev1.TolerationOpExists,
		Effect:            corev1.TaintEffectNoExecute,
		TolerationSeconds: ptrTo(DefaultTolerationSeconds),
	})
}
