package agent

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestRestartSum(t *testing.T) {
	terminated := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	cases := []struct {
		name     string
		statuses []corev1.ContainerStatus
		want     int32
	}{
		{"none", nil, 0},
		{"running, never restarted", []corev1.ContainerStatus{{State: running}}, 0},
		{"ended, waiting to restart", []corev1.ContainerStatus{{State: terminated}}, 1},
		{"restarted and running", []corev1.ContainerStatus{{State: running, RestartCount: 1}}, 1},
		{"two containers", []corev1.ContainerStatus{{State: running, RestartCount: 2}, {State: terminated, RestartCount: 1}}, 4},
	}
	for _, tc := range cases {
		if got := restartSum(tc.statuses); got != tc.want {
			t.Errorf("%s: restartSum = %d, want %d", tc.name, got, tc.want)
		}
	}
}
