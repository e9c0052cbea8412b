package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Issue 3's acceptance: pods run by the node agent, driven with kubectl.

// lockedBuffer is a bytes.Buffer safe to read while a process writes it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startAgent starts `batchlet agent` against s's kubeconfig and waits until
// its Node is Ready. Cleanup stops it (before the server, which was started
// first).
func startAgent(t *testing.T, s *server, nodeName string, extraArgs ...string) {
	t.Helper()
	log := &lockedBuffer{}
	rootDir := t.TempDir()
	args := append([]string{"agent", "--kubeconfig", s.kubeconfig, "--node-name", nodeName,
		"--root-dir", rootDir, "--runtime", "process", "--log-level", "info"}, extraArgs...)
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start agent: %v", err)
	}
	t.Cleanup(func() {
		defer killShims(rootDir) // SIGTERM leaves the pods running
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
			t.Errorf("agent did not stop within 60s of SIGTERM")
		}
		if t.Failed() {
			t.Logf("agent log:\n%s", log.String())
		}
	})
	eventually(t, 30*time.Second, "node "+nodeName+" Ready", func() bool {
		return s.jsonpath("node/"+nodeName, `{.status.conditions[?(@.type=="Ready")].status}`) == "True"
	})
}

// apply creates objects from a manifest.
func (s *server) apply(manifest string) {
	s.t.Helper()
	if out, err := s.kubectlStdin(manifest, "apply", "-f", "-"); err != nil {
		s.t.Fatalf("kubectl apply: %v\n%s\n%s", err, out, manifest)
	}
}

// waitPhase waits until pod's phase is one of phases.
func (s *server) waitPhase(pod string, timeout time.Duration, phases ...string) string {
	s.t.Helper()
	var got string
	eventually(s.t, timeout, "pod "+pod+" phase in "+strings.Join(phases, ","), func() bool {
		got = s.jsonpath("pod/"+pod, "{.status.phase}")
		for _, p := range phases {
			if got == p {
				return true
			}
		}
		return false
	})
	return got
}

// podHasOwnNamespaces reports whether the runtime put pod in its own
// namespaces: its hostname is the pod's, not the host's.
func (s *server) podHasOwnNamespaces(pod string) bool {
	s.t.Helper()
	out := strings.TrimSpace(s.kubectl("exec", pod, "--", "hostname"))
	host, _ := os.Hostname()
	return out == pod && out != host
}

