package process

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/batchlet/batchlet/runtime"
)

// logLayouts are where a previous runtime process may have left the log of
// an earlier attempt: the current layout, and the one before it.
var logLayouts = map[string]func(p *pod, container string, attempt int) string{
	"current": (*pod).logPath,
	"older":   (*pod).oldLogPath,
}

// oldLogAt leaves the log of an earlier attempt where a previous runtime
// process wrote it in the given layout.
func oldLogAt(t *testing.T, r *Runtime, layout func(*pod, string, int) string, uid, container string, attempt int, line string) {
	t.Helper()
	path := layout(&pod{dir: r.podDir(types.UID(uid))}, container, attempt)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	entry := time.Now().UTC().Format(time.RFC3339Nano) + " stdout F " + line + "\n"
	if err := os.WriteFile(path, []byte(entry), 0o644); err != nil {
		t.Fatal(err)
	}
}

func lostUnknown() *corev1.ContainerStateTerminated {
	return &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "ContainerStatusUnknown", Message: "lost"}
}

func TestResumeRestartsAtRestartCountAndKeepsPreviousLog(t *testing.T) {
	for name, layout := range logLayouts {
		t.Run(name, func(t *testing.T) { testResumeKeepsPreviousLog(t, layout) })
	}
}

func testResumeKeepsPreviousLog(t *testing.T, layout func(*pod, string, int) string) {
	r, ev := newTestRuntime(t, nil)
	p := testPod("r1", corev1.RestartPolicyOnFailure, shC("main", "echo second run"))
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", RestartCount: 1,
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}},
		LastTerminationState: corev1.ContainerState{Terminated: lostUnknown()}}}
	oldLogAt(t, r, layout, "r1", "main", 0, "first run")
	if err := r.StartPod(context.Background(), p, fakeResolver{}); err != nil {
		t.Fatal(err)
	}
	st := waitStatus(t, r, "r1", "done", func(s runtime.PodStatus) bool { return s.Done })
	cs := st.ContainerStatuses[0]
	if cs.RestartCount != 1 || cs.State.Terminated == nil || cs.State.Terminated.Reason != "Completed" {
		t.Fatalf("want restartCount 1 and Completed, got %+v", cs)
	}
	if last := cs.LastTerminationState.Terminated; last == nil || last.Reason != "ContainerStatusUnknown" {
		t.Fatalf("lastState %+v, want the lost attempt's", cs.LastTerminationState)
	}
	if got := logs(t, r, "r1", "main", runtime.LogOptions{}); got != "second run\n" {
		t.Fatalf("current log %q", got)
	}
	if got := logs(t, r, "r1", "main", runtime.LogOptions{Previous: true}); got != "first run\n" {
		t.Fatalf("previous log %q, want the first run's", got)
	}
	if !ev.has("Normal Started Started container main") {
		t.Fatalf("the restart records its events: %v", ev.list)
	}
}

func TestResumeTerminatedRunsNothing(t *testing.T) {
	for name, layout := range logLayouts {
		t.Run(name, func(t *testing.T) { testResumeTerminatedRunsNothing(t, layout) })
	}
}

func testResumeTerminatedRunsNothing(t *testing.T, layout func(*pod, string, int) string) {
	r, ev := newTestRuntime(t, nil)
	p := testPod("r2", corev1.RestartPolicyNever, shC("main", "echo must not run"))
	// A missing ConfigMap would block a pod that still had to run.
	p.Spec.Volumes = []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "gone"}}}}}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main",
		State: corev1.ContainerState{Terminated: lostUnknown()}}}
	oldLogAt(t, r, layout, "r2", "main", 0, "the only run")
	if err := r.StartPod(context.Background(), p, fakeResolver{}); err != nil {
		t.Fatal(err)
	}
	st := waitStatus(t, r, "r2", "done", func(s runtime.PodStatus) bool { return s.Done })
	if term := st.ContainerStatuses[0].State.Terminated; term == nil || term.Reason != "ContainerStatusUnknown" || st.ContainerStatuses[0].RestartCount != 0 {
		t.Fatalf("status %+v, want the given terminated state", st.ContainerStatuses[0])
	}
	if got := logs(t, r, "r2", "main", runtime.LogOptions{}); got != "the only run\n" {
		t.Fatalf("log %q, want the surviving log", got)
	}
	var b strings.Builder
	err := r.Logs(context.Background(), "r2", "main", runtime.LogOptions{Previous: true}, &b)
	if err == nil || err.Error() != `previous terminated container "main" in pod "p-r2" not found` {
		t.Fatalf("previous: %v", err)
	}
	if len(ev.list) != 0 {
		t.Fatalf("events %v, want none", ev.list)
	}
}

func TestResumeWithoutSurvivingLog(t *testing.T) {
	r, _ := newTestRuntime(t, nil)
	p := testPod("r3", corev1.RestartPolicyOnFailure, shC("main", "sleep 30"))
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", RestartCount: 1,
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}},
		LastTerminationState: corev1.ContainerState{Terminated: lostUnknown()}}}
	if err := r.StartPod(context.Background(), p, fakeResolver{}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, r, "r3", "running", func(s runtime.PodStatus) bool { return s.ContainerStatuses[0].State.Running != nil })
	var b strings.Builder
	err := r.Logs(context.Background(), "r3", "main", runtime.LogOptions{Previous: true}, &b)
	if err == nil || err.Error() != `previous terminated container "main" in pod "p-r3" not found` {
		t.Fatalf("previous without a surviving log: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_ = r.KillPod(ctx, "r3", 0)
}
