package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/batchlet/batchlet/runtime/image/imagetest"
)

// e2eImage is busybox plus a file and an entrypoint that exist only in the
// image; the entrypoint uses ash syntax the host's dash lacks.
func e2eImage(t *testing.T, greeting string) v1.Image {
	script := `#!/bin/sh
[[ -e /only-in-image ]] && cat /only-in-image
echo "$GREETING $*"
`
	return imagetest.Image(t, v1.Config{Entrypoint: []string{"/entrypoint.sh"}, Cmd: []string{"from", "cmd"},
		Env: []string{"GREETING=" + greeting}},
		imagetest.BusyboxLayer(t), imagetest.Layer(t,
			imagetest.File{Name: "only-in-image", Content: "a file of the image\n"},
			imagetest.File{Name: "entrypoint.sh", Content: script, Mode: 0o755}))
}

func imageJob(name, image, policy string) string {
	return `apiVersion: batch/v1
kind: Job
metadata:
  name: ` + name + `
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: ` + image + `
        imagePullPolicy: ` + policy + `
`
}

func imagePod(name, image, policy string) string {
	return `apiVersion: v1
kind: Pod
metadata:
  name: ` + name + `
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: ` + image + `
    imagePullPolicy: ` + policy + `
`
}

// TestImageRuntime: `batchlet server --runtime=image` runs Jobs whose
// containers rely on their image, pulled from a loopback registry or
// loaded offline, and reports pull failures as the kubelet does.
func TestImageRuntime(t *testing.T) {
	reg := imagetest.Registry(t)
	pulled := reg + "/e2e/app:1"
	imagetest.Push(t, pulled, e2eImage(t, "pulled"))
	s := startServer(t, "--runtime=image")
	probeImageRuntime(t, s)

	runSub(t, s, "pulled image, no command", func(t *testing.T) {
		s.apply(imageJob("pulled", pulled, "IfNotPresent"))
		s.kubectl("wait", "--for=condition=complete", "job/pulled", "--timeout=60s")
		if got := s.kubectl("logs", "job/pulled"); got != "a file of the image\npulled from cmd\n" {
			t.Fatalf("logs = %q", got)
		}
		describe := s.kubectl("describe", "pods", "-l", "job-name=pulled")
		for _, want := range []string{`Pulling image "` + pulled + `"`, `Successfully pulled image "` + pulled + `" in `, "Image size: "} {
			if !strings.Contains(describe, want) {
				t.Errorf("describe lacks %q:\n%s", want, describe)
			}
		}
		if id := s.jsonpath("pods", "{.items[0].status.containerStatuses[0].imageID}"); !strings.HasPrefix(id, reg+"/e2e/app@sha256:") {
			t.Errorf("imageID = %q", id)
		}
	})

	runSub(t, s, "images load, then pull policy Never", func(t *testing.T) {
		archive := filepath.Join(t.TempDir(), "offline.tar")
		imagetest.Save(t, archive, "example.com/offline/app:2", e2eImage(t, "loaded"))
		out, err := exec.Command(binary, "images", "load", "--data-dir", s.dataDir, archive).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "Loaded image: example.com/offline/app:2") {
			t.Fatalf("images load: %v\n%s", err, out)
		}
		list, err := exec.Command(binary, "images", "list", "--data-dir", s.dataDir).CombinedOutput()
		if err != nil || !strings.Contains(string(list), "example.com/offline/app:2") || !strings.Contains(string(list), reg+"/e2e/app:1") {
			t.Fatalf("images list: %v\n%s", err, list)
		}
		s.apply(imageJob("loaded", "example.com/offline/app:2", "Never"))
		s.kubectl("wait", "--for=condition=complete", "job/loaded", "--timeout=60s")
		if got := s.kubectl("logs", "job/loaded"); got != "a file of the image\nloaded from cmd\n" {
			t.Fatalf("logs = %q", got)
		}
	})

	runSub(t, s, "missing image: ErrImagePull then ImagePullBackOff", func(t *testing.T) {
		missing := reg + "/e2e/missing:1"
		s.apply(imagePod("missing", missing, "IfNotPresent"))
		waiting := "{.status.containerStatuses[0].state.waiting"
		var reason, msg string
		eventually(t, 60*time.Second, "ImagePullBackOff", func() bool {
			reason = s.jsonpath("pod/missing", waiting+".reason}")
			return reason == "ImagePullBackOff"
		})
		msg = s.jsonpath("pod/missing", waiting+".message}")
		if want := `Back-off pulling image "` + missing + `": ErrImagePull: `; !strings.HasPrefix(msg, want+`failed to pull and unpack image "`+missing+`": `) || !strings.Contains(msg, "UNKNOWN") {
			t.Errorf("waiting message = %q, want %q and the registry's error", msg, want)
		}
		events := s.jsonpath("events", `{range .items[?(@.involvedObject.name=="missing")]}{.type}/{.reason}/{.message};{end}`)
		for _, want := range []string{"Normal/Pulling/Pulling image \"" + missing + "\"", "Warning/Failed/Failed to pull image \"" + missing + "\": ",
			"Warning/Failed/Error: ErrImagePull", "Normal/BackOff/Back-off pulling image \"" + missing + "\"", "Warning/Failed/Error: ImagePullBackOff"} {
			if !strings.Contains(events, want) {
				t.Errorf("events lack %q: %s", want, events)
			}
		}
		if phase := s.jsonpath("pod/missing", "{.status.phase}"); phase != "Pending" {
			t.Errorf("phase = %q, want Pending", phase)
		}
	})

	runSub(t, s, "pull policy Never without the image", func(t *testing.T) {
		s.apply(imagePod("never", "example.com/not/loaded:1", "Never"))
		waiting := "{.status.containerStatuses[0].state.waiting"
		eventually(t, 60*time.Second, "ErrImageNeverPull", func() bool {
			return s.jsonpath("pod/never", waiting+".reason}") == "ErrImageNeverPull"
		})
		if got, want := s.jsonpath("pod/never", waiting+".message}"), `Container image "example.com/not/loaded:1" is not present with pull policy of Never`; got != want {
			t.Errorf("message = %q, want %q", got, want)
		}
	})

	runSub(t, s, "a pod can ask for the process runtime", func(t *testing.T) {
		s.apply(`apiVersion: v1
kind: Pod
metadata:
  name: onhost
  annotations:
    batchlet.dev/runtime: process
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: ` + pulled + `
    command: ["sh", "-c", "test -e /only-in-image || echo on the host"]
`)
		if got := s.waitPhase("onhost", 60*time.Second, "Succeeded", "Failed"); got != "Succeeded" {
			t.Fatalf("phase = %q", got)
		}
		if got := s.kubectl("logs", "onhost"); got != "on the host\n" {
			t.Fatalf("logs = %q", got)
		}
	})
}

