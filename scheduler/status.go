package scheduler

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// hasCondition reports whether pod already carries cond (same status,
// reason and message).
func hasCondition(pod *corev1.Pod, cond corev1.PodCondition) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == cond.Type {
			return c.Status == cond.Status && c.Reason == cond.Reason && c.Message == cond.Message
		}
	}
	return false
}

// transitionTime keeps the old lastTransitionTime when the status is unchanged.
func transitionTime(pod *corev1.Pod, cond corev1.PodCondition, now metav1.Time) metav1.Time {
	for _, c := range pod.Status.Conditions {
		if c.Type == cond.Type && c.Status == cond.Status && !c.LastTransitionTime.IsZero() {
			return c.LastTransitionTime
		}
	}
	return now
}

// conditionPatch builds a strategic merge patch of pods/status setting cond
// (merged by type) and, when given, status.nominatedNodeName.
func conditionPatch(cond corev1.PodCondition, nominated string) ([]byte, error) {
	status := map[string]any{"conditions": []corev1.PodCondition{cond}}
	if nominated != "" {
		status["nominatedNodeName"] = nominated
	}
	return json.Marshal(map[string]any{"status": status})
}

// patchCondition writes cond to the pod's status unless it is already there.
func (s *Scheduler) patchCondition(ctx context.Context, pod *corev1.Pod, cond corev1.PodCondition, nominated string) error {
	if hasCondition(pod, cond) && (nominated == "" || pod.Status.NominatedNodeName == nominated) {
		return nil
	}
	cond.LastTransitionTime = transitionTime(pod, cond, metav1.NewTime(s.clock.Now()))
	patch, err := conditionPatch(cond, nominated)
	if err != nil {
		return fmt.Errorf("encode status patch: %w", err)
	}
	_, err = s.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("patch status of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}
