package process

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/batchlet/batchlet/runtime"
	"github.com/batchlet/batchlet/runtime/shim"
)

func TestClassifyAttempt(t *testing.T) {
	running := &shim.State{Phase: shim.PhaseRunning, Pid: 42, PidStart: 7}
	for _, tc := range []struct {
		name string
		rec  attemptRecord
		want attemptFate
	}{
		{"nothing on record", attemptRecord{}, fateNone},
		{"spec only, no shim: never started", attemptRecord{spec: true}, fateUnstarted},
		{"shim alive before its first state", attemptRecord{spec: true, shimAlive: true}, fateRunning},
		{"shim alive, starting", attemptRecord{spec: true, shimAlive: true, state: &shim.State{Phase: shim.PhaseStarting}}, fateRunning},
		{"shim alive, running", attemptRecord{spec: true, shimAlive: true, state: running}, fateRunning},
		{"shim alive, end being recorded", attemptRecord{spec: true, shimAlive: true, state: &shim.State{Phase: shim.PhaseExited, ExitCode: 3}}, fateRunning},
		{"shim gone, end recorded", attemptRecord{spec: true, state: &shim.State{Phase: shim.PhaseExited, ExitCode: 3}}, fateExited},
		{"shim gone, start error recorded", attemptRecord{spec: true, state: &shim.State{Phase: shim.PhaseExited, ExitCode: 128, StartError: "exec"}}, fateExited},
		{"shim gone while running (reboot)", attemptRecord{spec: true, state: running}, fateLost},
		{"shim gone while starting", attemptRecord{spec: true, state: &shim.State{Phase: shim.PhaseStarting}}, fateLost},
		{"image container the agent started itself", attemptRecord{state: &shim.State{Phase: shim.PhaseStarting}}, fateLost},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := classifyAttempt(tc.rec); got != tc.want {
				t.Fatalf("classifyAttempt(%+v) = %s, want %s", tc.rec, got, tc.want)
			}
		})
	}
}

