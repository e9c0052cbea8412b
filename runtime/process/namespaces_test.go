package process

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/batchlet/batchlet/runtime"
	"github.com/batchlet/batchlet/runtime/containerinit"
	"github.com/batchlet/batchlet/runtime/shim"
)

func namespacedRuntime(t *testing.T) *Runtime {
	t.Helper()
	r, _ := newTestRuntime(t, nil)
	if !r.Namespaces() {
		t.Skip("namespaces unavailable")
	}
	return r
}

// Each container is PID 1 of its own PID namespace with the pod's
// hostname, a private /tmp (the host's hidden, at containerinit.HostTmp
// too) and its volumes, a read-only one refusing writes.
func TestContainersGetTheirOwnNamespaces(t *testing.T) {
	r := namespacedRuntime(t)
	hostFile, err := os.CreateTemp("/tmp", "batchlet-host-*")
	if err != nil {
		t.Fatal(err)
	}
	hostFile.Close()
	defer os.Remove(hostFile.Name())
	name := filepath.Base(hostFile.Name())
	// Each container writes a file of its own: they run side by side.
	script := func(file string) string {
		return `echo pid=$$$$ host=$(hostname); [ -e /tmp/` + name + ` ] && echo host-tmp-leaks; [ -e ` + containerinit.HostTmp + `/` + name + ` ] && echo host-tmp-kept;
touch /tmp/own && echo tmp-writable; echo x > /rw/` + file + ` && cat /ro/` + file + `; touch /ro/g 2>/dev/null || echo ro-refused`
	}
	c1, c2 := shC("a", script("a")), shC("b", script("b"))
	vms := []corev1.VolumeMount{{Name: "d", MountPath: "/rw"}, {Name: "d", MountPath: "/ro", ReadOnly: true}}
	c1.VolumeMounts, c2.VolumeMounts = vms, vms
	p := testPod("ns1", corev1.RestartPolicyNever, c1, c2)
	p.Spec.Volumes = []corev1.Volume{{Name: "d", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	if err := r.StartPod(context.Background(), p, fakeResolver{}); err != nil {
		t.Fatal(err)
	}
	st := waitStatus(t, r, "ns1", "done", func(s runtime.PodStatus) bool { return s.Done })
	want := "pid=1 host=p-ns1\ntmp-writable\nx\nro-refused\n"
	for i, c := range []string{"a", "b"} {
		if got := logs(t, r, "ns1", c, runtime.LogOptions{}); got != want {
			t.Errorf("container %s: log %q, want %q (state %+v)", c, got, want, st.ContainerStatuses[i].State)
		}
	}
	if _, err := os.Stat(filepath.Join("/tmp", "own")); err == nil {
		t.Errorf("a container's /tmp reached the host's")
	}
	if _, err := os.Stat(filepath.Join(r.podDir("ns1"), "tmp", "own")); err != nil {
		t.Errorf("a container's /tmp is not its pod's: %v", err)
	}
}

// The container leads its own session, so a signal to its process group
// reaches what it started and nothing else.
func TestContainerLeadsItsSession(t *testing.T) {
	r := namespacedRuntime(t)
	if err := r.StartPod(context.Background(), testPod("ns2", corev1.RestartPolicyNever, shC("main", "sleep 30")), fakeResolver{}); err != nil {
		t.Fatal(err)
	}
	defer r.RemovePod("ns2")
	waitStatus(t, r, "ns2", "running", func(s runtime.PodStatus) bool { return s.ContainerStatuses[0].State.Running != nil })
	p, _ := r.get("ns2")
	p.mu.Lock()
	pid := p.ctrs[0].proc.pid
	p.mu.Unlock()
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		t.Fatal(err)
	}
	// Fields after the command: state ppid pgrp session.
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if f[2] != strconv.Itoa(pid) || f[3] != strconv.Itoa(pid) {
		t.Fatalf("process group %s and session %s, want both %d", f[2], f[3], pid)
	}
}

// A mount that cannot be made fails the start with StartError, as the
// container runtime reports it.
func TestMissingHostPathIsStartError(t *testing.T) {
	r := namespacedRuntime(t)
	c := shC("main", "true")
	c.VolumeMounts = []corev1.VolumeMount{{Name: "h", MountPath: "/data"}}
	p := testPod("ns3", corev1.RestartPolicyNever, c)
	p.Spec.Volumes = []corev1.Volume{{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/nonexistent/batchlet"}}}}
	if err := r.StartPod(context.Background(), p, fakeResolver{}); err != nil {
		t.Fatal(err)
	}
	st := waitStatus(t, r, "ns3", "done", func(s runtime.PodStatus) bool { return s.Done })
	term := st.ContainerStatuses[0].State.Terminated
	if term == nil || term.Reason != "StartError" || !strings.Contains(term.Message, "/nonexistent/batchlet") {
		t.Fatalf("want StartError naming the missing path, got %+v", st.ContainerStatuses[0].State)
	}
}

// A command can come from a volume: it is looked up where the container
// sees its files.
func TestCommandFromVolume(t *testing.T) {
	r := namespacedRuntime(t)
	mode := int32(0o755)
	c := corev1.Container{Name: "main", Image: "x", Command: []string{"/scripts/run.sh"},
		VolumeMounts: []corev1.VolumeMount{{Name: "s", MountPath: "/scripts"}}}
	p := testPod("ns4", corev1.RestartPolicyNever, c)
	p.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, DefaultMode: &mode}}}}
	res := fakeResolver{cms: map[string]*corev1.ConfigMap{"default/cm": {Data: map[string]string{"run.sh": "#!/bin/sh\necho from-volume\n"}}}}
	if err := r.StartPod(context.Background(), p, res); err != nil {
		t.Fatal(err)
	}
	st := waitStatus(t, r, "ns4", "done", func(s runtime.PodStatus) bool { return s.Done })
	if got := logs(t, r, "ns4", "main", runtime.LogOptions{}); got != "from-volume\n" {
		t.Fatalf("log %q (state %+v)", got, st.ContainerStatuses[0].State)
	}
}

