package agent

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batchlet/batchlet/runtime"
)

func running() corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: "c", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
}

func exited(code int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: "c", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}}
}

func waiting(reason string, lastExit *int32) corev1.ContainerStatus {
	cs := corev1.ContainerStatus{Name: "c", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}
	if lastExit != nil {
		cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: *lastExit}
	}
	return cs
}

func TestPodPhase(t *testing.T) {
	one := int32(1)
	spec := func(policy corev1.RestartPolicy, init bool) corev1.PodSpec {
		s := corev1.PodSpec{RestartPolicy: policy, Containers: []corev1.Container{{Name: "c"}}}
		if init {
			s.InitContainers = []corev1.Container{{Name: "i"}}
		}
		return s
	}
	initStatus := func(cs corev1.ContainerStatus) []corev1.ContainerStatus {
		cs.Name = "i"
		return []corev1.ContainerStatus{cs}
	}
	cases := []struct {
		name     string
		spec     corev1.PodSpec
		init     []corev1.ContainerStatus
		ctrs     []corev1.ContainerStatus
		terminal bool
		want     corev1.PodPhase
	}{
		{"creating", spec(corev1.RestartPolicyNever, false), nil, []corev1.ContainerStatus{waiting("ContainerCreating", nil)}, false, corev1.PodPending},
		{"running", spec(corev1.RestartPolicyNever, false), nil, []corev1.ContainerStatus{running()}, false, corev1.PodRunning},
		{"succeeded", spec(corev1.RestartPolicyNever, false), nil, []corev1.ContainerStatus{exited(0)}, false, corev1.PodSucceeded},
		{"failed never", spec(corev1.RestartPolicyNever, false), nil, []corev1.ContainerStatus{exited(3)}, false, corev1.PodFailed},
		{"onfailure restarting", spec(corev1.RestartPolicyOnFailure, false), nil, []corev1.ContainerStatus{waiting("CrashLoopBackOff", &one)}, false, corev1.PodRunning},
		{"onfailure exited non-zero", spec(corev1.RestartPolicyOnFailure, false), nil, []corev1.ContainerStatus{exited(1)}, false, corev1.PodRunning},
		{"always exited 0", spec(corev1.RestartPolicyAlways, false), nil, []corev1.ContainerStatus{exited(0)}, false, corev1.PodRunning},
		{"always killed", spec(corev1.RestartPolicyAlways, false), nil, []corev1.ContainerStatus{exited(143)}, true, corev1.PodFailed},
		{"onfailure killed", spec(corev1.RestartPolicyOnFailure, false), nil, []corev1.ContainerStatus{exited(137)}, true, corev1.PodFailed},
		{"init running", spec(corev1.RestartPolicyNever, true), initStatus(running()), []corev1.ContainerStatus{waiting("PodInitializing", nil)}, false, corev1.PodPending},
		{"init failed never", spec(corev1.RestartPolicyNever, true), initStatus(exited(1)), []corev1.ContainerStatus{waiting("PodInitializing", nil)}, false, corev1.PodFailed},
		{"init failed onfailure", spec(corev1.RestartPolicyOnFailure, true), initStatus(waiting("CrashLoopBackOff", &one)), []corev1.ContainerStatus{waiting("PodInitializing", nil)}, false, corev1.PodPending},
		{"init done", spec(corev1.RestartPolicyNever, true), initStatus(exited(0)), []corev1.ContainerStatus{running()}, false, corev1.PodRunning},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := podPhase(&tc.spec, tc.init, tc.ctrs, tc.terminal); got != tc.want {
				t.Fatalf("phase %s, want %s", got, tc.want)
			}
		})
	}
}

