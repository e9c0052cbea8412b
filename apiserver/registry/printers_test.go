package registry

import (
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }

func podWith(phase corev1.PodPhase, states ...corev1.ContainerState) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", CreationTimestamp: ago(5 * time.Minute)}, Status: corev1.PodStatus{Phase: phase}}
	for i, s := range states {
		name := fmt.Sprintf("c%d", i)
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: name})
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: name, State: s, Ready: s.Running != nil})
	}
	return p
}

func TestPodRowStatus(t *testing.T) {
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	completed := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed"}}
	errored := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1}}
	exit42 := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 42}}
	creating := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
	crash := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	oom := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}}
	deleting := podWith(corev1.PodRunning, running)
	ts := ago(0)
	deleting.DeletionTimestamp = &ts
	withInit := podWith(corev1.PodPending, creating)
	withInit.Spec.InitContainers = []corev1.Container{{Name: "init"}}
	withInit.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}}}
	restarted := podWith(corev1.PodRunning, running)
	restarted.Status.ContainerStatuses[0].RestartCount = 2
	restarted.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{FinishedAt: ago(90 * time.Second)}
	cases := []struct {
		name                    string
		pod                     *corev1.Pod
		ready, status, restarts string
	}{
		{"pending", podWith(corev1.PodPending), "0/0", "Pending", "0"},
		{"creating", podWith(corev1.PodPending, creating), "0/1", "ContainerCreating", "0"},
		{"running", podWith(corev1.PodRunning, running), "1/1", "Running", "0"},
		{"completed", podWith(corev1.PodSucceeded, completed), "0/1", "Completed", "0"},
		{"error", podWith(corev1.PodFailed, errored), "0/1", "Error", "0"},
		{"exit code", podWith(corev1.PodFailed, exit42), "0/1", "ExitCode:42", "0"},
		{"crashloop", podWith(corev1.PodRunning, crash), "0/1", "CrashLoopBackOff", "0"},
		{"oom", podWith(corev1.PodFailed, oom), "0/1", "OOMKilled", "0"},
		{"terminating", deleting, "1/1", "Terminating", "0"},
		{"init", withInit, "0/1", "Init:0/1", "0"},
		{"restarts", restarted, "1/1", "Running", "2 (90s ago)"},
	}
	for _, c := range cases {
		row := podRow(c.pod, now)
		if got := fmt.Sprint(row.Cells[1:4]); got != fmt.Sprint([]interface{}{c.ready, c.status, c.restarts}) {
			t.Errorf("%s: cells %s, want [%s %s %s]", c.name, got, c.ready, c.status, c.restarts)
		}
		if row.Cells[4] != "5m" {
			t.Errorf("%s: age %v", c.name, row.Cells[4])
		}
	}
}

func TestJobRowStatus(t *testing.T) {
	cond := func(t batchv1.JobConditionType) []batchv1.JobCondition {
		return []batchv1.JobCondition{{Type: t, Status: corev1.ConditionTrue}}
	}
	three := int32(3)
	start, end := ago(10*time.Minute), ago(8*time.Minute)
	cases := []struct {
		name               string
		job                batchv1.Job
		status, done, took string
	}{
		{"running", batchv1.Job{Status: batchv1.JobStatus{StartTime: &start}}, "Running", "0/1", "10m"},
		{"complete", batchv1.Job{Spec: batchv1.JobSpec{Completions: &three}, Status: batchv1.JobStatus{Succeeded: 3, StartTime: &start, CompletionTime: &end, Conditions: cond(batchv1.JobComplete)}}, "Complete", "3/3", "2m"},
		{"failed", batchv1.Job{Status: batchv1.JobStatus{Conditions: cond(batchv1.JobFailed)}}, "Failed", "0/1", ""},
		{"suspended", batchv1.Job{Status: batchv1.JobStatus{Conditions: cond(batchv1.JobSuspended)}}, "Suspended", "0/1", ""},
		{"failure target", batchv1.Job{Status: batchv1.JobStatus{Conditions: cond(batchv1.JobFailureTarget)}}, "FailureTarget", "0/1", ""},
		{"success criteria", batchv1.Job{Status: batchv1.JobStatus{Conditions: cond(batchv1.JobSuccessCriteriaMet)}}, "SuccessCriteriaMet", "0/1", ""},
		{"work queue", batchv1.Job{Spec: batchv1.JobSpec{Parallelism: &three}}, "Running", "0/1 of 3", ""},
	}
	for _, c := range cases {
		c.job.CreationTimestamp = ago(time.Hour)
		row := jobRow(&c.job, now)
		if got := fmt.Sprint(row.Cells[1:4]); got != fmt.Sprint([]interface{}{c.status, c.done, c.took}) {
			t.Errorf("%s: cells %s", c.name, got)
		}
	}
}

func TestNodeRow(t *testing.T) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"node-role.kubernetes.io/control-plane": "", "node-role.kubernetes.io/worker": ""}}}
	n.Spec.Unschedulable = true
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	row := nodeRow(n, now)
	if row.Cells[1] != "Ready,SchedulingDisabled" || row.Cells[2] != "control-plane,worker" {
		t.Fatalf("node cells %v", row.Cells)
	}
}