func sleeperPod(name string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  containers:
  - name: c
    image: busybox
    command: ["sleep", "1000"]
`, name)
}

func TestAgentJoinsServer(t *testing.T) {
	s := startServer(t, "--no-agent")
	startAgent(t, s, "worker-1", "--node-labels", "topology.kubernetes.io/zone=zone-a")
	if got := s.jsonpath("node/worker-1", `{.status.addresses[?(@.type=="InternalIP")].address}`); got == "" {
		t.Errorf("node worker-1 has no InternalIP")
	}
	if got := s.jsonpath("node/worker-1", `{.metadata.labels.topology\.kubernetes\.io/zone}|{.metadata.labels.kubernetes\.io/hostname}`); got != "zone-a|worker-1" {
		t.Errorf("node labels zone|hostname = %q, want zone-a|worker-1", got)
	}
	if kv, sv := s.jsonpath("node/worker-1", "{.status.nodeInfo.kubeletVersion}"), s.kubectl("version", "-o", "json"); !strings.Contains(sv, `"gitVersion": "`+kv+`"`) {
		t.Errorf("kubeletVersion %q differs from the server's version:\n%s", kv, sv)
	}
	s.apply(`apiVersion: v1
kind: Pod
metadata:
  name: hello
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: busybox
    command: ["sh", "-c", "echo hello from worker-1"]
`)
	if got := s.waitPhase("hello", 60*time.Second, "Succeeded", "Failed"); got != "Succeeded" {
		t.Fatalf("phase = %q, want Succeeded", got)
	}
	if got := s.jsonpath("pod/hello", "{.spec.nodeName}"); got != "worker-1" {
		t.Errorf("nodeName = %q, want worker-1", got)
	}
	if got := strings.TrimSpace(s.kubectl("logs", "hello")); got != "hello from worker-1" {
		t.Errorf("kubectl logs through the proxy = %q", got)
	}

	runSub(t, s, "exec", func(t *testing.T) {
		s.apply(sleeperPod("sleeper"))
		s.waitPhase("sleeper", 60*time.Second, "Running")
		if got := strings.TrimSpace(s.kubectl("exec", "sleeper", "--", "echo", "via", "proxy")); got != "via proxy" {
			t.Errorf("kubectl exec through the proxy = %q", got)
		}
	})

	runSub(t, s, "drain", func(t *testing.T) {
		testDrain(t, s, "worker-1")
	})
}

// testDrain drains node with a pod on it; a finalizer keeps the evicted pod
// so its final status can be read.
func testDrain(t *testing.T, s *server, node string) {
	s.apply(`apiVersion: v1
kind: Pod
metadata:
  name: drained
  finalizers: ["e2e.batchlet.dev/keep"]
spec:
  containers:
  - name: c
    image: busybox
    command: ["sleep", "1000"]
`)
	s.waitPhase("drained", 60*time.Second, "Running")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	drain := exec.CommandContext(ctx, "kubectl", "drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--force")
	drain.Env = append(os.Environ(), "KUBECONFIG="+s.kubeconfig)
	var out lockedBuffer
	drain.Stdout, drain.Stderr = &out, &out
	if err := drain.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.kubectlErr("uncordon", node)
	eventually(t, 60*time.Second, "evicted pod terminal", func() bool {
		p := s.jsonpath("pod/drained", "{.status.phase}")
		return p == "Failed" || p == "Succeeded"
	})
	if got := s.jsonpath("pod/drained", `{.status.conditions[?(@.type=="DisruptionTarget")].status}/{.status.conditions[?(@.type=="DisruptionTarget")].reason}`); got != "True/EvictionByEvictionAPI" {
		t.Errorf("DisruptionTarget = %q, want True/EvictionByEvictionAPI", got)
	}
	if got := s.jsonpath("pod/drained", "{.metadata.deletionTimestamp}"); got == "" {
		t.Errorf("evicted pod has no deletionTimestamp")
	}
	s.kubectl("patch", "pod/drained", "--type=merge", "--patch", `{"metadata":{"finalizers":null}}`)
	if err := drain.Wait(); err != nil {
		t.Fatalf("kubectl drain: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "pod/drained evicted") || !strings.Contains(out.String(), "node/"+node+" drained") {
		t.Errorf("kubectl drain output:\n%s", out.String())
	}
	if got := s.jsonpath("node/"+node, "{.spec.unschedulable}"); got != "true" {
		t.Errorf("drained node unschedulable = %q", got)
	}
	s.kubectl("uncordon", node)
	if got := s.jsonpath("node/"+node, "{.spec.unschedulable}"); got != "" {
		t.Errorf("uncordoned node unschedulable = %q", got)
	}
	eventually(t, 30*time.Second, "drained pod gone", func() bool {
		_, err := s.kubectlErr("get", "pod", "drained")
		return err != nil
	})
}

// runSub runs fn as a subtest with s reporting to the subtest's t.
func runSub(t *testing.T, s *server, name string, fn func(t *testing.T)) {
	t.Run(name, func(st *testing.T) {
		s.t = st
		defer func() { s.t = t }()
		fn(st)
	})
}

// TestPodLifecycle walks pods through the embedded agent's process runtime.
func TestPodLifecycle(t *testing.T) {
	s := startServer(t)
	sub := func(name string, fn func(t *testing.T)) { runSub(t, s, name, fn) }
	sub("exit code", func(t *testing.T) { testExitCode(t, s) })
	sub("OnFailure restarts", func(t *testing.T) { testOnFailureRestarts(t, s) })
	sub("exec isolation", func(t *testing.T) { testExecIsolation(t, s) })
	sub("delete runs TERM trap", func(t *testing.T) { testDeleteTrap(t, s) })
	sub("logs follow", func(t *testing.T) { testLogsFollow(t, s) })
	sub("run -i attaches stdin", func(t *testing.T) { testRunAttach(t, s) })
	sub("readiness restored", func(t *testing.T) { testReadinessRestored(t, s) })
	sub("subdomain DNS", func(t *testing.T) { testSubdomainDNS(t, s) })
	sub("no command", func(t *testing.T) { testNoCommand(t, s) })
	sub("OOMKilled", func(t *testing.T) { testOOMKilled(t, s) })
	sub("drain", func(t *testing.T) {
		testDrain(t, s, s.jsonpath("nodes", "{.items[0].metadata.name}"))
	})
}

func testExitCode(t *testing.T, s *server) {
	s.apply(`apiVersion: v1
kind: Pod
metadata:
  name: exit3
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: busybox
    command: ["sh", "-c", "echo hi; exit 3"]
`)
	if got := s.waitPhase("exit3", 60*time.Second, "Succeeded", "Failed"); got != "Failed" {
		t.Fatalf("phase = %q, want Failed", got)
	}
	if got := s.jsonpath("pod/exit3", "{.status.containerStatuses[0].state.terminated.exitCode}/{.status.containerStatuses[0].state.terminated.reason}"); got != "3/Error" {
		t.Errorf("terminated exitCode/reason = %q, want 3/Error", got)
	}
	if got := s.kubectl("logs", "exit3"); got != "hi\n" {
		t.Errorf("kubectl logs = %q, want hi", got)
	}
}

func testOnFailureRestarts(t *testing.T, s *server) {
	dir := t.TempDir()
	s.apply(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: flaky
spec:
  restartPolicy: OnFailure
  volumes:
  - name: state
    hostPath: {path: %[1]s}
  containers:
  - name: c
    image: busybox
    volumeMounts:
    - {name: state, mountPath: %[1]s}
    command: ["sh", "-c", "n=$(cat %[1]s/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > %[1]s/n; echo attempt $n; [ $n -ge 3 ]"]
`, dir))
	if got := s.waitPhase("flaky", 120*time.Second, "Succeeded", "Failed"); got != "Succeeded" {
		t.Fatalf("phase = %q, want Succeeded", got)
	}
	if got := s.jsonpath("pod/flaky", "{.status.containerStatuses[0].restartCount}"); got != "2" {
		t.Errorf("restartCount = %q, want 2", got)
	}
	if got := s.jsonpath("pod/flaky", "{.status.containerStatuses[0].lastState.terminated.exitCode}"); got != "1" {
		t.Errorf("lastState.terminated.exitCode = %q, want 1", got)
	}
	if got := s.kubectl("logs", "flaky"); got != "attempt 3\n" {
		t.Errorf("kubectl logs = %q, want attempt 3", got)
	}
	if got := s.kubectl("logs", "flaky", "--previous"); got != "attempt 2\n" {
		t.Errorf("kubectl logs --previous = %q, want attempt 2", got)
	}
}

