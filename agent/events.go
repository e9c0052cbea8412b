package agent

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
)

func eventScheme() *k8sruntime.Scheme { return scheme.Scheme }

// eventSink writes events with a fresh context per call.
type eventSink struct{ client kubernetes.Interface }

func (s *eventSink) Create(e *corev1.Event) (*corev1.Event, error) {
	return s.client.CoreV1().Events(e.Namespace).Create(context.Background(), e, metav1.CreateOptions{})
}

func (s *eventSink) Update(e *corev1.Event) (*corev1.Event, error) {
	return s.client.CoreV1().Events(e.Namespace).Update(context.Background(), e, metav1.UpdateOptions{})
}

func (s *eventSink) Patch(e *corev1.Event, data []byte) (*corev1.Event, error) {
	return s.client.CoreV1().Events(e.Namespace).Patch(context.Background(), e.Name, "application/strategic-merge-patch+json", data, metav1.PatchOptions{})
}

// containerEvent records a runtime's container event against the pod with
// the container's fieldPath, as the kubelet does.
func (a *Agent) containerEvent(pod *corev1.Pod, fieldPath, eventType, reason, message string) {
	ref := &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name,
		UID: pod.UID, ResourceVersion: pod.ResourceVersion, FieldPath: fieldPath}
	a.recorder.Event(ref, eventType, reason, message)
}
