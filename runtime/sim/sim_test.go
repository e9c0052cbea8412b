package sim

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/batchlet/batchlet/runtime"
)

func simPodSpec(uid string, policy corev1.RestartPolicy, ann map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: "ns", UID: types.UID(uid), Annotations: ann},
		Spec:       corev1.PodSpec{RestartPolicy: policy, Containers: []corev1.Container{{Name: "c", Image: "i"}}},
	}
}

func waitFor(t *testing.T, r *Runtime, uid types.UID, cond func(runtime.PodStatus) bool) runtime.PodStatus {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if st, ok := r.PodStatus(uid); ok && cond(st) {
			return st
		}
		time.Sleep(time.Millisecond)
	}
	st, _ := r.PodStatus(uid)
	t.Fatalf("condition not reached: %+v", st)
	return st
}

func TestImmediateSuccessWithoutAnnotations(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := New(ctx, clocktesting.NewFakeClock(time.Unix(1000, 0)))
	if err := r.StartPod(ctx, simPodSpec("a", corev1.RestartPolicyNever, nil), nil); err != nil {
		t.Fatal(err)
	}
	st, _ := r.PodStatus("a")
	term := st.ContainerStatuses[0].State.Terminated
	if !st.Done || term == nil || term.ExitCode != 0 || term.Reason != "Completed" {
		t.Fatalf("want done and Completed, got %+v", st)
	}
}

func TestDurationAndExitCode(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	r := New(ctx, clk)
	ann := map[string]string{DurationAnnotation: "5s", ExitCodeAnnotation: "2"}
	if err := r.StartPod(ctx, simPodSpec("b", corev1.RestartPolicyNever, ann), nil); err != nil {
		t.Fatal(err)
	}
	st, _ := r.PodStatus("b")
	if st.Done || st.ContainerStatuses[0].State.Running == nil {
		t.Fatalf("want running, got %+v", st)
	}
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	clk.Step(5 * time.Second)
	st = waitFor(t, r, "b", func(s runtime.PodStatus) bool { return s.Done })
	term := st.ContainerStatuses[0].State.Terminated
	if term.ExitCode != 2 || term.Reason != "Error" || term.FinishedAt.Sub(term.StartedAt.Time) != 5*time.Second {
		t.Fatalf("want exit 2 Error after 5s, got %+v", term)
	}
}

func TestOnFailureRestartsUntilSuccess(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	r := New(ctx, clk)
	ann := map[string]string{ExitCodeAnnotation: "1", FailuresAnnotation: "2"}
	if err := r.StartPod(ctx, simPodSpec("c", corev1.RestartPolicyOnFailure, ann), nil); err != nil {
		t.Fatal(err)
	}
	// attempt 0 fails, restarts at once; attempt 1 fails, backs off 10s.
	st := waitFor(t, r, "c", func(s runtime.PodStatus) bool {
		w := s.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == "CrashLoopBackOff"
	})
	if st.ContainerStatuses[0].RestartCount != 1 {
		t.Fatalf("restartCount %d, want 1", st.ContainerStatuses[0].RestartCount)
	}
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	clk.Step(10 * time.Second)
	st = waitFor(t, r, "c", func(s runtime.PodStatus) bool { return s.Done })
	cs := st.ContainerStatuses[0]
	if cs.RestartCount != 2 || cs.State.Terminated.Reason != "Completed" || cs.LastTerminationState.Terminated.ExitCode != 1 {
		t.Fatalf("want restartCount 2, Completed, lastState exit 1; got %+v", cs)
	}
}

func TestKillEndsWith143(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := New(ctx, clocktesting.NewFakeClock(time.Unix(1000, 0)))
	ann := map[string]string{DurationAnnotation: "1h"}
	if err := r.StartPod(ctx, simPodSpec("d", corev1.RestartPolicyAlways, ann), nil); err != nil {
		t.Fatal(err)
	}
	if err := r.KillPod(ctx, "d", time.Second); err != nil {
		t.Fatal(err)
	}
	st, _ := r.PodStatus("d")
	if !st.Done || st.ContainerStatuses[0].State.Terminated.ExitCode != 143 {
		t.Fatalf("want done with 143, got %+v", st)
	}
}
