package process

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/batchlet/batchlet/runtime"
	"github.com/batchlet/batchlet/runtime/shim"
)

func newSupervisedRuntime(t *testing.T, root string) *Runtime {
	t.Helper()
	r, err := New(Config{RootDir: root, Logger: slog.New(slog.DiscardHandler), ShimSupervisor: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.supervisor == nil {
		t.Fatal("no shim supervisor")
	}
	return r
}

// parentOf is the parent PID of process pid (0 when gone).
func parentOf(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// alive reports whether process pid runs (not gone, not a zombie).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	return s[strings.LastIndexByte(s, ')')+2] != 'Z'
}

// runningPid is the host PID of the running container's init of pod uid.
func runningPid(t *testing.T, r *Runtime, uid types.UID) int {
	t.Helper()
	p, ok := r.get(uid)
	if !ok {
		t.Fatalf("pod %s unknown", uid)
	}
	st, err := shim.ReadState(p.attemptBase("main", 0))
	if err != nil || st == nil || st.Phase != shim.PhaseRunning {
		t.Fatalf("state of %s: %+v, %v; want running", uid, st, err)
	}
	if st.ShimPid != 0 {
		t.Fatalf("state of %s names a shim %d: under the supervisor it must name none (ReapOrphans would kill it)", uid, st.ShimPid)
	}
	return st.Pid
}

// The supervisor runs each container as its shim would: one supervisor
// is the parent of every container, and exit codes, logs and stdout and
// stderr come out as with a shim each.
func TestSupervisorServesContainers(t *testing.T) {
	r := newSupervisedRuntime(t, t.TempDir())
	for _, uid := range []types.UID{"sup1", "sup2"} {
		pod := testPod(string(uid), corev1.RestartPolicyNever, shC("main", "echo out; echo err >&2; read x < /dev/stdin || true; exit 4"))
		pod.Spec.Containers[0].Stdin = true
		if err := r.StartPod(context.Background(), pod, fakeResolver{}); err != nil {
			t.Fatal(err)
		}
	}
	var pids []int
	for _, uid := range []types.UID{"sup1", "sup2"} {
		waitStatus(t, r, uid, "running", func(s runtime.PodStatus) bool { return s.ContainerStatuses[0].State.Running != nil })
		pids = append(pids, runningPid(t, r, uid))
	}
	sup := r.supervisor.pid
	for _, pid := range pids {
		if got := parentOf(pid); got != sup {
			t.Fatalf("container %d has parent %d, want the supervisor %d", pid, got, sup)
		}
	}
	for _, uid := range []types.UID{"sup1", "sup2"} {
		r.RemovePod(uid)
	}
	pod := testPod("sup3", corev1.RestartPolicyNever, shC("main", "echo out; echo err >&2; exit 4"))
	if err := r.StartPod(context.Background(), pod, fakeResolver{}); err != nil {
		t.Fatal(err)
	}
	st := waitStatus(t, r, "sup3", "done", func(s runtime.PodStatus) bool { return s.Done })
	if term := st.ContainerStatuses[0].State.Terminated; term == nil || term.ExitCode != 4 || term.Reason != "Error" {
		t.Fatalf("terminated %+v, want exit code 4", term)
	}
	if got := logs(t, r, "sup3", "main", runtime.LogOptions{}); got != "out\nerr\n" && got != "err\nout\n" {
		t.Fatalf("log %q", got)
	}
	if r.supervisor.pid != sup {
		t.Fatalf("a second supervisor %d was started beside %d", r.supervisor.pid, sup)
	}
}

// A container served by the supervisor outlives its agent and is adopted
// by the next one, which connects to the same supervisor for its own
// containers.
func TestSupervisorOutlivesAgent(t *testing.T) {
	root := t.TempDir()
	r := newSupervisedRuntime(t, root)
	dir := t.TempDir()
	release := filepath.Join(dir, "release")
	t.Cleanup(func() { _ = os.WriteFile(release, nil, 0o644) })
	c := shC("main", "echo before; i=0; until [ -f /release/release ] || [ $i -ge 3000 ]; do sleep 0.02; i=$((i+1)); done; echo after; exit 3")
	c.VolumeMounts = []corev1.VolumeMount{{Name: "release", MountPath: "/release"}}
	pod := testPod("supadopt", corev1.RestartPolicyNever, c)
	pod.Spec.Volumes = []corev1.Volume{{Name: "release", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir}}}}
	if err := r.StartPod(context.Background(), pod, fakeResolver{}); err != nil {
		t.Fatal(err)
	}
	first := waitStatus(t, r, "supadopt", "running", func(s runtime.PodStatus) bool { return s.ContainerStatuses[0].State.Running != nil })
	sup := r.supervisor.pid
	// The agent dies: its connection to the supervisor closes.
	r.supervisor.mu.Lock()
	r.supervisor.control.Close()
	r.supervisor.mu.Unlock()

	r2 := newSupervisedRuntime(t, root)
	apiPod := pod.DeepCopy()
	apiPod.Status.ContainerStatuses = first.ContainerStatuses
	ad, err := r2.Adopt(context.Background(), apiPod, fakeResolver{})
	if err != nil || !ad.Adopted {
		t.Fatalf("Adopt = %+v, %v; want adopted", ad, err)
	}
	other := testPod("supother", corev1.RestartPolicyNever, shC("main", "exit 0"))
	if err := r2.StartPod(context.Background(), other, fakeResolver{}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, r2, "supother", "done", func(s runtime.PodStatus) bool { return s.Done })
	if r2.supervisor.pid != 0 {
		t.Fatalf("the restarted agent started supervisor %d; want it to use the running %d", r2.supervisor.pid, sup)
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	st := waitStatus(t, r2, "supadopt", "done", func(s runtime.PodStatus) bool { return s.Done })
	if term := st.ContainerStatuses[0].State.Terminated; term == nil || term.ExitCode != 3 || term.ContainerID != first.ContainerStatuses[0].ContainerID {
		t.Fatalf("terminated %+v, want exit code 3 of the adopted container", term)
	}
	if got := logs(t, r2, "supadopt", "main", runtime.LogOptions{}); got != "before\nafter\n" {
		t.Fatalf("log %q", got)
	}
}

// When the supervisor is killed its running containers die with it (their
// parent-death signal) and end as killed, never left unsupervised; the
// next container gets a new supervisor.
func TestSupervisorKilled(t *testing.T) {
	r := newSupervisedRuntime(t, t.TempDir())
	if err := r.StartPod(context.Background(), testPod("victim", corev1.RestartPolicyNever, shC("main", "sleep 60")), fakeResolver{}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, r, "victim", "running", func(s runtime.PodStatus) bool { return s.ContainerStatuses[0].State.Running != nil })
	pid, sup := runningPid(t, r, "victim"), r.supervisor.pid
	if err := unix.Kill(sup, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	st := waitStatus(t, r, "victim", "killed", func(s runtime.PodStatus) bool { return s.Done })
	if term := st.ContainerStatuses[0].State.Terminated; term == nil || term.ExitCode != 137 {
		t.Fatalf("terminated %+v, want killed (137)", term)
	}
	// Its parent-death signal reaches it as the supervisor ends.
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if alive(pid) {
		t.Fatalf("container %d outlived its supervisor", pid)
	}
	if err := r.StartPod(context.Background(), testPod("next", corev1.RestartPolicyNever, shC("main", "exit 5")), fakeResolver{}); err != nil {
		t.Fatal(err)
	}
	st = waitStatus(t, r, "next", "done", func(s runtime.PodStatus) bool { return s.Done })
	if term := st.ContainerStatuses[0].State.Terminated; term == nil || term.ExitCode != 5 {
		t.Fatalf("terminated %+v, want exit code 5", term)
	}
	if r.supervisor.pid == sup || r.supervisor.pid == 0 {
		t.Fatalf("supervisor %d after the kill of %d: want a new one", r.supervisor.pid, sup)
	}
}

// The supervisor's socket is named after the shim binary, so that agents
// of another build never share one; a root too deep for a Unix address
// reaches it through a descriptor of the root.
func TestSupervisorSocketNames(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b := write("a", "one build"), write("b", "another build")
	log := slog.New(slog.DiscardHandler)
	sock := func(root, helper string) string {
		c, err := newSupervisorClient(root, helper, log)
		if err != nil {
			t.Fatal(err)
		}
		return c.sock
	}
	if first, again := sock(dir, a), sock(dir, a); first != again {
		t.Errorf("one binary, two sockets: %s, %s", first, again)
	}
	if sock(dir, a) == sock(dir, b) {
		t.Error("two binaries share a socket")
	}
	if got := sock(dir, a); filepath.Dir(got) != dir || !strings.HasPrefix(filepath.Base(got), ".supervisor-") {
		t.Errorf("socket %s, want a hidden file in the root", got)
	}
	if c, err := newSupervisorClient(dir, a, log); err != nil || c.addr != c.sock || c.sockDir != nil {
		t.Errorf("short root: address %q, %v; want the path %q", c.addr, err, c.sock)
	}
}

// A root deeper than a Unix address holds still gets a supervisor.
func TestSupervisorDeepRoot(t *testing.T) {
	root := filepath.Join(t.TempDir(), strings.Repeat("d", 60), strings.Repeat("e", 60))
	r := newSupervisedRuntime(t, root)
	if !strings.HasPrefix(r.supervisor.addr, "/proc/self/fd/") {
		t.Fatalf("address %q for socket %s", r.supervisor.addr, r.supervisor.sock)
	}
	if err := r.StartPod(context.Background(), testPod("deep", corev1.RestartPolicyNever, shC("main", "exit 6")), fakeResolver{}); err != nil {
		t.Fatal(err)
	}
	st := waitStatus(t, r, "deep", "done", func(s runtime.PodStatus) bool { return s.Done })
	if term := st.ContainerStatuses[0].State.Terminated; term == nil || term.ExitCode != 6 || r.supervisor.pid == 0 {
		t.Fatalf("terminated %+v under supervisor %d, want exit code 6 under a supervisor", term, r.supervisor.pid)
	}
}
