package agent

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batchlet/batchlet/runtime/sim"
)

// lostPod is a pod a previous agent process ran: the API shows its
// container running, the new agent's runtime has never heard of it.
func lostPod(name string, policy corev1.RestartPolicy, restarts int32, startTime time.Time) *corev1.Pod {
	p := boundPod(name, map[string]string{sim.DurationAnnotation: "1h"})
	p.Spec.RestartPolicy = policy
	st := metav1.NewTime(startTime)
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &st, PodIP: "127.1.0.9", HostIP: "127.0.0.1",
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
		},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "main", Image: "busybox", Ready: true, Started: new(true),
			RestartCount: restarts, ContainerID: "sim://old",
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: st}}}}}
	return p
}

func TestLostNeverPodFails(t *testing.T) {
	h := newHarness(t)
	start := h.clock.Now().Add(-time.Minute)
	h.create(lostPod("lost1", corev1.RestartPolicyNever, 0, start))
	p := h.waitPhase("lost1", corev1.PodFailed)
	cs := p.Status.ContainerStatuses
	if len(cs) != 1 {
		t.Fatalf("container statuses %+v", cs)
	}
	term := cs[0].State.Terminated
	if term == nil || term.ExitCode != 137 || term.Reason != "ContainerStatusUnknown" ||
		term.Message != "The container could not be located when the pod was terminated" {
		t.Fatalf("state %+v, want terminated ContainerStatusUnknown 137", cs[0].State)
	}
	if cs[0].RestartCount != 0 || cs[0].Ready || cs[0].LastTerminationState.Terminated != nil {
		t.Fatalf("restartCount %d ready %v lastState %+v: the pod must not be restarted", cs[0].RestartCount, cs[0].Ready, cs[0].LastTerminationState)
	}
	for _, ct := range []corev1.PodConditionType{corev1.PodReady, corev1.ContainersReady} {
		if c := condition(p, ct); c == nil || c.Status != corev1.ConditionFalse || c.Reason != "PodFailed" {
			t.Fatalf("%s = %+v, want False/PodFailed", ct, c)
		}
	}
	if p.Status.StartTime == nil || !p.Status.StartTime.Time.Equal(start.Truncate(time.Second)) {
		t.Fatalf("startTime %v, want the first run's %v", p.Status.StartTime, start)
	}
	// Lost to the node, not failed by itself: a disruption, as the
	// kubelet's own terminations are.
	if c := condition(p, corev1.DisruptionTarget); c == nil || c.Status != corev1.ConditionTrue ||
		c.Reason != "TerminationByKubelet" || c.Message != "Pod was terminated because its containers were lost when the node agent restarted." {
		t.Fatalf("DisruptionTarget = %+v, want True/TerminationByKubelet with the lost message", c)
	}
	// Nothing runs again, even after the sim's duration.
	h.clock.Step(2 * time.Hour)
	rs, ok := h.sim.PodStatus(p.UID)
	if !ok || !rs.Done || rs.ContainerStatuses[0].State.Terminated.Reason != "ContainerStatusUnknown" {
		t.Fatalf("runtime status %+v (known %v), want done without a run", rs, ok)
	}
}

func TestLostOnFailurePodRestartsInPlace(t *testing.T) {
	h := newHarness(t)
	h.create(lostPod("lost2", corev1.RestartPolicyOnFailure, 2, h.clock.Now().Add(-time.Minute)))
	var p *corev1.Pod
	h.eventually("restarted container running", func() bool {
		p = h.pod("lost2")
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].State.Running != nil && cs[0].ContainerID != "sim://old"
	})
	cs := p.Status.ContainerStatuses[0]
	last := cs.LastTerminationState.Terminated
	if cs.RestartCount != 3 || last == nil || last.ExitCode != 137 || last.Reason != "ContainerStatusUnknown" ||
		last.Message != "The container could not be located when the pod was deleted.  The container used to be Running" {
		t.Fatalf("restartCount %d lastState %+v, want 3 and the unknown termination", cs.RestartCount, cs.LastTerminationState)
	}
	if p.Status.Phase != corev1.PodRunning {
		t.Fatalf("phase %s", p.Status.Phase)
	}
	if c := condition(p, corev1.DisruptionTarget); c != nil {
		t.Fatalf("DisruptionTarget %+v on a pod restarted in place", c)
	}
	h.clock.Step(time.Hour)
	p = h.waitPhase("lost2", corev1.PodSucceeded)
	if rc := p.Status.ContainerStatuses[0].RestartCount; rc != 3 {
		t.Fatalf("restartCount %d after success, want 3", rc)
	}
}

func TestBoundNotStartedPodStarts(t *testing.T) {
	h := newHarness(t)
	p := boundPod("fresh", nil)
	st := metav1.NewTime(h.clock.Now())
	// A previous agent wrote the first status, then died before any start.
	p.Status.StartTime = &st
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Image: "busybox", Started: new(false),
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}
	h.create(p)
	got := h.waitPhase("fresh", corev1.PodSucceeded)
	cs := got.Status.ContainerStatuses[0]
	if cs.RestartCount != 0 || cs.LastTerminationState.Terminated != nil || cs.State.Terminated.Reason != "Completed" {
		t.Fatalf("status %+v, want a first run to completion", cs)
	}
}
