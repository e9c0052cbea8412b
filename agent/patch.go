package agent

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// patchStatus writes status with a strategic merge patch of pods/status
// carrying the pod's UID as a precondition, as the kubelet does. Conditions
// merge by type, so conditions of other writers (DisruptionTarget from an
// eviction) stay; reason and message are sent as null when empty so stale
// ones do not survive the merge. A server without strategic merge patch
// gets a JSON merge patch with the full condition list.
func (a *Agent) patchStatus(ctx context.Context, pod *corev1.Pod, status *corev1.PodStatus) error {
	_, err := a.patchStatusRV(ctx, pod, status)
	return err
}

// patchStatusRV is patchStatus returning the pod's new resourceVersion.
func (a *Agent) patchStatusRV(ctx context.Context, pod *corev1.Pod, status *corev1.PodStatus) (string, error) {
	body, err := statusPatch(pod.UID, status, nil)
	if err != nil {
		return "", err
	}
	pods := a.cfg.Client.CoreV1().Pods(pod.Namespace)
	out, err := pods.Patch(ctx, pod.Name, types.StrategicMergePatchType, body, metav1.PatchOptions{}, "status")
	if apierrors.IsUnsupportedMediaType(err) {
		body, err = statusPatch(pod.UID, status, mergeOthers(status.Conditions, pod.Status.Conditions))
		if err != nil {
			return "", err
		}
		out, err = pods.Patch(ctx, pod.Name, types.MergePatchType, body, metav1.PatchOptions{}, "status")
	}
	if err != nil {
		return "", fmt.Errorf("patch status of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return out.ResourceVersion, nil
}

// statusPatch renders the patch body; conds, when set, replaces the status
// conditions.
func statusPatch(uid types.UID, status *corev1.PodStatus, conds []corev1.PodCondition) ([]byte, error) {
	raw, err := json.Marshal(status)
	if err != nil {
		return nil, fmt.Errorf("encode status: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("encode status: %w", err)
	}
	if conds == nil {
		conds = status.Conditions
	}
	list := make([]map[string]any, 0, len(conds))
	for _, c := range conds {
		cm := map[string]any{"type": c.Type, "status": c.Status, "lastProbeTime": nil,
			"lastTransitionTime": c.LastTransitionTime, "reason": nil, "message": nil}
		if c.Reason != "" {
			cm["reason"] = c.Reason
		}
		if c.Message != "" {
			cm["message"] = c.Message
		}
		list = append(list, cm)
	}
	m["conditions"] = list
	return json.Marshal(map[string]any{"metadata": map[string]any{"uid": uid}, "status": m})
}