func testExecIsolation(t *testing.T, s *server) {
	s.apply(sleeperPod("exec-a") + "---\n" + sleeperPod("exec-b"))
	s.waitPhase("exec-a", 60*time.Second, "Running")
	s.waitPhase("exec-b", 60*time.Second, "Running")
	file := fmt.Sprintf("/tmp/x-e2e-%d", os.Getpid()) // unique: the host's /tmp is shared
	s.kubectl("exec", "exec-a", "--", "touch", file)
	if out, err := s.kubectlErr("exec", "exec-a", "--", "ls", file); err != nil || strings.TrimSpace(out) != file {
		t.Fatalf("exec-a does not see its own %s: %v\n%s", file, err, out)
	}
	if !s.podHasOwnNamespaces("exec-a") {
		t.Skip("the process runtime reports Linux namespaces unavailable (pods share the host's /tmp): isolation not asserted")
	}
	out, err := s.kubectlErr("exec", "exec-b", "--", "ls", file)
	if err == nil {
		t.Errorf("exec-b sees %s of exec-a:\n%s", file, out)
	} else if !strings.Contains(out, "command terminated with exit code") {
		t.Errorf("kubectl exec exec-b ls: %v\n%s", err, out)
	}
	if _, err := os.Stat(file); err == nil {
		_ = os.Remove(file)
		t.Errorf("the host's /tmp has %s written inside pod exec-a", file)
	}
}