// readRecord sees a lock held by another open file description (a shim)
// as a live shim, and a released one as gone.
func TestReadRecordLock(t *testing.T) {
	base := filepath.Join(t.TempDir(), "main.0")
	if err := os.WriteFile(base+".shim", []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := shim.WriteState(base, shim.State{Phase: shim.PhaseRunning, Pid: 1}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(base + ".shim")
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	rec, err := readRecord(base)
	if err != nil || !rec.spec || !rec.shimAlive || rec.state.Phase != shim.PhaseRunning {
		t.Fatalf("held: %+v, %v", rec, err)
	}
	f.Close()
	if rec, _ := readRecord(base); rec.shimAlive || classifyAttempt(rec) != fateLost {
		t.Fatalf("released: %+v, want a lost attempt", rec)
	}
	// A state torn by a crash while it was rewritten reads as starting.
	if err := os.WriteFile(base+".state", []byte(`{"phase":"exi`), 0o644); err != nil {
		t.Fatal(err)
	}
	if rec, err := readRecord(base); err != nil || rec.state.Phase != shim.PhaseStarting || classifyAttempt(rec) != fateLost {
		t.Fatalf("torn: %+v, %v; want a lost attempt", rec, err)
	}
}

func TestRecordedAttempts(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"main.0.shim", "main.0.state", "main.1.shim", "main.0.log", "side.3.state", "hosts", "side.x.shim"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got, err := recordedAttempts(dir)
	if err != nil || len(got) != 2 || got["main"] != 1 || got["side"] != 3 {
		t.Fatalf("recordedAttempts = %v, %v", got, err)
	}
	if got, err := recordedAttempts(filepath.Join(dir, "missing")); err != nil || got != nil {
		t.Fatalf("missing dir: %v, %v", got, err)
	}
}

// restartedRuntime is a second runtime on r's root dir, as a restarted
// agent makes one.
func restartedRuntime(t *testing.T, r *Runtime) *Runtime {
	t.Helper()
	r2, err := New(withTestShims(Config{RootDir: r.cfg.RootDir, Logger: slog.New(slog.DiscardHandler), ShimSupervisor: r.cfg.ShimSupervisor}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r2.waitRemovals)
	return r2
}

// A container whose shim outlived its runtime is adopted by the next one:
// still running with its container ID, start and attempt, exec reaches it,
// and its true exit code is reported when it ends.
func TestAdoptRunningContainer(t *testing.T) {
	r, _ := newTestRuntime(t, nil)
	dir := t.TempDir()
	release := filepath.Join(dir, "release")
	// Should the test stop early, the container still ends, at once or
	// within a minute (its shim outlives both runtimes by design).
	t.Cleanup(func() { _ = os.WriteFile(release, nil, 0o644) })
	// The container sees the host's directory through a hostPath volume
	// (nothing else of the host's /tmp).
	c := shC("main", "echo before; i=0; until [ -f /release/release ] || [ $i -ge 3000 ]; do sleep 0.02; i=$((i+1)); done; echo after; exit 3")
	c.VolumeMounts = []corev1.VolumeMount{{Name: "release", MountPath: "/release"}}
	pod := testPod("adopt1", corev1.RestartPolicyNever, c)
	pod.Spec.Volumes = []corev1.Volume{{Name: "release", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir}}}}
	if err := r.StartPod(context.Background(), pod, fakeResolver{}); err != nil {
		t.Fatal(err)
	}
	first := waitStatus(t, r, "adopt1", "running", func(s runtime.PodStatus) bool { return s.ContainerStatuses[0].State.Running != nil })
	// The first runtime is abandoned, as a killed agent's is.
	apiPod := pod.DeepCopy()
	apiPod.Status.ContainerStatuses = first.ContainerStatuses
	r2 := restartedRuntime(t, r)
	ad, err := r2.Adopt(context.Background(), apiPod, fakeResolver{})
	if err != nil || !ad.Adopted {
		t.Fatalf("Adopt = %+v, %v; want adopted", ad, err)
	}
	st := waitStatus(t, r2, "adopt1", "adopted running", func(s runtime.PodStatus) bool { return s.ContainerStatuses[0].State.Running != nil })
	cs, was := st.ContainerStatuses[0], first.ContainerStatuses[0]
	if cs.ContainerID != was.ContainerID || !cs.State.Running.StartedAt.Equal(&was.State.Running.StartedAt) || cs.RestartCount != 0 {
		t.Fatalf("adopted %+v, want the running container %+v", cs, was)
	}
	var out strings.Builder
	if err := r2.Exec(context.Background(), "adopt1", "main", []string{"echo", "in"}, runtime.ExecStreams{Stdout: &out}); err != nil || out.String() != "in\n" {
		t.Fatalf("exec into the adopted container: %q, %v", out.String(), err)
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	st = waitStatus(t, r2, "adopt1", "done", func(s runtime.PodStatus) bool { return s.Done })
	term := st.ContainerStatuses[0].State.Terminated
	if term == nil || term.ExitCode != 3 || term.Reason != "Error" || term.ContainerID != was.ContainerID {
		t.Fatalf("terminated %+v, want exit code 3 of the same container", term)
	}
	if got := logs(t, r2, "adopt1", "main", runtime.LogOptions{}); got != "before\nafter\n" {
		t.Fatalf("log %q", got)
	}
}

// A container that ended while no runtime ran is reported with its
// recorded exit code and end; a pod with nothing on disk is not adopted.
func TestAdoptExitedContainer(t *testing.T) {
	r, _ := newTestRuntime(t, nil)
	pod := testPod("adopt2", corev1.RestartPolicyNever, shC("main", "exit 7"))
	if err := r.StartPod(context.Background(), pod, fakeResolver{}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, r, "adopt2", "done", func(s runtime.PodStatus) bool { return s.Done })
	r2 := restartedRuntime(t, r)
	// The API never saw it run.
	ad, err := r2.Adopt(context.Background(), pod.DeepCopy(), fakeResolver{})
	if err != nil || !ad.Adopted {
		t.Fatalf("Adopt = %+v, %v", ad, err)
	}
	st := waitStatus(t, r2, "adopt2", "done", func(s runtime.PodStatus) bool { return s.Done })
	if term := st.ContainerStatuses[0].State.Terminated; term == nil || term.ExitCode != 7 || term.FinishedAt.IsZero() {
		t.Fatalf("terminated %+v, want the recorded exit code 7", term)
	}
	if ad, err := r2.Adopt(context.Background(), testPod("fresh", corev1.RestartPolicyNever, shC("main", "true")), fakeResolver{}); err != nil || ad.Adopted || ad.ContainerStatuses != nil {
		t.Fatalf("a new pod: %+v, %v; want nothing adopted", ad, err)
	}
}

// An attempt that started but whose shim is gone without a record (a host
// reboot) is not adopted: it is shown running, even where the API never
// saw it run, so that the agent counts it as lost instead of running it a
// second time.
func TestAdoptLostAttempt(t *testing.T) {
	r, _ := newTestRuntime(t, nil)
	pod := testPod("adopt3", corev1.RestartPolicyNever, shC("main", "true"))
	p := newPod(r, pod, fakeResolver{})
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	base := p.attemptBase("main", 0)
	started := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := os.WriteFile(base+".shim", []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := shim.WriteState(base, shim.State{Phase: shim.PhaseRunning, Pid: 1 << 22, PidStart: 1, StartedAt: started}); err != nil {
		t.Fatal(err)
	}
	ad, err := r.Adopt(context.Background(), pod, fakeResolver{})
	if err != nil || ad.Adopted || len(ad.ContainerStatuses) != 1 {
		t.Fatalf("Adopt = %+v, %v", ad, err)
	}
	cs := ad.ContainerStatuses[0]
	if cs.State.Running == nil || !cs.State.Running.StartedAt.Time.Equal(started) || cs.RestartCount != 0 || cs.ContainerID != containerID(p, p.ctrs[0], 0) {
		t.Fatalf("status %+v, want the lost attempt running", cs)
	}
	if _, ok := r.PodStatus("adopt3"); ok {
		t.Fatal("a pod with nothing to adopt was taken over")
	}
}

// The containers of pods deleted, or finished, while no agent ran are
// killed; only the deleted pods' files are removed.
func TestReapOrphans(t *testing.T) {
	r, _ := newTestRuntime(t, nil)
	for _, uid := range []string{"deleted", "finished", "running"} {
		if err := r.StartPod(context.Background(), testPod(uid, corev1.RestartPolicyNever, shC("main", "sleep 60")), fakeResolver{}); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, r, types.UID(uid), "running", func(s runtime.PodStatus) bool { return s.ContainerStatuses[0].State.Running != nil })
	}
	r2 := restartedRuntime(t, r)
	r2.ReapOrphans(map[types.UID]bool{"finished": false, "running": true})
	for uid, want := range map[types.UID]int32{"deleted": 137, "finished": 137} {
		st := waitStatus(t, r, uid, "killed", func(s runtime.PodStatus) bool { return s.Done })
		if term := st.ContainerStatuses[0].State.Terminated; term.ExitCode != want {
			t.Errorf("%s: exit code %d, want %d", uid, term.ExitCode, want)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, err := os.Stat(r.podDir("deleted")); err == nil && time.Now().Before(deadline); _, err = os.Stat(r.podDir("deleted")) {
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := os.Stat(r.podDir("deleted")); err == nil {
		t.Error("the deleted pod's directory is still there")
	}
	if _, err := os.Stat(r.podDir("finished")); err != nil {
		t.Errorf("the finished pod's directory (its logs) is gone: %v", err)
	}
	if st, _ := r.PodStatus("running"); st.ContainerStatuses[0].State.Running == nil {
		t.Errorf("a pod that may run was reaped: %+v", st)
	}
	r.RemovePod("running")
}

// Without shims (a throwaway data dir) the agent starts containers itself,
// recording each attempt as started so that a restarted agent counts it as
// lost instead of running it again.
func TestNoShims(t *testing.T) {
	r, err := New(Config{RootDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler), NoShims: true})
	if err != nil {
		t.Fatal(err)
	}
	pod := testPod("noshim", corev1.RestartPolicyNever, shC("main", "echo hi; exit 3"))
	if err := r.StartPod(context.Background(), pod, fakeResolver{}); err != nil {
		t.Fatal(err)
	}
	st := waitStatus(t, r, "noshim", "done", func(s runtime.PodStatus) bool { return s.Done })
	if term := st.ContainerStatuses[0].State.Terminated; term == nil || term.ExitCode != 3 {
		t.Fatalf("terminated %+v, want exit code 3", term)
	}
	if got := logs(t, r, "noshim", "main", runtime.LogOptions{}); got != "hi\n" {
		t.Fatalf("log %q", got)
	}
	p, _ := r.get("noshim")
	rec, err := readRecord(p.attemptBase("main", 0))
	if err != nil || rec.spec || classifyAttempt(rec) != fateLost {
		t.Fatalf("record %+v (%v), want an attempt on record as started, without a shim", rec, err)
	}
}

// A container that failed while no agent ran is restarted by the adopting
// runtime as its restartPolicy says, with the recorded end as its last
// state.
func TestAdoptExitedThenRestarts(t *testing.T) {
	r, _ := newTestRuntime(t, nil)
	pod := testPod("adopt4", corev1.RestartPolicyOnFailure, shC("main", "echo second run; sleep 30"))
	p := newPod(r, pod, fakeResolver{})
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	base := p.attemptBase("main", 0)
	started := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := os.WriteFile(base+".shim", []byte(`{"argv":["sh","-c","exit 3"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := shim.WriteState(base, shim.State{Phase: shim.PhaseExited, ExitCode: 3, StartedAt: started, FinishedAt: started.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	apiPod := pod.DeepCopy()
	apiPod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Image: "busybox", ContainerID: containerID(p, p.ctrs[0], 0),
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}}}}
	ad, err := r.Adopt(context.Background(), apiPod, fakeResolver{})
	if err != nil || !ad.Adopted {
		t.Fatalf("Adopt = %+v, %v", ad, err)
	}
	defer r.RemovePod("adopt4")
	st := waitStatus(t, r, "adopt4", "second attempt running", func(s runtime.PodStatus) bool {
		return s.ContainerStatuses[0].State.Running != nil && s.ContainerStatuses[0].RestartCount == 1
	})
	last := st.ContainerStatuses[0].LastTerminationState.Terminated
	if last == nil || last.ExitCode != 3 || last.Reason != "Error" || !last.FinishedAt.Time.Equal(started.Add(time.Minute)) {
		t.Fatalf("lastState %+v, want the recorded exit code 3 and end", last)
	}
	waitStatus(t, r, "adopt4", "second run logged", func(runtime.PodStatus) bool {
		var b strings.Builder
		_ = r.Logs(context.Background(), "adopt4", "main", runtime.LogOptions{}, &b)
		return b.String() == "second run\n"
	})
}

// An attempt's shim spec says whether its container has namespaces of its
// own, in the current format and in the one before the container init
// started every namespaced container ("namespaces", "initPath"): an
// adopted container of either is exec'd into through its namespaces.
func TestReadShimSpecNamespaces(t *testing.T) {
	cases := []struct {
		name, file string
		wantNS     bool
		wantArgv   []string
	}{
		{name: "container init", file: `{"argv":["batchlet-container-init","{}"],"init":true,"path":"/proc/self/exe"}`, wantNS: true,
			wantArgv: []string{"batchlet-container-init", "{}"}},
		{name: "before the merge, namespaced", file: `{"argv":["sleep","30"],"namespaces":true,"ns":{},"initPath":"/proc/self/exe","initArgv":["batchlet-container-init","{}"]}`,
			wantNS: true, wantArgv: []string{"sleep", "30"}},
		{name: "without namespaces", file: `{"argv":["sleep","30"],"cred":{"Uid":1000}}`, wantArgv: []string{"sleep", "30"}},
		{name: "before the merge, without namespaces", file: `{"argv":["sleep","30"],"namespaces":false}`, wantArgv: []string{"sleep", "30"}},
		{name: "torn", file: `{"argv":["sle`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := filepath.Join(t.TempDir(), "main.0")
			if err := os.WriteFile(base+".shim", []byte(tc.file), 0o600); err != nil {
				t.Fatal(err)
			}
			spec, ns := readShimSpec(base)
			if ns != tc.wantNS || !slices.Equal(spec.Argv, tc.wantArgv) {
				t.Errorf("readShimSpec = argv %q, namespaces %v; want %q, %v", spec.Argv, ns, tc.wantArgv, tc.wantNS)
			}
		})
	}
	if _, ns := readShimSpec(filepath.Join(t.TempDir(), "missing")); ns {
		t.Errorf("a missing spec has namespaces")
	}
}
