package scheduler

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// preempt tries to make room for pod by choosing lower-priority pods to
// evict. It returns the preemption part of the failure message ("" when
// victims were chosen) and the plan, whose node is "" when there is none.
func (s *Scheduler) preempt(pod *corev1.Pod, req resources, fit fitResult, numNodes int) (string, preemptionPlan) {
	if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy == corev1.PreemptNever {
		return "preemption: " + msgPreemptNever, preemptionPlan{}
	}
	if s.victimsTerminating(pod) {
		return "preemption: not eligible due to a terminating pod on the nominated node.", preemptionPlan{}
	}
	var plans []preemptionPlan
	for _, n := range fit.resolvable {
		if victims, ok := selectVictims(pod, req, n, s.cache.podsOn(n.node.Name)); ok {
			plans = append(plans, preemptionPlan{node: n.node.Name, victims: victims})
		}
	}
	plan, ok := pickPlan(plans)
	if !ok {
		return preemptionMessage(numNodes, preemptionReasons(numNodes, len(fit.resolvable))), preemptionPlan{}
	}
	s.log.Info("preempting", "namespace", pod.Namespace, "name", pod.Name, "node", plan.node, "victims", len(plan.victims))
	return "", plan
}

// preemptionReasons: nodes where only resources were short found no victims;
// on the others preemption cannot help.
func preemptionReasons(numNodes, resolvable int) histogram {
	h := histogram{}
	if resolvable > 0 {
		h[msgNoVictims] = resolvable
	}
	if numNodes > resolvable {
		h[msgPreemptionUseless] = numNodes - resolvable
	}
	return h
}

// victimsTerminating: the pod already preempted on its nominated node and a
// lower-priority victim there is still terminating.
func (s *Scheduler) victimsTerminating(pod *corev1.Pod) bool {
	if pod.Status.NominatedNodeName == "" {
		return false
	}
	for _, e := range s.cache.podsOn(pod.Status.NominatedNodeName) {
		if e.pod.DeletionTimestamp != nil && priority(e.pod) < priority(pod) {
			return true
		}
	}
	return false
}

// evict marks the victim DisruptionTarget=True (PreemptionByScheduler) and
// deletes it.
func (s *Scheduler) evict(ctx context.Context, preemptor, victim *corev1.Pod, node string) error {
	cond := corev1.PodCondition{
		Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: corev1.PodReasonPreemptionByScheduler,
		Message: fmt.Sprintf("%s: preempting to accommodate a higher priority pod", Name),
	}
	if err := s.patchCondition(ctx, victim, cond, ""); err != nil {
		return err
	}
	uid := victim.UID
	err := s.client.CoreV1().Pods(victim.Namespace).Delete(ctx, victim.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete victim %s/%s: %w", victim.Namespace, victim.Name, err)
	}
	s.metrics.preemptions.Inc()
	s.recorder.Eventf(victim, preemptor, corev1.EventTypeNormal, "Preempted", "Preempting", "Preempted by pod %v on node %v", preemptor.UID, node)
	return nil
}
