package rootca

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The ConfigMap upstream publishes.
const (
	ConfigMapName         = "kube-root-ca.crt"
	DataKey               = "ca.crt"
	DescriptionAnnotation = "kubernetes.io/description"
	Description           = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. " +
		"No other usage is guaranteed across distributions of Kubernetes clusters."
)

// action is what a sync of one namespace does.
type action int

const (
	actionNone action = iota
	actionCreate
	actionUpdate
)

// decide compares a namespace's ConfigMap (nil when missing) with the CA
// and returns what to write: nothing for a namespace that is not active
// (it may not take new objects) or a ConfigMap already right; the
// ConfigMap to create or the corrected copy to update otherwise.
func decide(ns *corev1.Namespace, cm *corev1.ConfigMap, rootCA string) (action, *corev1.ConfigMap) {
	if ns == nil || ns.Status.Phase != corev1.NamespaceActive || ns.DeletionTimestamp != nil {
		return actionNone, nil
	}
	data := map[string]string{DataKey: rootCA}
	if cm == nil {
		return actionCreate, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName, Namespace: ns.Name,
				Annotations: map[string]string{DescriptionAnnotation: Description}},
			Data: data,
		}
	}
	if maps.Equal(cm.Data, data) && len(cm.BinaryData) == 0 && cm.Annotations[DescriptionAnnotation] != "" {
		return actionNone, nil
	}
	fixed := cm.DeepCopy()
	fixed.Data, fixed.BinaryData = data, nil
	if fixed.Annotations == nil {
		fixed.Annotations = map[string]string{}
	}
	fixed.Annotations[DescriptionAnnotation] = Description
	return actionUpdate, fixed
}
