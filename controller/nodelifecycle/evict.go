package nodelifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// evictPass deletes pods on NoExecute-tainted nodes whose tolerations ran out.
func (c *Controller) evictPass(ctx context.Context) error {
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	tainted := map[string][]corev1.Taint{}
	for _, n := range nodes {
		for _, t := range n.Spec.Taints {
			if t.Effect == corev1.TaintEffectNoExecute {
				tainted[n.Name] = n.Spec.Taints
				break
			}
		}
	}
	if len(tainted) == 0 {
		return nil
	}
	pods, err := c.pods.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("list pods: %w", err)
	}
	now := c.clock.Now()
	var errs []error
	for _, p := range pods {
		taints, ok := tainted[p.Spec.NodeName]
		if !ok || p.DeletionTimestamp != nil {
			continue
		}
		if evictNow, _, _ := evictionDue(p, taints, now); evictNow {
			errs = append(errs, c.evict(ctx, p))
		}
	}
	return errors.Join(errs...)
}

// evict marks the pod DisruptionTarget=True (DeletionByTaintManager) unless
// it is terminal, then deletes it.
func (c *Controller) evict(ctx context.Context, pod *corev1.Pod) error {
	c.log.Info("taint manager evicting pod", "namespace", pod.Namespace, "name", pod.Name, "node", pod.Spec.NodeName)
	c.recorder.Eventf(pod, corev1.EventTypeNormal, "TaintManagerEviction", "Marking for deletion Pod %s/%s", pod.Namespace, pod.Name)
	if pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
		cond := corev1.PodCondition{
			Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: ReasonDeletionByTaint,
			Message: messageTaintEviction, LastTransitionTime: metav1.NewTime(c.clock.Now()),
		}
		patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.PodCondition{cond}}})
		if err != nil {
			return fmt.Errorf("encode pod status patch: %w", err)
		}
		_, err = c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("mark pod %s/%s for taint eviction: %w", pod.Namespace, pod.Name, err)
		}
	}
	uid := pod.UID
	err := c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	c.evicted.Inc()
	return nil
}