// The threads that made containers' namespaces end with them: once the
// containers are gone, every thread of the agent is back in its own mount
// and UTS namespaces.
func TestNoThreadStaysInAContainersNamespaces(t *testing.T) {
	r := namespacedRuntime(t)
	want := threadNamespaces(t)
	for _, uid := range []types.UID{"ns5", "ns6", "ns7"} {
		if err := r.StartPod(context.Background(), testPod(string(uid), corev1.RestartPolicyNever, shC("main", "true")), fakeResolver{}); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, r, uid, "done", func(s runtime.PodStatus) bool { return s.Done })
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := threadNamespaces(t)
		if len(got) == 1 && got[0] == want[0] {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("threads in namespaces %v, want only %v", got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// threadNamespaces lists the distinct mount+UTS namespace pairs of this
// process's threads.
func threadNamespaces(t *testing.T) []string {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var out []string
	for _, task := range tasks {
		mnt, err1 := os.Readlink(filepath.Join("/proc/self/task", task.Name(), "ns", "mnt"))
		uts, err2 := os.Readlink(filepath.Join("/proc/self/task", task.Name(), "ns", "uts"))
		if err1 != nil || err2 != nil {
			continue // the thread ended meanwhile
		}
		if k := mnt + " " + uts; !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// A namespaced container starts in its cgroup (CgroupFD), as limits need.
func TestNamespacedStartJoinsCgroup(t *testing.T) {
	if err := probeNamespaces(); err != nil {
		t.Skipf("namespaces unavailable: %v", err)
	}
	mnt := cgroup2Mount(t)
	dir, err := os.MkdirTemp(mnt, "batchlet-test-")
	if err != nil {
		t.Skipf("cgroup v2 not writable: %v", err)
	}
	defer os.Remove(dir)
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out strings.Builder
	cmd := &exec.Cmd{Stdout: &out, SysProcAttr: &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(f.Fd())}}
	spec := containerinit.Spec{Hostname: "cg", Argv: []string{"sh", "-c", "cat /proc/self/cgroup"}, WorkDir: "/",
		Mounts: []containerinit.Mount{{Source: "/etc/hosts", Target: "/etc/hosts"}, {Source: t.TempDir(), Target: "/tmp"}}}
	exited := make(chan struct{})
	if err := startInit(cmd, spec, exited); err != nil {
		t.Fatal(err)
	}
	<-exited
	if want := "0::/" + filepath.Base(dir) + "\n"; !strings.Contains(out.String(), want) {
		t.Fatalf("cgroups %q, want %q", out.String(), want)
	}
}

// cgroup2Mount finds where cgroup v2 is mounted.
func cgroup2Mount(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if _, fs, ok := strings.Cut(line, " - "); ok && strings.HasPrefix(fs, "cgroup2 ") {
			return strings.Fields(line)[4]
		}
	}
	t.Skip("no cgroup v2 mount")
	return ""
}

// A container whose PID 1 has no SIGTERM handler stops on SIGTERM, as a
// process that is not init would, and ends with SIGTERM's exit code; one
// that ignores SIGTERM still waits for SIGKILL (TestKillAfterGraceUsesSIGKILL).
func TestSIGTERMStopsPIDOneWithoutHandler(t *testing.T) {
	r := namespacedRuntime(t)
	if err := r.StartPod(context.Background(), testPod("ns8", corev1.RestartPolicyNever, corev1.Container{Name: "main", Image: "x", Command: []string{"sleep", "300"}}), fakeResolver{}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, r, "ns8", "running", func(s runtime.PodStatus) bool { return s.ContainerStatuses[0].State.Running != nil })
	// The grace period outlasts the test: only SIGTERM can end it in time.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := r.KillPod(ctx, "ns8", time.Hour); err != nil {
		t.Fatal(err)
	}
	st, _ := r.PodStatus("ns8")
	if term := st.ContainerStatuses[0].State.Terminated; term == nil || term.ExitCode != 143 {
		t.Fatalf("want exit 143, got %+v", st.ContainerStatuses[0].State)
	}
}

func TestSIGTERMDisposition(t *testing.T) {
	for _, tc := range []struct {
		script string
		want   bool
	}{
		{"sleep 30", true},
		{"trap 'exit 0' TERM; echo ready; sleep 30 & wait", false},
		{"trap '' TERM; echo ready; sleep 30 & wait", false},
	} {
		cmd := exec.Command("sh", "-c", tc.script)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if !tc.want {
			if _, err := out.Read(make([]byte, 6)); err != nil {
				t.Fatal(err)
			}
		}
		got := shim.SigtermIsDefault(cmd.Process.Pid)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if got != tc.want {
			t.Errorf("%q: SIGTERM default %v, want %v", tc.script, got, tc.want)
		}
	}
}

// kubectl exec runs as the container's command does: its user and groups,
// its capabilities (none effective as uid 1000, the bounding set narrowed
// as root), no_new_privs, its PID namespace; a command that cannot start
// is an error with runc's words, an exit code an ExitError.
func TestExecTakesTheContainersUserAndCapabilities(t *testing.T) {
	r := namespacedRuntime(t)
	user := shC("user", "sleep 30")
	user.SecurityContext = &corev1.SecurityContext{RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](1000),
		AllowPrivilegeEscalation: ptr.To(false)}
	root := shC("root", "sleep 30")
	root.SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"CHOWN"}}}
	p := testPod("ex1", corev1.RestartPolicyNever, user, root)
	p.Spec.SecurityContext = &corev1.PodSecurityContext{SupplementalGroups: []int64{3000}}
	if err := r.StartPod(context.Background(), p, fakeResolver{}); err != nil {
		t.Fatal(err)
	}
	defer r.RemovePod("ex1")
	waitStatus(t, r, "ex1", "running", func(s runtime.PodStatus) bool {
		return s.ContainerStatuses[0].State.Running != nil && s.ContainerStatuses[1].State.Running != nil
	})
	const script = `id -u; id -G; grep -E '^(CapEff|CapBnd|NoNewPrivs)' /proc/self/status; cut -d' ' -f2 /proc/1/stat`
	cases := []struct {
		container, want string
	}{
		{"user", "1000\n1000 3000\nCapEff:\t0000000000000000\nCapBnd:\t00000000a80425fb\nNoNewPrivs:\t1\n(sh)\n"},
		{"root", "0\n0 3000\nCapEff:\t0000000000000001\nCapBnd:\t0000000000000001\nNoNewPrivs:\t0\n(sh)\n"},
	}
	for _, tc := range cases {
		var out bytes.Buffer
		if err := r.Exec(context.Background(), "ex1", tc.container, []string{"sh", "-c", script}, runtime.ExecStreams{Stdout: &out, Stderr: &out}); err != nil {
			t.Fatalf("%s: exec: %v (%s)", tc.container, err, out.String())
		}
		if out.String() != tc.want {
			t.Errorf("%s: exec output:\n%s\nwant:\n%s", tc.container, out.String(), tc.want)
		}
	}
	err := r.Exec(context.Background(), "ex1", "user", []string{"no-such-command"}, runtime.ExecStreams{})
	const wantErr = `failed to exec in container: OCI runtime exec failed: exec failed: unable to start container process: exec: "no-such-command": executable file not found in $PATH`
	if err == nil || !strings.Contains(err.Error(), wantErr) {
		t.Errorf("exec of a missing command: %v, want %s", err, wantErr)
	}
	var tty bytes.Buffer
	if err := r.Exec(context.Background(), "ex1", "user", []string{"sh", "-c", `t=$(tty) && echo "$t $(stat -c %u "$t")"`}, runtime.ExecStreams{Stdout: &tty, TTY: true}); err != nil ||
		!regexp.MustCompile(`^/dev/pts/[0-9]+ 1000\r\n$`).MatchString(tty.String()) {
		t.Errorf("exec with a terminal: %v, output %q, want the container's /dev/pts/N owned by 1000", err, tty.String())
	}
	var ee *runtime.ExitError
	if err := r.Exec(context.Background(), "ex1", "user", []string{"sh", "-c", "kill -9 $$"}, runtime.ExecStreams{}); !errors.As(err, &ee) || ee.Code != 137 {
		t.Errorf("exec killed by SIGKILL: %v, want exit code 137", err)
	}
}
