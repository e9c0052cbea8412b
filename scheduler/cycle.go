package scheduler

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// bindRetryDelay is how long a pod whose binding failed waits before retrying.
const bindRetryDelay = time.Second

// scheduleOne places one pod: bind it, or record why it cannot go anywhere
// (preempting lower-priority pods when that helps).
func (s *Scheduler) scheduleOne(ctx context.Context, pod *corev1.Pod) {
	start := s.clock.Now()
	req := podRequests(pod)
	nodes := s.cache.snapshot()
	if len(nodes) == 0 {
		s.unschedulable(ctx, pod, msgNoNodes, preemptionPlan{})
		return
	}
	fit := findNode(pod, req, nodes)
	if fit.node != "" {
		s.cache.assume(pod, fit.node)
		s.metrics.attempts.WithLabelValues("scheduled").Inc()
		s.metrics.latency.Observe(s.clock.Since(start).Seconds())
		s.bindAsync(ctx, pod, fit.node)
		return
	}
	post, plan := s.preempt(pod, req, fit, len(nodes))
	s.unschedulable(ctx, pod, fitErrorMessage(len(nodes), fit.reasons, post), plan)
}

// async runs fn with a bounded number of concurrent API writes.
func (s *Scheduler) async(fn func()) {
	s.writes.submit(fn)
}

func (s *Scheduler) bindAsync(ctx context.Context, pod *corev1.Pod, node string) {
	s.async(func() {
		err := s.bind(ctx, pod, node)
		if err == nil {
			s.queue.done(pod.UID)
			s.recorder.Eventf(pod, nil, corev1.EventTypeNormal, "Scheduled", "Binding", "Successfully assigned %v/%v to %v", pod.Namespace, pod.Name, node)
			s.log.Debug("pod bound", "namespace", pod.Namespace, "name", pod.Name, "node", node)
			return
		}
		s.cache.removePod(pod.UID)
		if apierrors.IsNotFound(err) {
			s.queue.remove(pod.UID)
			return
		}
		s.metrics.attempts.WithLabelValues("error").Inc()
		s.log.Info("binding failed", "namespace", pod.Namespace, "name", pod.Name, "node", node, "err", err)
		s.recorder.Eventf(pod, nil, corev1.EventTypeWarning, "FailedScheduling", "Scheduling", "Binding rejected: %v", err)
		if s.wait(ctx, bindRetryDelay) {
			s.queue.retry(pod.UID)
		}
	})
}

func (s *Scheduler) bind(ctx context.Context, pod *corev1.Pod, node string) error {
	b := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}
	if err := s.client.CoreV1().Pods(pod.Namespace).Bind(ctx, b, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("bind pod %s/%s to %s: %w", pod.Namespace, pod.Name, node, err)
	}
	return nil
}

// unschedulable records a failed attempt: event, PodScheduled=False
// condition (and nominated node), then parks the pod. Victims of a
// preemption plan are evicted only after the nomination is written, so the
// pod, woken by their deletion, cannot bind before its nominatedNodeName
// lands.
func (s *Scheduler) unschedulable(ctx context.Context, pod *corev1.Pod, msg string, plan preemptionPlan) {
	s.metrics.attempts.WithLabelValues("unschedulable").Inc()
	s.queue.unschedulable(pod.UID)
	s.async(func() {
		s.recorder.Eventf(pod, nil, corev1.EventTypeWarning, "FailedScheduling", "Scheduling", msg)
		cond := corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: msg}
		if err := s.patchCondition(ctx, pod, cond, plan.node); err != nil {
			s.log.Info("recording unschedulable pod failed", "namespace", pod.Namespace, "name", pod.Name, "err", err)
		}
		for _, v := range plan.victims {
			if err := s.evict(ctx, pod, v, plan.node); err != nil {
				s.log.Info("preemption failed", "namespace", v.Namespace, "name", v.Name, "err", err)
			}
		}
	})
}

// markGated records that a pod waits for its scheduling gates.
func (s *Scheduler) markGated(pod *corev1.Pod) {
	cond := corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonSchedulingGated, Message: msgGated}
	if hasCondition(pod, cond) {
		return
	}
	go func() {
		if err := s.patchCondition(context.Background(), pod, cond, ""); err != nil {
			s.log.Info("recording gated pod failed", "namespace", pod.Namespace, "name", pod.Name, "err", err)
		}
	}()
}
