package scheduler

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/cache"
)

// responsible: the pod is ours to schedule.
func responsible(pod *corev1.Pod) bool {
	return pod.Spec.SchedulerName == "" || pod.Spec.SchedulerName == Name
}

func terminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

func (s *Scheduler) onPod(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if pod.Spec.NodeName != "" {
		s.queue.remove(pod.UID)
		if terminal(pod) {
			s.cache.removePod(pod.UID)
			s.queue.moveAll()
			return
		}
		s.cache.upsertPod(pod)
		return
	}
	if !responsible(pod) || terminal(pod) || pod.DeletionTimestamp != nil {
		s.queue.remove(pod.UID)
		return
	}
	if s.cache.isAssumed(pod.UID) {
		return // bound by us; the informer has not caught up
	}
	s.queue.upsert(pod)
	if len(pod.Spec.SchedulingGates) > 0 {
		s.markGated(pod)
	}
}

func (s *Scheduler) onPodDelete(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	s.queue.remove(pod.UID)
	if pod.Spec.NodeName != "" || s.cache.isAssumed(pod.UID) {
		s.cache.removePod(pod.UID)
		s.queue.moveAll()
	}
}

func (s *Scheduler) onNode(obj any) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	old := s.cache.node(node.Name)
	s.cache.setNode(node)
	if old == nil || schedulingRelevantChange(old, node) {
		s.queue.moveAll()
	}
}

// schedulingRelevantChange ignores heartbeat-only node status updates.
func schedulingRelevantChange(old, cur *corev1.Node) bool {
	return !equality.Semantic.DeepEqual(old.Status.Allocatable, cur.Status.Allocatable) ||
		!equality.Semantic.DeepEqual(old.Labels, cur.Labels) ||
		!equality.Semantic.DeepEqual(old.Spec.Taints, cur.Spec.Taints) ||
		old.Spec.Unschedulable != cur.Spec.Unschedulable ||
		nodeReady(old) != nodeReady(cur)
}

func (s *Scheduler) onNodeDelete(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if node, ok := obj.(*corev1.Node); ok {
		s.cache.removeNode(node.Name)
	}
}
