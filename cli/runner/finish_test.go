package runner

import (
	"bytes"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// The Job's terminal status can reach the runner before its pod watch shows
// the pod: the end of the run still prints that pod's log.
func TestFinishStreamsLogsOfPodsTheWatchHasNotShown(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pi-abcde", Namespace: "default", UID: "u1",
			Labels: map[string]string{"batch.kubernetes.io/job-name": "pi"}},
		Status: corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{{
			Name: "pi", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}}}},
	}
	kube := fake.NewClientset(pod)
	var stdout, stderr bytes.Buffer
	f := newFollower(Options{Stdout: &stdout, Stderr: &stderr, Now: time.Now}, &clients{kube: kube}, nil)
	items := []ItemResult{{Kind: "Job", Namespace: "default", Name: "pi", Outcome: OutcomeComplete}}
	f.finish(t.Context(), items)
	if got := stdout.String(); got != "fake logs\n" {
		t.Errorf("stdout %q, want the pod's log (the fake client's %q)", got, "fake logs")
	}
}
