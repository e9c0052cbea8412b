package process

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/batchlet/batchlet/runtime"
)

type fakeResolver struct {
	cms     map[string]*corev1.ConfigMap
	secrets map[string]*corev1.Secret
}

func (f fakeResolver) ConfigMap(_ context.Context, ns, name string) (*corev1.ConfigMap, error) {
	if cm, ok := f.cms[ns+"/"+name]; ok {
		return cm, nil
	}
	return nil, errors.New("not found")
}

func (f fakeResolver) Secret(_ context.Context, ns, name string) (*corev1.Secret, error) {
	if s, ok := f.secrets[ns+"/"+name]; ok {
		return s, nil
	}
	return nil, errors.New("not found")
}

func (fakeResolver) Hosts(*corev1.Pod) []runtime.HostEntry { return nil }

type events struct {
	mu   sync.Mutex
	list []string
}

func (e *events) record(_ *corev1.Pod, field, typ, reason, msg string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, fmt.Sprintf("%s %s %s", typ, reason, msg))
}

func (e *events) has(s string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, x := range e.list {
		if strings.Contains(x, s) {
			return true
		}
	}
	return false
}

func newTestRuntime(t *testing.T, clk *clocktesting.FakeClock) (*Runtime, *events) {
	t.Helper()
	ev := &events{}
	cfg := Config{RootDir: t.TempDir(), Events: ev.record, Logger: slog.New(slog.DiscardHandler)}
	if clk != nil {
		cfg.Clock = clk
	}
	r, err := New(withTestShims(cfg))
	if err != nil {
		t.Fatal(err)
	}
	// Before the RootDir goes: a removed pod's directory may still be on
	// its way into the spares.
	t.Cleanup(r.waitRemovals)
	return r, ev
}

func testPod(uid string, policy corev1.RestartPolicy, containers ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p-" + uid, Namespace: "default", UID: types.UID(uid),
			Annotations: map[string]string{"batch.kubernetes.io/job-completion-index": "7"}},
		Spec:   corev1.PodSpec{RestartPolicy: policy, Containers: containers, NodeName: "n1"},
		Status: corev1.PodStatus{PodIP: "127.1.0.1", HostIP: "127.0.0.1"},
	}
}

func shC(name, script string) corev1.Container {
	return corev1.Container{Name: name, Image: "busybox", Command: []string{"sh", "-c", script}}
}

// waitStatus polls until cond holds for the pod's status.
func waitStatus(t *testing.T, r *Runtime, uid types.UID, what string, cond func(runtime.PodStatus) bool) runtime.PodStatus {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if st, ok := r.PodStatus(uid); ok && cond(st) {
			return st
		}
		time.Sleep(5 * time.Millisecond)
	}
	st, _ := r.PodStatus(uid)
	t.Fatalf("timed out waiting for %s; status %+v", what, st)
	return st
}

func logs(t *testing.T, r *Runtime, uid types.UID, c string, opts runtime.LogOptions) string {
	t.Helper()
	var b bytes.Buffer
	if err := r.Logs(context.Background(), uid, c, opts, &b); err != nil {
		t.Fatalf("logs: %v", err)
	}
	return b.String()
}

func TestExitCodeAndLog(t *testing.T) {
	r, _ := newTestRuntime(t, nil)
	p := testPod("u1", corev1.RestartPolicyNever, shC("main", "echo hi; exit 3"))
	if err := r.StartPod(context.Background(), p, fakeResolver{}); err != nil {
		t.Fatal(err)
	}
	st := waitStatus(t, r, "u1", "done", func(s runtime.PodStatus) bool { return s.Done })
	term := st.ContainerStatuses[0].State.Terminated
	if term == nil || term.ExitCode != 3 || term.Reason != "Error" {
		t.Fatalf("want terminated exitCode 3 reason Error, got %+v", st.ContainerStatuses[0].State)
	}
	if got := logs(t, r, "u1", "main", runtime.LogOptions{}); got != "hi\n" {
		t.Fatalf("log = %q, want %q", got, "hi\n")
	}
}

