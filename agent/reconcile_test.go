package agent

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestReadinessReverted(t *testing.T) {
	status := func(ready corev1.ConditionStatus) *corev1.PodStatus {
		return &corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: ready}, {Type: corev1.ContainersReady, Status: corev1.ConditionTrue}}}
	}
	for name, tc := range map[string]struct {
		api       *corev1.PodStatus
		apiRV     string
		written   *corev1.PodStatus
		writtenRV string
		want      bool
	}{
		"node controller marked it not ready": {status("False"), "12", status("True"), "10", true},
		"cache older than our write":          {status("False"), "9", status("True"), "10", false},
		"cache is our write":                  {status("True"), "10", status("True"), "10", false},
		"later write kept readiness":          {status("True"), "15", status("True"), "10", false},
		"nothing written yet":                 {status("False"), "12", nil, "", false},
		"opaque resourceVersions":             {status("False"), "abc", status("True"), "def", false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := readinessReverted(tc.api, tc.apiRV, tc.written, tc.writtenRV); got != tc.want {
				t.Fatalf("readinessReverted = %v, want %v", got, tc.want)
			}
		})
	}
}
