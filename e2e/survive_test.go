package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// killShims ends the container shims (or the shim supervisor) below dir,
// a server's data dir or an agent's root dir (and so their containers):
// pods a server or agent stopped with --on-shutdown=keep leaves running.
func killShims(dir string) {
	shims := []byte("batchlet-shim\x00" + filepath.Clean(dir) + "/")
	supervisor := []byte("batchlet-supervisor\x00" + filepath.Clean(dir) + "/")
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err == nil && (bytes.HasPrefix(cmd, shims) || bytes.HasPrefix(cmd, supervisor)) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// sigterm stops the server as systemd does and waits for it to exit,
// leaving its pods to the default --on-shutdown=keep.
func (s *server) sigterm(t *testing.T) {
	t.Helper()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	if err := s.cmd.Wait(); err != nil {
		t.Errorf("server exit after SIGTERM: %v\n%s", err, s.log.String())
	}
	s.cmd = nil
}

// attemptState is the state file the shim of a pod's container's first
// attempt writes.
func (s *server) attemptState(uid, container string) string {
	b, _ := os.ReadFile(filepath.Join(s.podDir(uid), container+".0.state"))
	return string(b)
}

// podDir is the directory of the pod uid in the server's data dir:
// pods/<shard>/<uid>, else pods/<uid> (an earlier version's layout).
func (s *server) podDir(uid string) string {
	if dirs, _ := filepath.Glob(filepath.Join(s.dataDir, "pods", "*", uid)); len(dirs) == 1 {
		return dirs[0]
	}
	return filepath.Join(s.dataDir, "pods", uid)
}

// waitFile waits for a file the pods write on the host.
func waitFile(t *testing.T, path string) {
	t.Helper()
	eventually(t, 60*time.Second, path, func() bool {
		_, err := os.Stat(path)
		return err == nil
	})
}

func release(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

func survivorJob(markers string) string {
	return `apiVersion: batch/v1
kind: Job
metadata:
  name: survivor
spec:
  completions: 3
  parallelism: 3
  completionMode: Indexed
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        command: ["sh", "-c", "touch /markers/start.$JOB_COMPLETION_INDEX.$$.$(date +%s%N); until [ -f /markers/release ]; do sleep 0.05; done"]
        volumeMounts:
        - name: markers
          mountPath: /markers
      volumes:
      - name: markers
        hostPath:
          path: ` + markers + `
`
}

// TestJobSurvivesServerKill9: the pods of a Job keep running across a
// kill -9 of the server and its restart on the same data dir; each index
// starts exactly once and the Job completes with its exact count.
func TestJobSurvivesServerKill9(t *testing.T) {
	s := startServer(t)
	markers := t.TempDir()
	s.applyYAML(survivorJob(markers))
	eventually(t, 60*time.Second, "three indexes started", func() bool {
		m, _ := filepath.Glob(filepath.Join(markers, "start.*"))
		return len(m) == 3
	})
	s.kill9()
	s.start()
	eventually(t, 60*time.Second, "three pods running after the restart", func() bool {
		return len(s.runningPods("survivor-")) == 3
	})
	release(t, filepath.Join(markers, "release"))
	s.waitCondition("job/survivor", "complete", 60*time.Second)
	s.expectJSONPath(t, "job/survivor", "{.status.succeeded}|{.status.failed}", "3|")
	for i := range 3 {
		m, _ := filepath.Glob(filepath.Join(markers, fmt.Sprintf("start.%d.*", i)))
		if len(m) != 1 {
			t.Errorf("index %d started %d times, want once: %v", i, len(m), m)
		}
	}
	for _, pod := range s.podsOf("survivor") {
		name, _, _ := strings.Cut(pod, ":")
		s.expectJSONPath(t, "pod/"+name, "{.status.phase}|{.status.containerStatuses[0].restartCount}|{.status.containerStatuses[0].state.terminated.exitCode}",
			"Succeeded|0|0")
	}
}

func waiterPod(name, markers, script string) string {
	return `apiVersion: v1
kind: Pod
metadata:
  name: ` + name + `
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: busybox
    command: ["sh", "-c", "echo before; touch /markers/started; until [ -f /markers/release ]; do sleep 0.05; done; ` + script + `"]
    volumeMounts:
    - name: markers
      mountPath: /markers
  volumes:
  - name: markers
    hostPath:
      path: ` + markers + `
`
}

// TestExitWhileServerDown: a container that ends while no server runs is
// reported with its own exit code after the restart, not as lost, and the
// lines it wrote meanwhile are in its log.
func TestExitWhileServerDown(t *testing.T) {
	s := startServer(t)
	markers := t.TempDir()
	s.applyYAML(waiterPod("three", markers, "echo written while down; exit 3"))
	waitFile(t, filepath.Join(markers, "started"))
	uid := s.jsonpath("pod/three", "{.metadata.uid}")
	s.kill9()
	release(t, filepath.Join(markers, "release"))
	// The container ends, and its shim records it, while no server runs.
	eventually(t, 60*time.Second, "the container's end recorded", func() bool {
		return strings.Contains(s.attemptState(uid, "main"), `"phase":"exited"`)
	})
	s.start()
	s.waitPhase("three", 60*time.Second, "Failed")
	s.expectJSONPath(t, "pod/three", "{.status.containerStatuses[0].state.terminated.exitCode}|{.status.containerStatuses[0].state.terminated.reason}|{.status.containerStatuses[0].restartCount}",
		"3|Error|0")
	if got := s.kubectl("logs", "three"); got != "before\nwritten while down\n" {
		t.Errorf("logs = %q, want the lines of before and during the outage", got)
	}
	started := 0
	for _, e := range s.eventLines("three") {
		if strings.HasPrefix(e, "Normal/Started/") {
			started++
		}
	}
	if started != 1 {
		t.Errorf("started %d times, want once: %v", started, s.eventLines("three"))
	}
}

// TestSIGTERMKeepsPods: SIGTERM stops the server but not its pods (the
// default --on-shutdown=keep); a new binary (an upgrade: another file)
// started on the data dir adopts the pod: still Running with the same
// container ID and start, exec enters it, and it ends as it would have.
func TestSIGTERMKeepsPods(t *testing.T) {
	s := startServer(t)
	markers := t.TempDir()
	s.applyYAML(waiterPod("kept", markers, "echo done"))
	waitFile(t, filepath.Join(markers, "started"))
	s.waitPhase("kept", 60*time.Second, "Running")
	uid := s.jsonpath("pod/kept", "{.metadata.uid}")
	before := s.jsonpath("pod/kept", "{.status.containerStatuses[0].containerID}|{.status.containerStatuses[0].state.running.startedAt}")
	s.sigterm(t)
	var pid int
	if _, err := fmt.Sscanf(strings.TrimPrefix(s.attemptState(uid, "main"), `{"phase":"running","pid":`), "%d", &pid); err != nil {
		t.Fatalf("no container pid in the shim's state: %v", err)
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("container process %d gone after SIGTERM of the server: %v", pid, err)
	}
	s.bin = filepath.Join(t.TempDir(), "batchlet-upgraded")
	if err := copyFile(binary, s.bin); err != nil {
		t.Fatal(err)
	}
	s.start()
	eventually(t, 60*time.Second, "kept adopted and Running", func() bool {
		return strings.Contains(s.log.String(), "adopted the containers of an earlier agent") &&
			s.jsonpath("pod/kept", "{.status.phase}") == "Running"
	})
	if got := s.jsonpath("pod/kept", "{.status.containerStatuses[0].containerID}|{.status.containerStatuses[0].state.running.startedAt}"); got != before {
		t.Errorf("adopted container = %s, want %s as before", got, before)
	}
	if out, err := s.kubectlErr("exec", "kept", "--", "sh", "-c", "ls /markers; hostname"); err != nil || out != "started\nkept\n" {
		t.Errorf("exec into the adopted container: %q (%v)", out, err)
	}
	release(t, filepath.Join(markers, "release"))
	s.waitPhase("kept", 60*time.Second, "Succeeded")
	s.expectJSONPath(t, "pod/kept", "{.status.containerStatuses[0].restartCount}|{.status.containerStatuses[0].state.terminated.exitCode}", "0|0")
	if got := s.kubectl("logs", "kept"); got != "before\ndone\n" {
		t.Errorf("logs = %q", got)
	}
}

// agentProc is a `batchlet agent` the test kills and restarts itself.
type agentProc struct {
	cmd *exec.Cmd
	log *lockedBuffer
}

func runAgent(t *testing.T, s *server, node, rootDir string) *agentProc {
	t.Helper()
	a := &agentProc{log: &lockedBuffer{}}
	a.cmd = exec.Command(binary, "agent", "--kubeconfig", s.kubeconfig, "--node-name", node,
		"--root-dir", rootDir, "--runtime", "process", "--log-level", "info")
	a.cmd.Stdout, a.cmd.Stderr = a.log, a.log
	if err := a.cmd.Start(); err != nil {
		t.Fatalf("start agent: %v", err)
	}
	t.Cleanup(func() {
		if a.cmd.ProcessState == nil {
			_ = a.cmd.Process.Kill()
			_ = a.cmd.Wait()
		}
		killShims(rootDir)
		if t.Failed() {
			t.Logf("agent log:\n%s", a.log.String())
		}
	})
	return a
}

// TestPodSurvivesAgentKill9: a pod on a `batchlet agent` node keeps running
// across a kill -9 of the agent; the agent restarted on the same root dir
// adopts it (same container, restartCount 0) and reports its exit code.
func TestPodSurvivesAgentKill9(t *testing.T) {
	s := startServer(t, "--no-agent")
	rootDir, markers := t.TempDir(), t.TempDir()
	a := runAgent(t, s, "worker-s", rootDir)
	s.applyYAML(waiterPod("onworker", markers, "echo bye; exit 5"))
	waitFile(t, filepath.Join(markers, "started"))
	s.waitPhase("onworker", 60*time.Second, "Running")
	before := s.jsonpath("pod/onworker", "{.spec.nodeName}|{.status.containerStatuses[0].containerID}|{.status.containerStatuses[0].state.running.startedAt}")
	_ = a.cmd.Process.Kill()
	_ = a.cmd.Wait()
	a2 := runAgent(t, s, "worker-s", rootDir)
	eventually(t, 60*time.Second, "the restarted agent adopts the pod", func() bool {
		return strings.Contains(a2.log.String(), "adopted the containers of an earlier agent")
	})
	if got := s.jsonpath("pod/onworker", "{.spec.nodeName}|{.status.containerStatuses[0].containerID}|{.status.containerStatuses[0].state.running.startedAt}"); got != before {
		t.Errorf("after the restart %s, want %s", got, before)
	}
	release(t, filepath.Join(markers, "release"))
	s.waitPhase("onworker", 60*time.Second, "Failed")
	s.expectJSONPath(t, "pod/onworker", "{.status.containerStatuses[0].state.terminated.exitCode}|{.status.containerStatuses[0].restartCount}", "5|0")
	if got := s.kubectl("logs", "onworker"); got != "before\nbye\n" {
		t.Errorf("logs = %q", got)
	}
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o755)
}