func testDeleteTrap(t *testing.T, s *server) {
	dir := t.TempDir()
	s.apply(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: trapper
spec:
  volumes:
  - name: out
    hostPath: {path: %[1]s}
  containers:
  - name: c
    image: busybox
    volumeMounts:
    - {name: out, mountPath: %[1]s}
    command: ["sh", "-c", "trap 'echo got TERM > %[1]s/term; exit 0' TERM; touch %[1]s/ready; sleep 1000"]
`, dir))
	eventually(t, 60*time.Second, "trap installed", func() bool {
		_, err := os.Stat(filepath.Join(dir, "ready"))
		return err == nil
	})
	out := s.kubectl("delete", "pod", "trapper")
	if !strings.Contains(out, `pod "trapper" deleted`) {
		t.Errorf("kubectl delete: %s", out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "term"))
	if err != nil || string(b) != "got TERM\n" {
		t.Errorf("TERM trap output = %q, %v; want got TERM", b, err)
	}
	if out, err := s.kubectlErr("get", "pod", "trapper"); err == nil || !strings.Contains(out, "NotFound") {
		t.Errorf("pod still there after kubectl delete: %v\n%s", err, out)
	}
}

func testLogsFollow(t *testing.T, s *server) {
	s.apply(`apiVersion: v1
kind: Pod
metadata:
  name: follow
spec:
  containers:
  - name: c
    image: busybox
    command: ["sh", "-c", "echo first; until [ -e go ]; do sleep 0.1; done; echo second; sleep 1000"]
`)
	s.waitPhase("follow", 60*time.Second, "Running")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, "kubectl", "logs", "-f", "follow")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+s.kubeconfig)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	expectLine(t, lines, "first")
	// "second" is written only after the stream is open: it must arrive on it.
	s.kubectl("exec", "follow", "--", "touch", "go")
	expectLine(t, lines, "second")
}

// testRunAttach: kubectl run -i attaches the terminal's stdin to the
// container (stdin, stdinOnce) and --rm deletes the pod afterwards.
func testRunAttach(t *testing.T, s *server) {
	out, err := s.kubectlStdin("input line\n", "run", "-i", "--rm", "attached", "--image=busybox", "--restart=Never",
		"--", "sh", "-c", "read x; echo got $x")
	if err != nil || !strings.Contains(out, "got input line\n") || !strings.Contains(out, `pod "attached" deleted`) {
		t.Errorf("kubectl run -i: %v\n%s", err, out)
	}
	if strings.Contains(out, "couldn't attach") {
		t.Errorf("kubectl run -i fell back to logs:\n%s", out)
	}
}

// testReadinessRestored: when something else (the node controller, for a
// node it believes silent) marks a running pod not ready, the live agent
// puts its readiness back.
func testReadinessRestored(t *testing.T, s *server) {
	s.apply(sleeperPod("ready-back"))
	s.waitPhase("ready-back", 60*time.Second, "Running")
	ready := `{.status.conditions[?(@.type=="Ready")].status}`
	eventually(t, 30*time.Second, "Ready=True", func() bool { return s.jsonpath("pod/ready-back", ready) == "True" })
	s.kubectl("patch", "pod", "ready-back", "--subresource=status", "--type=strategic",
		"--patch", `{"status":{"conditions":[{"type":"Ready","status":"False"}]}}`)
	eventually(t, 30*time.Second, "Ready=True again", func() bool { return s.jsonpath("pod/ready-back", ready) == "True" })
}

func expectLine(t *testing.T, lines <-chan string, want string) {
	t.Helper()
	select {
	case got, ok := <-lines:
		if !ok {
			t.Fatalf("kubectl logs -f ended before %q", want)
		}
		if got != want {
			t.Fatalf("kubectl logs -f line = %q, want %q", got, want)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("kubectl logs -f: no %q within 60s", want)
	}
}

func testSubdomainDNS(t *testing.T, s *server) {
	pod := func(name, host string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  labels: {app: dns}
spec:
  hostname: %s
  subdomain: workers
  containers:
  - name: c
    image: busybox
    command: ["sleep", "1000"]
`, name, host)
	}
	s.apply(`apiVersion: v1
kind: Service
metadata:
  name: workers
spec:
  clusterIP: None
  selector: {app: dns}
---
` + pod("dns-a", "host-a") + "---\n" + pod("dns-b", "host-b"))
	s.waitPhase("dns-a", 60*time.Second, "Running")
	s.waitPhase("dns-b", 60*time.Second, "Running")
	if got := strings.TrimSpace(s.kubectl("exec", "dns-b", "--", "hostname")); got != "host-b" {
		t.Skipf("the process runtime reports Linux namespaces unavailable (pod hostname %q): per-pod /etc/hosts not asserted", got)
	}
	ipA := s.jsonpath("pod/dns-a", "{.status.podIP}")
	fqdn := "host-a.workers.default.svc.cluster.local"
	var out string
	eventually(t, 30*time.Second, "getent hosts "+fqdn+" from dns-b", func() bool {
		out, _ = s.kubectlErr("exec", "dns-b", "--", "getent", "hosts", fqdn)
		return strings.HasPrefix(out, ipA+" ")
	})
	if !strings.Contains(out, fqdn) {
		t.Errorf("getent hosts %s = %q", fqdn, out)
	}
	// JobSet workloads use the short form <hostname>.<subdomain>, which the
	// DNS search path would expand.
	if out, err := s.kubectlErr("exec", "dns-b", "--", "getent", "hosts", "host-a.workers"); err != nil || !strings.HasPrefix(out, ipA+" ") {
		t.Errorf("getent hosts host-a.workers = %q, %v; want %s", out, err, ipA)
	}
}

