package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/batchlet/batchlet/runtime/image/imagetest"
)

// exitImage's entrypoint uses ash syntax the host's dash lacks
// (${var:offset:length}, [[ ]]) and exits with the code its args name.
func exitImage(t *testing.T) v1.Image {
	script := `#!/bin/sh
word="$1"
[[ "${word:0:4}" == "exit" ]] || { echo "not an exit: $word"; exit 64; }
echo "leaving with ${word:4}"
exit "${word:4}"
`
	return imagetest.Image(t, v1.Config{Entrypoint: []string{"/exit.sh"}, Cmd: []string{"exit0"}},
		imagetest.BusyboxLayer(t), imagetest.Layer(t, imagetest.File{Name: "exit.sh", Content: script, Mode: 0o755}))
}

// markerPod runs script (ash) from busybox with a hostPath volume at
// /markers and the given grace period.
func markerPod(name, image, markers, grace, restartPolicy, script string) string {
	return `apiVersion: v1
kind: Pod
metadata:
  name: ` + name + `
spec:
  restartPolicy: ` + restartPolicy + `
  terminationGracePeriodSeconds: ` + grace + `
  containers:
  - name: main
    image: ` + image + `
    command: ["sh", "-c", ` + strings.ReplaceAll(`"`+script+`"`, "\n", "; ") + `]
    volumeMounts:
    - name: markers
      mountPath: /markers
  volumes:
  - name: markers
    hostPath:
      path: ` + markers + `
`
}