// probeImageRuntime skips when the server cannot give containers
// namespaces (not root).
func probeImageRuntime(t *testing.T, s *server) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the image runtime needs root")
	}
	if _, err := os.Stat(imagetest.BusyboxPath); err != nil {
		t.Skipf("needs %s (apt-get install busybox-static)", imagetest.BusyboxPath)
	}
	_ = s
}

// TestImageRuntimeExec: kubectl exec runs in the image's file system.
func TestImageRuntimeExec(t *testing.T) {
	reg := imagetest.Registry(t)
	ref := reg + "/e2e/app:1"
	imagetest.Push(t, ref, e2eImage(t, "exec"))
	s := startServer(t, "--runtime=image")
	probeImageRuntime(t, s)
	s.apply(`apiVersion: v1
kind: Pod
metadata:
  name: sleeper
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: ` + ref + `
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.1; done"]
`)
	s.waitPhase("sleeper", 60*time.Second, "Running")
	if got := s.kubectl("exec", "sleeper", "--", "cat", "/only-in-image"); got != "a file of the image\n" {
		t.Fatalf("exec cat = %q", got)
	}
	if got := strings.TrimSpace(s.kubectl("exec", "sleeper", "--", "sh", "-c", "echo $$; hostname")); got == "" || !strings.HasSuffix(got, "sleeper") {
		t.Fatalf("exec hostname = %q", got)
	}
	imageUserAndRunAsNonRoot(t, s, reg)
}

// imageUserAndRunAsNonRoot: with runAsNonRoot, an image whose user is
// numeric and not 0 runs as that user (kubectl exec too), one whose user
// is a name is refused with the kubelet's message, as it cannot be checked.
func imageUserAndRunAsNonRoot(t *testing.T, s *server, reg string) {
	numeric, named := reg+"/e2e/numeric:1", reg+"/e2e/named:1"
	imagetest.Push(t, numeric, imagetest.Image(t, v1.Config{User: "1000:1000", Cmd: []string{"sleep", "300"}}, imagetest.BusyboxLayer(t)))
	imagetest.Push(t, named, imagetest.Image(t, v1.Config{User: "app", Cmd: []string{"sleep", "300"}}, imagetest.BusyboxLayer(t)))
	pod := func(name, image string) string {
		return `apiVersion: v1
kind: Pod
metadata: {name: ` + name + `}
spec:
  terminationGracePeriodSeconds: 1
  securityContext: {runAsNonRoot: true}
  containers:
  - name: main
    image: ` + image + `
`
	}
	s.apply(pod("numeric", numeric))
	s.apply(pod("named", named))
	s.waitPhase("numeric", 60*time.Second, "Running")
	if got := s.kubectl("exec", "numeric", "--", "sh", "-c", "id -u; id -g; cat /proc/1/status | grep ^Uid"); got != "1000\n1000\nUid:\t1000\t1000\t1000\t1000\n" {
		t.Errorf("exec in the numeric-user image: %q", got)
	}
	waiting := "{.status.containerStatuses[0].state.waiting"
	s.kubectl("wait", "--for=jsonpath="+waiting+".reason}=CreateContainerConfigError", "pod/named", "--timeout=60s")
	const want = `container has runAsNonRoot and image has non-numeric user (app), cannot verify user is non-root (pod: "named_default(`
	if got := s.jsonpath("pod/named", waiting+".message}"); !strings.HasPrefix(got, want) || !strings.HasSuffix(got, `)", container: main)`) {
		t.Errorf("named image user: message %q, want %s<uid>)\", container: main)", got, want)
	}
}