func testNoCommand(t *testing.T, s *server) {
	s.apply(`apiVersion: v1
kind: Pod
metadata:
  name: imageonly
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: busybox
`)
	if got := s.waitPhase("imageonly", 60*time.Second, "Succeeded", "Failed"); got != "Failed" {
		t.Fatalf("phase = %q, want Failed", got)
	}
	term := "{.status.containerStatuses[0].state.terminated"
	if got := s.jsonpath("pod/imageonly", term+".reason}/"+term+".exitCode}"); got != "StartError/128" {
		t.Errorf("terminated reason/exitCode = %q, want StartError/128", got)
	}
	msg := s.jsonpath("pod/imageonly", term+".message}")
	want := `failed to start container "c": no command`
	if !strings.Contains(msg, want) || !strings.Contains(msg, "busybox") {
		t.Errorf("terminated message = %q, want it to contain %q and the image", msg, want)
	}
	var events string
	eventually(t, 30*time.Second, "Failed event of imageonly", func() bool {
		events = s.jsonpath("events", `{range .items[?(@.involvedObject.name=="imageonly")]}{.type}/{.reason}/{.message};{end}`)
		return strings.Contains(events, "Warning/Failed/Error: "+want)
	})
	if strings.Contains(events, "Started") {
		t.Errorf("events claim the container started: %s", events)
	}
}