// TestImageContainerLifecycle: image containers stop, restart, fail and
// exchange files as on a cluster (server --runtime=image).
func TestImageContainerLifecycle(t *testing.T) {
	reg := imagetest.Registry(t)
	busybox := reg + "/e2e/busybox:1"
	imagetest.Push(t, busybox, imagetest.Image(t, v1.Config{Cmd: []string{"sh"}}, imagetest.BusyboxLayer(t)))
	exits := reg + "/e2e/exits:1"
	imagetest.Push(t, exits, exitImage(t))
	s := startServer(t, "--runtime=image")
	probeImageRuntime(t, s)
	sub := func(name string, fn func(t *testing.T)) { runSub(t, s, name, fn) }

	sub("Job without command: the entrypoint's exit code", func(t *testing.T) {
		s.apply(`apiVersion: batch/v1
kind: Job
metadata:
  name: exits
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: ` + exits + `
        args: ["exit3"]
`)
		s.waitCondition("job/exits", "failed", 60*time.Second)
		term := "{.items[0].status.containerStatuses[0].state.terminated"
		if got := s.kubectl("get", "pods", "-l", "job-name=exits", "-o", "jsonpath="+term+".exitCode}|"+term+".reason}"); got != "3|Error" {
			t.Errorf("terminated = %q, want 3|Error", got)
		}
		if got := s.kubectl("logs", "job/exits"); got != "leaving with 3\n" {
			t.Errorf("logs = %q", got)
		}
	})

	sub("SIGTERM trap runs its course within the grace period", func(t *testing.T) {
		markers := t.TempDir()
		// The trap outlasts anything but the grace period: the marker is
		// written only if the runtime waits for it.
		s.apply(markerPod("trapper", busybox, markers, "30", "Never", `trap 'sleep 3; echo trapped > /markers/done; exit 0' TERM
touch /markers/ready
while true; do sleep 0.1; done`))
		waitFile(t, filepath.Join(markers, "ready"))
		s.kubectl("delete", "pod", "trapper", "--grace-period=30", "--wait=true", "--timeout=60s")
		if b, err := os.ReadFile(filepath.Join(markers, "done")); err != nil || string(b) != "trapped\n" {
			t.Fatalf("marker = %q, %v: the trap did not finish before the container was killed", b, err)
		}
	})

	sub("restart count and last state", func(t *testing.T) {
		markers := t.TempDir()
		s.apply(markerPod("restarter", busybox, markers, "1", "OnFailure", `n=$(cat /markers/count 2>/dev/null || echo 0)
n=$((n+1)); echo $n > /markers/count
[[ $n -ge 2 ]] || exit 7`))
		s.waitPhase("restarter", 90*time.Second, "Succeeded")
		st := "{.status.containerStatuses[0]"
		s.expectJSONPath(t, "pod/restarter", st+".restartCount}|"+st+".lastState.terminated.exitCode}|"+st+".state.terminated.reason}",
			"1|7|Completed")
	})

	sub("kubectl cp in and out", func(t *testing.T) {
		s.apply(imagePodCommand("copier", busybox, `trap 'exit 0' TERM; while true; do sleep 0.1; done`))
		s.waitPhase("copier", 60*time.Second, "Running")
		dir := t.TempDir()
		in := filepath.Join(dir, "in.txt")
		if err := os.WriteFile(in, []byte("from the host\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		s.kubectl("cp", in, "copier:/tmp/in.txt")
		if got := s.kubectl("exec", "copier", "--", "cat", "/tmp/in.txt"); got != "from the host\n" {
			t.Fatalf("copied in: %q", got)
		}
		s.kubectl("exec", "copier", "--", "sh", "-c", "echo from the image > /tmp/out.txt")
		out := filepath.Join(dir, "out.txt")
		s.kubectl("cp", "copier:/tmp/out.txt", out)
		if b, err := os.ReadFile(out); err != nil || string(b) != "from the image\n" {
			t.Fatalf("copied out: %q, %v", b, err)
		}
	})

	sub("OOMKilled", func(t *testing.T) {
		if b, err := os.ReadFile("/sys/fs/cgroup/cgroup.controllers"); err != nil || !strings.Contains(string(b), "memory") {
			t.Skip("memory limits need cgroup v2 with the memory controller at /sys/fs/cgroup; this host has none")
		}
		s.apply(`apiVersion: v1
kind: Pod
metadata:
  name: hog
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: ` + busybox + `
    command: ["sh", "-c", "x=$(head -c 200000000 /dev/zero | tr '\\0' a); echo survived"]
    resources:
      limits:
        memory: 32Mi
`)
		s.waitPhase("hog", 60*time.Second, "Failed")
		st := "{.status.containerStatuses[0].state.terminated"
		s.expectJSONPath(t, "pod/hog", st+".reason}|"+st+".exitCode}", "OOMKilled|137")
	})
}

// imagePodCommand is a pod running script with the image's sh.
func imagePodCommand(name, image, script string) string {
	return `apiVersion: v1
kind: Pod
metadata:
  name: ` + name + `
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: ` + image + `
    command: ["sh", "-c", "` + script + `"]
`
}

// TestImageContainerSurvivesServerKill9: an image container runs under a
// shim as a host command does, so it outlives a kill -9 of the server; the
// restarted server adopts it (same attempt, exec in the image still works)
// and reports its own exit code.
func TestImageContainerSurvivesServerKill9(t *testing.T) {
	reg := imagetest.Registry(t)
	ref := reg + "/e2e/app:1"
	imagetest.Push(t, ref, e2eImage(t, "survivor"))
	s := startServer(t, "--runtime=image")
	probeImageRuntime(t, s)
	markers := t.TempDir()
	s.apply(markerPod("survivor", ref, markers, "30", "Never",
		`echo start >> /markers/starts; touch /markers/started; echo before; until [[ -f /markers/release ]]; do sleep 0.05; done; echo after; exit 5`))
	waitFile(t, filepath.Join(markers, "started"))
	s.kill9()
	s.start()
	eventually(t, 60*time.Second, "the restarted server adopts the container", func() bool {
		got := s.jsonpath("pod/survivor", "{.status.phase}|{.status.containerStatuses[0].ready}")
		return got == "Running|true" && strings.Contains(s.log.String(), `fate=running`)
	})
	if got := s.kubectl("exec", "survivor", "--", "cat", "/only-in-image"); got != "a file of the image\n" {
		t.Fatalf("exec after the restart = %q", got)
	}
	release(t, filepath.Join(markers, "release"))
	s.waitPhase("survivor", 60*time.Second, "Failed")
	st := "{.status.containerStatuses[0]"
	s.expectJSONPath(t, "pod/survivor", st+".state.terminated.exitCode}|"+st+".restartCount}", "5|0")
	if id := s.jsonpath("pod/survivor", st+".imageID}"); !strings.HasPrefix(id, reg+"/e2e/app@sha256:") {
		t.Errorf("imageID = %q", id)
	}
	if got := s.kubectl("logs", "survivor"); got != "before\nafter\n" {
		t.Errorf("logs = %q", got)
	}
	if b, _ := os.ReadFile(filepath.Join(markers, "starts")); string(b) != "start\n" {
		t.Errorf("starts = %q, want one start", b)
	}
}