func TestOnFailureRestartsWithBackoffAndPreviousLogs(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r, ev := newTestRuntime(t, clk)
	// The default working directory is the pod's, kept across restarts.
	script := `n=$(cat n 2>/dev/null || echo 0); echo "attempt $n"; echo $((n+1)) > n; [ "$n" -ge 2 ]`
	p := testPod("u2", corev1.RestartPolicyOnFailure, shC("main", script))
	if err := r.StartPod(context.Background(), p, fakeResolver{}); err != nil {
		t.Fatal(err)
	}
	// First failure restarts at once; the second waits 10s of the clock.
	st := waitStatus(t, r, "u2", "crash loop", func(s runtime.PodStatus) bool {
		w := s.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == "CrashLoopBackOff"
	})
	cs := st.ContainerStatuses[0]
	if cs.RestartCount != 1 || cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 1 {
		t.Fatalf("in back-off: want restartCount 1 and lastState terminated exit 1, got %+v", cs)
	}
	wantMsg := "back-off 10s restarting failed container=main pod=p-u2_default(u2)"
	if cs.State.Waiting.Message != wantMsg {
		t.Fatalf("waiting message %q, want %q", cs.State.Waiting.Message, wantMsg)
	}
	if !ev.has("Warning BackOff Back-off restarting failed container main in pod p-u2_default(u2)") {
		t.Fatalf("missing BackOff event: %v", ev.list)
	}
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	clk.Step(10 * time.Second)
	st = waitStatus(t, r, "u2", "done", func(s runtime.PodStatus) bool { return s.Done })
	cs = st.ContainerStatuses[0]
	if cs.RestartCount != 2 || cs.State.Terminated == nil || cs.State.Terminated.Reason != "Completed" {
		t.Fatalf("want restartCount 2 and Completed, got %+v", cs)
	}
	if got := logs(t, r, "u2", "main", runtime.LogOptions{}); got != "attempt 2\n" {
		t.Fatalf("current log %q", got)
	}
	if got := logs(t, r, "u2", "main", runtime.LogOptions{Previous: true}); got != "attempt 1\n" {
		t.Fatalf("previous log %q", got)
	}
}

func TestKillRunsSIGTERMTrap(t *testing.T) {
	r, ev := newTestRuntime(t, nil)
	p := testPod("u3", corev1.RestartPolicyNever, shC("main", `trap 'echo trapped; exit 0' TERM; echo ready; while true; do sleep 0.05; done`))
	if err := r.StartPod(context.Background(), p, fakeResolver{}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, r, "u3", "running", func(s runtime.PodStatus) bool { return s.ContainerStatuses[0].State.Running != nil })
	for !strings.Contains(logs(t, r, "u3", "main", runtime.LogOptions{}), "ready") {
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := r.KillPod(ctx, "u3", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	st, _ := r.PodStatus("u3")
	term := st.ContainerStatuses[0].State.Terminated
	if term == nil || term.ExitCode != 0 || term.Reason != "Completed" {
		t.Fatalf("want the trap to exit 0, got %+v", st.ContainerStatuses[0].State)
	}
	if got := logs(t, r, "u3", "main", runtime.LogOptions{}); !strings.HasPrefix(got, "ready\n") || !strings.Contains(got, "trapped\n") {
		t.Fatalf("log %q", got)
	}
	if !ev.has("Normal Killing Stopping container main") {
		t.Fatalf("missing Killing event: %v", ev.list)
	}
}

func TestKillAfterGraceUsesSIGKILL(t *testing.T) {
	r, _ := newTestRuntime(t, nil)
	p := testPod("u4", corev1.RestartPolicyNever, shC("main", `trap '' TERM; while true; do sleep 0.05; done`))
	if err := r.StartPod(context.Background(), p, fakeResolver{}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, r, "u4", "running", func(s runtime.PodStatus) bool { return s.ContainerStatuses[0].State.Running != nil })
	time.Sleep(50 * time.Millisecond) // let the shell install its trap
	if err := r.KillPod(context.Background(), "u4", 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	st, _ := r.PodStatus("u4")
	if term := st.ContainerStatuses[0].State.Terminated; term == nil || term.ExitCode != 137 || term.Reason != "Error" {
		t.Fatalf("want exit 137, got %+v", st.ContainerStatuses[0].State)
	}
}

func TestEnvExpansionAndDownwardAPI(t *testing.T) {
	r, _ := newTestRuntime(t, nil)
	c := corev1.Container{Name: "main", Image: "x",
		Command: []string{"sh", "-c", "echo $(GREETING) '$$(NOT) $(MISSING)' idx=$JOB_COMPLETION_INDEX ns=$NS from=$FROM_CM sec=$PW"},
		EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}},
		Env: []corev1.EnvVar{
			{Name: "NAME", Value: "world"},
			{Name: "GREETING", Value: "hello-$(NAME)"},
			{Name: "JOB_COMPLETION_INDEX", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}},
			{Name: "NS", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
			{Name: "PW", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "pw"}}},
		}}
	res := fakeResolver{
		cms:     map[string]*corev1.ConfigMap{"default/cm": {Data: map[string]string{"FROM_CM": "cmv"}}},
		secrets: map[string]*corev1.Secret{"default/s": {Data: map[string][]byte{"pw": []byte("sekret")}}},
	}
	if err := r.StartPod(context.Background(), testPod("u5", corev1.RestartPolicyNever, c), res); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, r, "u5", "done", func(s runtime.PodStatus) bool { return s.Done })
	want := "hello-world $(NOT) $(MISSING) idx=7 ns=default from=cmv sec=sekret\n"
	if got := logs(t, r, "u5", "main", runtime.LogOptions{}); got != want {
		t.Fatalf("log %q, want %q", got, want)
	}
}