// cgroupV2Writable mirrors the process runtime's check: cgroup v2 with the
// memory controller, and room to make batchlet's subtree.
func cgroupV2Writable() (bool, string) {
	b, err := os.ReadFile("/sys/fs/cgroup/cgroup.controllers")
	if err != nil {
		return false, "no cgroup v2 at /sys/fs/cgroup (cgroup v1 host)"
	}
	if !strings.Contains(string(b), "memory") {
		return false, "cgroup v2 has no memory controller"
	}
	if err := os.MkdirAll("/sys/fs/cgroup/batchlet", 0o755); err != nil {
		return false, "cgroup v2 is not writable: " + err.Error()
	}
	return true, ""
}

func testOOMKilled(t *testing.T, s *server) {
	if ok, why := cgroupV2Writable(); !ok {
		t.Skipf("memory limits are not enforced here: %s", why)
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
	s.apply(`apiVersion: v1
kind: Pod
metadata:
  name: hog
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: python
    command: ["python3", "-c", "b=bytearray(200*1024*1024); import time; time.sleep(1)"]
    resources:
      limits: {memory: 50Mi}
`)
	if got := s.waitPhase("hog", 60*time.Second, "Succeeded", "Failed"); got != "Failed" {
		t.Fatalf("phase = %q, want Failed", got)
	}
	if got := s.jsonpath("pod/hog", "{.status.containerStatuses[0].state.terminated.reason}/{.status.containerStatuses[0].state.terminated.exitCode}"); got != "OOMKilled/137" {
		t.Errorf("terminated reason/exitCode = %q, want OOMKilled/137", got)
	}
}

// TestMultiNode runs the embedded agent and a `batchlet agent` side by side:
// distinct pod CIDRs, best-effort pods spread over both nodes, and pods of
// one subdomain resolve each other across nodes.
func TestMultiNode(t *testing.T) {
	s := startServer(t)
	startAgent(t, s, "worker-2")
	cidrs := s.jsonpath("nodes", `{range .items[*]}{.spec.podCIDR},{end}`)
	if parts := strings.Split(strings.TrimSuffix(cidrs, ","), ","); len(parts) != 2 || parts[0] == parts[1] || parts[0] == "" || parts[1] == "" {
		t.Errorf("pod CIDRs of the two nodes = %q, want two distinct", cidrs)
	}
	pod := func(name string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  labels: {app: mn}
spec:
  hostname: %s
  subdomain: mn
  containers:
  - name: c
    image: busybox
    command: ["sleep", "1000"]
`, name, name)
	}
	s.apply(`apiVersion: v1
kind: Service
metadata:
  name: mn
spec:
  clusterIP: None
  selector: {app: mn}
---
` + pod("mn-0"))
	s.waitPhase("mn-0", 60*time.Second, "Running")
	s.apply(pod("mn-1"))
	s.waitPhase("mn-1", 60*time.Second, "Running")
	nodes := s.jsonpath("pods", `{range .items[*]}{.spec.nodeName},{end}`)
	if n := strings.Split(strings.TrimSuffix(nodes, ","), ","); len(n) != 2 || n[0] == n[1] {
		t.Errorf("best-effort pods on nodes %q, want them spread over both", nodes)
	}
	ip0, ip1 := s.jsonpath("pod/mn-0", "{.status.podIP}"), s.jsonpath("pod/mn-1", "{.status.podIP}")
	if ip0 == ip1 {
		t.Errorf("pods on two nodes share the pod IP %s", ip0)
	}
	if got := strings.TrimSpace(s.kubectl("exec", "mn-1", "--", "hostname")); got != "mn-1" {
		t.Skipf("the process runtime reports Linux namespaces unavailable (pod hostname %q): per-pod /etc/hosts not asserted", got)
	}
	for _, tc := range []struct{ from, name, ip string }{{"mn-0", "mn-1.mn", ip1}, {"mn-1", "mn-0.mn", ip0}} {
		var out string
		eventually(t, 30*time.Second, "getent hosts "+tc.name+" from "+tc.from, func() bool {
			out, _ = s.kubectlErr("exec", tc.from, "--", "getent", "hosts", tc.name)
			return strings.HasPrefix(out, tc.ip+" ")
		})
	}
}
