package agent

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// statusPatchViaMap is how the status patch was built before statusPatch
// encoded it in one pass: the status's JSON as a map, its conditions
// replaced by ones with explicit nulls.
func statusPatchViaMap(t *testing.T, uid types.UID, status *corev1.PodStatus, conds []corev1.PodCondition) []byte {
	t.Helper()
	raw, err := json.Marshal(status)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
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
	b, err := json.Marshal(map[string]any{"metadata": map[string]any{"uid": uid}, "status": m})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestStatusPatchBody(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	started := true
	full := &corev1.PodStatus{Phase: corev1.PodFailed, Reason: "DeadlineExceeded", Message: "too long",
		HostIP: "127.0.0.1", HostIPs: []corev1.HostIP{{IP: "127.0.0.1"}}, PodIP: "127.1.0.1", PodIPs: []corev1.PodIP{{IP: "127.1.0.1"}},
		StartTime: &now, QOSClass: corev1.PodQOSBestEffort,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: reasonPodFailed, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: reasonContainersNotReady,
				Message: "containers with unready status: [c]", LastTransitionTime: now},
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
		},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "c", Image: "x", ContainerID: "batchlet://1", RestartCount: 2, Started: &started,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Error",
				StartedAt: now, FinishedAt: now, ContainerID: "batchlet://1"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}}},
		InitContainerStatuses: []corev1.ContainerStatus{{Name: "i", State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}}},
	}
	others := append(append([]corev1.PodCondition{}, full.Conditions...),
		corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI", LastTransitionTime: now})
	for name, tc := range map[string]struct {
		status *corev1.PodStatus
		conds  []corev1.PodCondition
	}{
		"empty":            {status: &corev1.PodStatus{}},
		"full":             {status: full},
		"conditions given": {status: full, conds: others},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := statusPatch("uid-1", tc.status, tc.conds)
			if err != nil {
				t.Fatal(err)
			}
			var gotJSON, wantJSON any
			if err := json.Unmarshal(got, &gotJSON); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(statusPatchViaMap(t, "uid-1", tc.status, tc.conds), &wantJSON); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(gotJSON, wantJSON) {
				t.Fatalf("patch\n%s\nwant the same JSON as\n%s", got, statusPatchViaMap(t, "uid-1", tc.status, tc.conds))
			}
		})
	}
}