func TestPodStatusConditions(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	pod := &corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
		InitContainers: []corev1.Container{{Name: "i"}},
		Containers:     []corev1.Container{{Name: "c"}}}}
	initRunning := running()
	initRunning.Name = "i"
	initDone := exited(0)
	initDone.Name = "i"
	cases := []struct {
		name string
		rt   runtime.PodStatus
		want map[corev1.PodConditionType][3]string // status, reason, message
	}{
		{"initializing", runtime.PodStatus{InitContainerStatuses: []corev1.ContainerStatus{initRunning}, ContainerStatuses: []corev1.ContainerStatus{waiting("PodInitializing", nil)}},
			map[corev1.PodConditionType][3]string{
				corev1.PodInitialized:  {"False", "ContainersNotInitialized", "containers with incomplete status: [i]"},
				corev1.ContainersReady: {"False", "ContainersNotReady", "containers with unready status: [c]"},
				corev1.PodReady:        {"False", "ContainersNotReady", "containers with unready status: [c]"},
				corev1.PodScheduled:    {"True", "", ""},
			}},
		{"running", runtime.PodStatus{InitContainerStatuses: []corev1.ContainerStatus{initDone}, ContainerStatuses: []corev1.ContainerStatus{running()}},
			map[corev1.PodConditionType][3]string{
				corev1.PodInitialized:  {"True", "", ""},
				corev1.ContainersReady: {"True", "", ""},
				corev1.PodReady:        {"True", "", ""},
			}},
		{"succeeded", runtime.PodStatus{Done: true, InitContainerStatuses: []corev1.ContainerStatus{initDone}, ContainerStatuses: []corev1.ContainerStatus{exited(0)}},
			map[corev1.PodConditionType][3]string{
				corev1.PodInitialized:  {"True", "PodCompleted", ""},
				corev1.ContainersReady: {"False", "PodCompleted", ""},
				corev1.PodReady:        {"False", "PodCompleted", ""},
			}},
		{"failed", runtime.PodStatus{Done: true, InitContainerStatuses: []corev1.ContainerStatus{initDone}, ContainerStatuses: []corev1.ContainerStatus{exited(2)}},
			map[corev1.PodConditionType][3]string{
				corev1.PodInitialized:  {"True", "", ""},
				corev1.ContainersReady: {"False", "PodFailed", ""},
				corev1.PodReady:        {"False", "PodFailed", ""},
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := podStatus(statusInput{spec: &pod.Spec, old: &pod.Status, rt: tc.rt, started: true, hostIP: "127.0.0.1", podIP: "127.1.0.1", startTime: now, now: now})
			for typ, want := range tc.want {
				var got *corev1.PodCondition
				for i := range st.Conditions {
					if st.Conditions[i].Type == typ {
						got = &st.Conditions[i]
					}
				}
				if got == nil {
					t.Fatalf("condition %s missing in %+v", typ, st.Conditions)
				}
				if string(got.Status) != want[0] || got.Reason != want[1] || got.Message != want[2] {
					t.Fatalf("condition %s = %s/%q/%q, want %v", typ, got.Status, got.Reason, got.Message, want)
				}
			}
		})
	}
}

func TestDeadlineExceededIsFailedWithReason(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	pod := &corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c"}}}}
	st := podStatus(statusInput{spec: &pod.Spec, old: &pod.Status, rt: runtime.PodStatus{Done: true, ContainerStatuses: []corev1.ContainerStatus{exited(0)}},
		started: true, terminal: true, reason: reasonDeadlineExceeded, message: messageDeadlineExceeded, startTime: now, now: now})
	if st.Phase != corev1.PodFailed || st.Reason != "DeadlineExceeded" || st.Message != "Pod was active on the node longer than the specified deadline" {
		t.Fatalf("got phase %s reason %q message %q", st.Phase, st.Reason, st.Message)
	}
}

func TestLastTransitionTimeKeptWhenStatusUnchanged(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	old := []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: t0}}
	got := mergeConditions(old, []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionTrue},
		{Type: corev1.ContainersReady, Status: corev1.ConditionFalse},
	}, t1)
	if !got[0].LastTransitionTime.Equal(&t0) || !got[1].LastTransitionTime.Equal(&t1) {
		t.Fatalf("transition times %v", got)
	}
}

func TestLoopbackAllocator(t *testing.T) {
	a := NewLoopbackAllocator()
	ip1, _ := a.Allocate("a", "")
	ip2, _ := a.Allocate("b", "")
	again, _ := a.Allocate("a", "")
	if ip1 != "127.1.0.1" || ip2 != "127.1.0.2" || again != ip1 {
		t.Fatalf("got %s %s %s", ip1, ip2, again)
	}
	a.Release("a")
	ip3, _ := a.Allocate("c", "127.1.0.1")
	if ip3 != "127.1.0.1" {
		t.Fatalf("preferred free IP not reused: %s", ip3)
	}
}