func TestNoCommandIsStartError(t *testing.T) {
	r, ev := newTestRuntime(t, nil)
	p := testPod("u6", corev1.RestartPolicyNever, corev1.Container{Name: "main", Image: "perl:5.34"})
	if err := r.StartPod(context.Background(), p, fakeResolver{}); err != nil {
		t.Fatal(err)
	}
	st := waitStatus(t, r, "u6", "done", func(s runtime.PodStatus) bool { return s.Done })
	term := st.ContainerStatuses[0].State.Terminated
	if term == nil || term.Reason != "StartError" || term.ExitCode != 128 || !strings.Contains(term.Message, "no command") {
		t.Fatalf("want StartError, got %+v", st.ContainerStatuses[0].State)
	}
	if !ev.has("Warning Failed Error: failed to start container \"main\": no command") {
		t.Fatalf("missing Failed event: %v", ev.list)
	}
}

func TestInitContainersRunFirst(t *testing.T) {
	r, _ := newTestRuntime(t, nil)
	p := testPod("u7", corev1.RestartPolicyNever, shC("main", "cat /tmp/init-marker-u7"))
	p.Spec.InitContainers = []corev1.Container{shC("init", "echo from-init > /tmp/init-marker-u7")}
	if err := r.StartPod(context.Background(), p, fakeResolver{}); err != nil {
		t.Fatal(err)
	}
	st := waitStatus(t, r, "u7", "done", func(s runtime.PodStatus) bool { return s.Done })
	if st.InitContainerStatuses[0].State.Terminated.Reason != "Completed" {
		t.Fatalf("init: %+v", st.InitContainerStatuses[0].State)
	}
	if got := logs(t, r, "u7", "main", runtime.LogOptions{}); got != "from-init\n" {
		t.Fatalf("log %q", got)
	}
}

func TestExec(t *testing.T) {
	r, _ := newTestRuntime(t, nil)
	c := shC("main", "sleep 30")
	c.Env = []corev1.EnvVar{{Name: "FOO", Value: "bar"}}
	c.WorkingDir = "/usr"
	if err := r.StartPod(context.Background(), testPod("u8", corev1.RestartPolicyNever, c), fakeResolver{}); err != nil {
		t.Fatal(err)
	}
	defer r.RemovePod("u8")
	waitStatus(t, r, "u8", "running", func(s runtime.PodStatus) bool { return s.ContainerStatuses[0].State.Running != nil })
	var out bytes.Buffer
	err := r.Exec(context.Background(), "u8", "main", []string{"sh", "-c", "echo $FOO $(pwd) $(hostname); exit 4"}, runtime.ExecStreams{Stdout: &out})
	var ee *runtime.ExitError
	if !errors.As(err, &ee) || ee.Code != 4 {
		t.Fatalf("want exit 4, got %v", err)
	}
	want := "bar /usr p-u8\n"
	if !r.Namespaces() {
		want = "bar /usr " + hostnameOf(t) + "\n"
	}
	if out.String() != want {
		t.Fatalf("exec output %q, want %q", out.String(), want)
	}
}

