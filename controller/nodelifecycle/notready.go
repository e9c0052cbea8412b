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

// podsToMarkNotReady are the pods of node whose Ready condition is True:
// when the node stops posting status, nobody vouches for them any more.
func podsToMarkNotReady(pods []*corev1.Pod, node string) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if p.Spec.NodeName != node {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				out = append(out, p)
			}
		}
	}
	return out
}

// markPodsNotReady sets Ready=False on the ready pods of a node that went
// silent and records NodeNotReady on each, as upstream's node controller.
func (c *Controller) markPodsNotReady(ctx context.Context, node string, now metav1.Time) error {
	pods, err := c.pods.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("list pods: %w", err)
	}
	var errs []error
	for _, p := range podsToMarkNotReady(pods, node) {
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"uid": p.UID},
			"status": map[string]any{"conditions": []map[string]any{{
				"type": corev1.PodReady, "status": corev1.ConditionFalse, "lastTransitionTime": now}}},
		})
		if err != nil {
			return fmt.Errorf("encode pod status patch: %w", err)
		}
		_, err = c.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("mark pod %s/%s not ready: %w", p.Namespace, p.Name, err))
			continue
		}
		c.log.Info("marked pod not ready", "namespace", p.Namespace, "name", p.Name, "node", node)
		c.nodeEvents.Event(p, corev1.EventTypeWarning, "NodeNotReady", "Node is not ready")
	}
	return errors.Join(errs...)
}
