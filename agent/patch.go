package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// patchStatus writes status with a strategic merge patch of pods/status
// carrying the pod's UID as a precondition, as the kubelet does. Conditions
// merge by type, so conditions of other writers (DisruptionTarget from an
// eviction) stay; reason and message are sent as null when empty so stale
// ones do not survive the merge. Fields only the agent writes and that
// never change once set (host and pod IPs, startTime) and the server's
// qosClass are left out when pod (the agent's copy) has them as they are,
// as the kubelet's two-way patch leaves out what the API has already. A
// server without strategic merge patch gets a JSON merge patch with the
// full condition list.
func (a *Agent) patchStatus(ctx context.Context, pod *corev1.Pod, status *corev1.PodStatus) error {
	_, err := a.patchStatusRV(ctx, pod, status)
	return err
}

// patchStatusRV is patchStatus returning the pod's new resourceVersion.
func (a *Agent) patchStatusRV(ctx context.Context, pod *corev1.Pod, status *corev1.PodStatus) (string, error) {
	body, err := statusPatch(pod.UID, &pod.Status, status, nil)
	if err != nil {
		return "", err
	}
	rv, err := a.sendStatusPatch(ctx, pod, types.StrategicMergePatchType, body)
	if apierrors.IsUnsupportedMediaType(err) {
		body, err = statusPatch(pod.UID, &pod.Status, status, mergeOthers(status.Conditions, pod.Status.Conditions))
		if err != nil {
			return "", err
		}
		rv, err = a.sendStatusPatch(ctx, pod, types.MergePatchType, body)
	}
	if err != nil {
		return "", fmt.Errorf("patch status of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return rv, nil
}

// sendStatusPatch patches pod's status with body through
// Config.PatchStatus, or Client, and answers its new resourceVersion.
func (a *Agent) sendStatusPatch(ctx context.Context, pod *corev1.Pod, pt types.PatchType, body []byte) (string, error) {
	if a.cfg.PatchStatus != nil {
		return a.cfg.PatchStatus(ctx, pod.Namespace, pod.Name, pt, body)
	}
	out, err := a.cfg.Client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, pt, body, metav1.PatchOptions{}, "status")
	if err != nil {
		return "", err
	}
	return out.ResourceVersion, nil
}

// statusPatch renders the patch body of status over base, what the API
// had as far as the agent knows; conds, when set, replaces the status
// conditions.
func statusPatch(uid types.UID, base, status *corev1.PodStatus, conds []corev1.PodCondition) ([]byte, error) {
	if conds == nil {
		conds = status.Conditions
	}
	body := statusPatchBody{Status: patchedStatus{PodStatus: status, Conditions: make([]patchedCondition, 0, len(conds))}}
	body.Metadata.UID = uid
	body.Status.setChanged(base, status)
	for i := range conds {
		c := &conds[i]
		body.Status.Conditions = append(body.Status.Conditions, patchedCondition{Type: c.Type, Status: c.Status,
			LastTransitionTime: c.LastTransitionTime, Reason: nullIfEmpty(c.Reason), Message: nullIfEmpty(c.Message)})
	}
	b, err := json.Marshal(&body)
	if err != nil {
		return nil, fmt.Errorf("encode status: %w", err)
	}
	return b, nil
}

// statusPatchBody is a status patch: the UID precondition and the status.
type statusPatchBody struct {
	Metadata struct {
		UID types.UID `json:"uid"`
	} `json:"metadata"`
	Status patchedStatus `json:"status"`
}

// patchedStatus is the status as it encodes, but for conditions, which it
// always has, and the fields below, sent only when changed (a shallower
// field wins over the embedded status's; empty ones are left out).
type patchedStatus struct {
	*corev1.PodStatus
	Conditions []patchedCondition `json:"conditions"`

	HostIP    string             `json:"hostIP,omitempty"`
	HostIPs   []corev1.HostIP    `json:"hostIPs,omitempty"`
	PodIP     string             `json:"podIP,omitempty"`
	PodIPs    []corev1.PodIP     `json:"podIPs,omitempty"`
	StartTime *metav1.Time       `json:"startTime,omitempty"`
	QOSClass  corev1.PodQOSClass `json:"qosClass,omitempty"`
}

// setChanged fills the fields that status has otherwise than base. No
// other writer sets them (the agent's IPs and startTime, set once; the
// server's qosClass, set at create), so a base older than the API can
// only lack them, and then they are sent.
func (p *patchedStatus) setChanged(base, status *corev1.PodStatus) {
	if status.HostIP != base.HostIP || !slices.Equal(status.HostIPs, base.HostIPs) {
		p.HostIP, p.HostIPs = status.HostIP, status.HostIPs
	}
	if status.PodIP != base.PodIP || !slices.Equal(status.PodIPs, base.PodIPs) {
		p.PodIP, p.PodIPs = status.PodIP, status.PodIPs
	}
	if !timeEqual(status.StartTime, base.StartTime) {
		p.StartTime = status.StartTime
	}
	if status.QOSClass != base.QOSClass {
		p.QOSClass = status.QOSClass
	}
}

func timeEqual(a, b *metav1.Time) bool {
	return (a == nil) == (b == nil) && (a == nil || a.Equal(b))
}

// patchedCondition is a condition whose empty fields are sent as null, so
// that the merge removes what an earlier status had there.
type patchedCondition struct {
	Type               corev1.PodConditionType `json:"type"`
	Status             corev1.ConditionStatus  `json:"status"`
	LastProbeTime      *metav1.Time            `json:"lastProbeTime"`
	LastTransitionTime metav1.Time             `json:"lastTransitionTime"`
	Reason             *string                 `json:"reason"`
	Message            *string                 `json:"message"`
}

func nullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