func TestVolumeMountsInNamespace(t *testing.T) {
	r, _ := newTestRuntime(t, nil)
	if !r.Namespaces() {
		t.Skip("namespaces unavailable")
	}
	c := shC("main", "cat /etc/config/k; hostname; grep p-u9 /etc/hosts; echo x > /data/f && cat /data/f")
	c.VolumeMounts = []corev1.VolumeMount{{Name: "cfg", MountPath: "/etc/config"}, {Name: "d", MountPath: "/data"}}
	p := testPod("u9", corev1.RestartPolicyNever, c)
	p.Spec.Hostname, p.Spec.Subdomain = "p-u9", "sub"
	p.Spec.Volumes = []corev1.Volume{
		{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}},
		{Name: "d", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	res := fakeResolver{cms: map[string]*corev1.ConfigMap{"default/cm": {Data: map[string]string{"k": "v"}}}}
	if err := r.StartPod(context.Background(), p, res); err != nil {
		t.Fatal(err)
	}
	st := waitStatus(t, r, "u9", "done", func(s runtime.PodStatus) bool { return s.Done })
	want := "vp-u9\n127.1.0.1\tp-u9.sub.default.svc.cluster.local\tp-u9\n127.1.0.1\tp-u9.sub\tp-u9.sub.default\tp-u9.sub.default.svc\nx\n"
	if got := logs(t, r, "u9", "main", runtime.LogOptions{}); got != want {
		t.Fatalf("log %q, want %q (state %+v)", got, want, st.ContainerStatuses[0].State)
	}
}

func TestLogsFollowUntilExit(t *testing.T) {
	r, _ := newTestRuntime(t, nil)
	p := testPod("u10", corev1.RestartPolicyNever, shC("main", "echo a; sleep 0.3; echo b"))
	if err := r.StartPod(context.Background(), p, fakeResolver{}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, r, "u10", "started", func(s runtime.PodStatus) bool {
		return s.ContainerStatuses[0].State.Waiting == nil
	})
	if got := logs(t, r, "u10", "main", runtime.LogOptions{Follow: true}); got != "a\nb\n" {
		t.Fatalf("followed log %q", got)
	}
	st, _ := r.PodStatus("u10")
	if st.ContainerStatuses[0].State.Terminated == nil {
		t.Fatalf("follow returned before the container ended: %+v", st.ContainerStatuses[0].State)
	}
}

func TestContainerWaitingForMissingConfigMap(t *testing.T) {
	r, ev := newTestRuntime(t, nil)
	c := shC("main", "true")
	c.Env = []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "missing"}, Key: "k"}}}}
	if err := r.StartPod(context.Background(), testPod("u11", corev1.RestartPolicyNever, c), fakeResolver{}); err != nil {
		t.Fatal(err)
	}
	defer r.RemovePod("u11")
	st := waitStatus(t, r, "u11", "config error", func(s runtime.PodStatus) bool {
		w := s.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == "CreateContainerConfigError"
	})
	if msg := st.ContainerStatuses[0].State.Waiting.Message; msg != `configmap "missing" not found` {
		t.Fatalf("message %q", msg)
	}
	if !ev.has(`Warning Failed Error: configmap "missing" not found`) {
		t.Fatalf("events %v", ev.list)
	}
}

func TestExecWithTTY(t *testing.T) {
	r, _ := newTestRuntime(t, nil)
	if err := r.StartPod(context.Background(), testPod("u12", corev1.RestartPolicyNever, shC("main", "sleep 30")), fakeResolver{}); err != nil {
		t.Fatal(err)
	}
	defer r.RemovePod("u12")
	waitStatus(t, r, "u12", "running", func(s runtime.PodStatus) bool { return s.ContainerStatuses[0].State.Running != nil })
	var out bytes.Buffer
	err := r.Exec(context.Background(), "u12", "main", []string{"sh", "-c", "[ -t 0 ] && echo tty"}, runtime.ExecStreams{Stdout: &out, TTY: true})
	if err != nil || strings.TrimSpace(out.String()) != "tty" {
		t.Fatalf("err %v output %q", err, out.String())
	}
}
