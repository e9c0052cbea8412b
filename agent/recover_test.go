package agent

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRecoverPod(t *testing.T) {
	t0 := metav1.Date(2026, 1, 1, 0, 0, 0, 0, metav1.Now().Location())
	running := func(name string, restarts int32) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, Image: "busybox", RestartCount: restarts, Ready: true, Started: ptrTo(true),
			ContainerID: "batchlet://x", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t0}}}
	}
	waiting := func(name, reason string, restarts int32, last *corev1.ContainerStateTerminated) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, Image: "busybox", RestartCount: restarts, Started: new(bool),
			State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}},
			LastTerminationState: corev1.ContainerState{Terminated: last}}
	}
	done := func(name string, code int32) corev1.ContainerStatus {
		reason := "Completed"
		if code != 0 {
			reason = "Error"
		}
		return corev1.ContainerStatus{Name: name, Image: "busybox", Started: new(bool), ContainerID: "batchlet://y",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, StartedAt: t0, FinishedAt: t0}}}
	}
	unknownFinal := func(cs corev1.ContainerStatus) corev1.ContainerStatus {
		cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137,
			Reason: "ContainerStatusUnknown", Message: "The container could not be located when the pod was terminated"}}
		cs.Ready, cs.Started = false, new(bool)
		return cs
	}
	lostLast := &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "ContainerStatusUnknown",
		Message: "The container could not be located when the pod was deleted.  The container used to be Running"}
	errorLast := done("main", 1).State.Terminated
	restarted := func(name, reason string, restarts int32, last *corev1.ContainerStateTerminated) corev1.ContainerStatus {
		return waiting(name, reason, restarts, last)
	}
	pod := func(policy corev1.RestartPolicy, init, ctrs []corev1.ContainerStatus, names ...string) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{NodeName: "node-1", RestartPolicy: policy},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &t0, InitContainerStatuses: init, ContainerStatuses: ctrs}}
		for _, n := range names {
			c := corev1.Container{Name: n, Image: "busybox"}
			if n == "init" {
				p.Spec.InitContainers = append(p.Spec.InitContainers, c)
			} else {
				p.Spec.Containers = append(p.Spec.Containers, c)
			}
		}
		return p
	}
	list := func(s ...corev1.ContainerStatus) []corev1.ContainerStatus { return s }

	cases := map[string]struct {
		pod       *corev1.Pod
		known     bool
		want      recoveryAction
		wantInit  []corev1.ContainerStatus
		wantCtrs  []corev1.ContainerStatus
		wantFresh bool // no statuses handed to the runtime
	}{
		"bound, never started: started": {
			pod: pod(corev1.RestartPolicyNever, nil, nil, "main"), want: recoverStart, wantFresh: true},
		"known to the runtime: adopted": {
			pod: pod(corev1.RestartPolicyNever, nil, list(running("main", 0)), "main"), known: true, want: recoverStart, wantFresh: true},
		"waiting for its first start: started": {
			pod:  pod(corev1.RestartPolicyNever, nil, list(waiting("main", "ContainerCreating", 0, nil)), "main"),
			want: recoverStart, wantCtrs: list(waiting("main", "ContainerCreating", 0, nil))},
		"Never, running: fails": {
			pod:  pod(corev1.RestartPolicyNever, nil, list(running("main", 0)), "main"),
			want: recoverFail, wantCtrs: list(unknownFinal(running("main", 0)))},
		"Never, one done and one running: both terminated": {
			pod:  pod(corev1.RestartPolicyNever, nil, list(done("a", 0), running("b", 0)), "a", "b"),
			want: recoverFail, wantCtrs: list(done("a", 0), unknownFinal(running("b", 0)))},
		"Never, one running and one never started: both terminated": {
			pod:  pod(corev1.RestartPolicyNever, nil, list(running("a", 0), waiting("b", "CreateContainerConfigError", 0, nil)), "a", "b"),
			want: recoverFail, wantCtrs: list(unknownFinal(running("a", 0)), unknownFinal(waiting("b", "CreateContainerConfigError", 0, nil)))},
		"Never, init running: init terminated, containers wait": {
			pod:  pod(corev1.RestartPolicyNever, list(running("init", 0)), list(waiting("main", "PodInitializing", 0, nil)), "init", "main"),
			want: recoverFail, wantInit: list(unknownFinal(running("init", 0))), wantCtrs: list(waiting("main", "PodInitializing", 0, nil))},
		"Never, initialized and running: init kept": {
			pod:  pod(corev1.RestartPolicyNever, list(done("init", 0)), list(running("main", 0)), "init", "main"),
			want: recoverFail, wantInit: list(done("init", 0)), wantCtrs: list(unknownFinal(running("main", 0)))},
		"OnFailure, running: restarted with the lost last state": {
			pod:  pod(corev1.RestartPolicyOnFailure, nil, list(running("main", 2)), "main"),
			want: recoverRestart, wantCtrs: list(restarted("main", "ContainerCreating", 3, lostLast))},
		"Always, running: restarted": {
			pod:  pod(corev1.RestartPolicyAlways, nil, list(running("main", 0)), "main"),
			want: recoverRestart, wantCtrs: list(restarted("main", "ContainerCreating", 1, lostLast))},
		"OnFailure, one done and one running: only the lost one restarts": {
			pod:  pod(corev1.RestartPolicyOnFailure, nil, list(done("a", 0), running("b", 0)), "a", "b"),
			want: recoverRestart, wantCtrs: list(done("a", 0), restarted("b", "ContainerCreating", 1, lostLast))},
		"OnFailure, init running: init restarted": {
			pod:  pod(corev1.RestartPolicyOnFailure, list(running("init", 0)), list(waiting("main", "PodInitializing", 0, nil)), "init", "main"),
			want: recoverRestart, wantInit: list(restarted("init", "PodInitializing", 1, lostLast)), wantCtrs: list(waiting("main", "PodInitializing", 0, nil))},
		"OnFailure, in back-off: nothing lost, next attempt counted": {
			pod:  pod(corev1.RestartPolicyOnFailure, nil, list(waiting("main", "CrashLoopBackOff", 1, errorLast)), "main"),
			want: recoverStart, wantCtrs: list(restarted("main", "ContainerCreating", 2, errorLast))},
		"OnFailure, failed and not restarted yet: counted as restarted": {
			pod:  pod(corev1.RestartPolicyOnFailure, nil, list(done("main", 1)), "main"),
			want: recoverStart, wantCtrs: list(restarted("main", "ContainerCreating", 1, errorLast))},
		"OnFailure, an earlier recovery's restart not begun: unchanged": {
			pod:  pod(corev1.RestartPolicyOnFailure, nil, list(waiting("main", "ContainerCreating", 3, lostLast)), "main"),
			want: recoverStart, wantCtrs: list(waiting("main", "ContainerCreating", 3, lostLast))},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := tc.pod.DeepCopy()
			got := recoverPod(tc.pod, tc.known)
			if got.action != tc.want {
				t.Fatalf("action = %s, want %s", got.action, tc.want)
			}
			if !apiequality.Semantic.DeepEqual(tc.pod, before) {
				t.Errorf("recoverPod changed its input")
			}
			if tc.wantFresh {
				if got.statuses != nil || got.initStatuses != nil {
					t.Errorf("want no statuses, got %+v %+v", got.initStatuses, got.statuses)
				}
				return
			}
			if tc.wantInit == nil {
				tc.wantInit = []corev1.ContainerStatus{}
			}
			if !apiequality.Semantic.DeepEqual(got.initStatuses, tc.wantInit) {
				t.Errorf("init statuses:\n got %+v\nwant %+v", got.initStatuses, tc.wantInit)
			}
			if !apiequality.Semantic.DeepEqual(got.statuses, tc.wantCtrs) {
				t.Errorf("statuses:\n got %+v\nwant %+v", got.statuses, tc.wantCtrs)
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }
