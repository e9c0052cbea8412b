package agent

import (
	"context"
	"log/slog"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
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

// throttledRecorder records events up to a rate and drops the others, as
// the kubelet's event client, limited by --event-qps and --event-burst,
// ends up doing when pods start faster than that (its queue fills, then
// drops). Without a queue nothing is recorded late, and the agent spends
// nothing on events nobody would see.
type throttledRecorder struct {
	record.EventRecorder
	limit   flowcontrol.PassiveRateLimiter
	log     *slog.Logger
	dropped atomic.Int64
}

func (r *throttledRecorder) accept(reason string) bool {
	if r.limit.TryAccept() {
		return true
	}
	if r.dropped.Add(1) == 1 {
		r.log.Info("events beyond the event rate limit are dropped, as the kubelet's", "reason", reason)
	}
	return false
}

func (r *throttledRecorder) Event(object k8sruntime.Object, eventtype, reason, message string) {
	if r.accept(reason) {
		r.EventRecorder.Event(object, eventtype, reason, message)
	}
}

func (r *throttledRecorder) Eventf(object k8sruntime.Object, eventtype, reason, messageFmt string, args ...any) {
	if r.accept(reason) {
		r.EventRecorder.Eventf(object, eventtype, reason, messageFmt, args...)
	}
}

func (r *throttledRecorder) AnnotatedEventf(object k8sruntime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any) {
	if r.accept(reason) {
		r.EventRecorder.AnnotatedEventf(object, annotations, eventtype, reason, messageFmt, args...)
	}
}
