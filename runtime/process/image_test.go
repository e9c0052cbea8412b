package process

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/batchlet/batchlet/runtime"
	"github.com/batchlet/batchlet/runtime/image"
	"github.com/batchlet/batchlet/runtime/image/imagetest"
)

// newImageRuntime is a runtime that runs every pod from its image, with a
// store of its own; skipped where containers cannot have namespaces.
func newImageRuntime(t *testing.T, rootfs string) (*Runtime, *events) {
	t.Helper()
	return newImageRuntimeShims(t, rootfs, false)
}

// newImageRuntimeShims is newImageRuntime, whose containers run without
// shims when noShims (as under batchlet run).
func newImageRuntimeShims(t *testing.T, rootfs string, noShims bool) (*Runtime, *events) {
	t.Helper()
	if err := probeNamespaces(selfExe); err != nil {
		t.Skipf("the image runtime needs root and namespaces: %v", err)
	}
	store, err := image.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	puller, err := image.NewPuller(image.PullerConfig{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	ev := &events{}
	r, err := New(withTestShims(Config{RootDir: t.TempDir(), Events: ev.record, Logger: slog.New(slog.DiscardHandler),
		Images: puller, ImagesByDefault: true, ImageRootfs: rootfs, NoShims: noShims}))
	if err != nil {
		t.Fatal(err)
	}
	return r, ev
}

// appImage is busybox plus /hello, an entrypoint script that shows what
// the container sees.
func appImage(t *testing.T) v1.Image {
	script := `#!/bin/sh
[[ "$1" == "" ]] && set -- default
echo "args: $*"
cat /hello
echo "greeting: $GREETING"
echo "from image: $IMAGE_ONLY"
echo "pwd: $(pwd)"
echo "uid: $(id -u) gid: $(id -g) groups: $(id -G)"
echo "hostname: $(hostname)"
echo "pid: $$"
grep -c . /etc/hosts >/dev/null && echo "hosts: ok"
[ -c /dev/null ] && echo "dev: ok"
[ -e /run/batchlet ] || echo "host: hidden"
`
	return imagetest.Image(t, v1.Config{
		Entrypoint: []string{"/entrypoint.sh"}, Cmd: []string{"from-cmd"},
		Env: []string{"GREETING=image", "IMAGE_ONLY=yes"}, WorkingDir: "/work", User: "app",
	}, imagetest.BusyboxLayer(t), imagetest.Layer(t,
		imagetest.File{Name: "hello", Content: "hello from the image\n"},
		imagetest.File{Name: "entrypoint.sh", Content: script, Mode: 0o755}))
}

func runToEnd(t *testing.T, r *Runtime, p *corev1.Pod) runtime.PodStatus {
	t.Helper()
	if err := r.StartPod(context.Background(), p, fakeResolver{}); err != nil {
		t.Fatal(err)
	}
	return waitStatus(t, r, p.UID, "done", func(s runtime.PodStatus) bool { return s.Done })
}

func TestImageEntrypointCmdEnvUser(t *testing.T) {
	variants := []struct {
		name, rootfs string
		noShims      bool
	}{{"overlay", "overlay", false}, {"copy", "copy", false}, {"noshims", "overlay", true}}
	for _, v := range variants {
		rootfs := v.name
		t.Run(v.name, func(t *testing.T) {
			r, ev := newImageRuntimeShims(t, v.rootfs, v.noShims)
			reg := imagetest.Registry(t)
			ref := reg + "/test/app:1"
			imagetest.Push(t, ref, appImage(t))

			cases := []struct {
				name string
				c    corev1.Container
				want []string
			}{
				{"image entrypoint and cmd", corev1.Container{},
					[]string{"args: from-cmd", "hello from the image", "greeting: image", "from image: yes", "pwd: /work",
						"uid: 1000 gid: 1000 groups: 1000 2000", "hostname: p-" + rootfs + "-0", "pid: 1", "hosts: ok", "dev: ok", "host: hidden"}},
				{"args replace cmd, env overrides", corev1.Container{Args: []string{"a", "$(GREETING)"},
					Env: []corev1.EnvVar{{Name: "GREETING", Value: "pod"}}, WorkingDir: "/elsewhere"},
					[]string{"args: a pod", "greeting: pod", "pwd: /elsewhere"}},
				{"command replaces entrypoint and drops cmd", corev1.Container{Command: []string{"sh", "-c", `echo "cmd: $0 $*"; id -u`}},
					[]string{"cmd: sh ", "1000"}},
				{"runAsUser overrides the image user", corev1.Container{Command: []string{"id", "-u"},
					SecurityContext: &corev1.SecurityContext{RunAsUser: ptrInt64(0)}}, []string{"0"}},
				// The container init isolates image containers as host ones:
				// containerd's default capabilities even for root, no_new_privs
				// from allowPrivilegeEscalation, runc's /proc masks.
				{"root keeps only the default capabilities, /proc masked", corev1.Container{Command: []string{"sh", "-c",
					`grep -E '^(CapEff|NoNewPrivs)' /proc/self/status; [ -s /proc/kcore ] || echo kcore: masked
touch /proc/sysrq-trigger 2>/dev/null || echo sysrq: read-only`},
					SecurityContext: &corev1.SecurityContext{RunAsUser: ptrInt64(0), AllowPrivilegeEscalation: ptrBool(false)}},
					[]string{"CapEff:\t00000000a80425fb", "NoNewPrivs:\t1", "kcore: masked", "sysrq: read-only"}},
			}
			for i, tc := range cases {
				uid := rootfs + "-" + string(rune('0'+i))
				c := tc.c
				c.Name, c.Image = "main", ref
				st := runToEnd(t, r, testPod(uid, corev1.RestartPolicyNever, c))
				term := st.ContainerStatuses[0].State.Terminated
				log := logs(t, r, types.UID(uid), "main", runtime.LogOptions{})
				if term == nil || term.ExitCode != 0 {
					t.Fatalf("%s: want exit 0, got %+v; log:\n%s", tc.name, st.ContainerStatuses[0].State, log)
				}
				for _, w := range tc.want {
					if !strings.Contains(log, w) {
						t.Errorf("%s: log lacks %q:\n%s", tc.name, w, log)
					}
				}
				if id := st.ContainerStatuses[0].ImageID; !strings.HasPrefix(id, reg+"/test/app@sha256:") {
					t.Errorf("imageID %q", st.ContainerStatuses[0].ImageID)
				}
			}
			if !ev.has(`Normal Pulling Pulling image "`+ref+`"`) || !ev.has(`Normal Pulled Successfully pulled image "`+ref+`" in `) ||
				!ev.has(`Normal Pulled Container image "`+ref+`" already present on machine`) {
				t.Fatalf("pull events missing: %v", ev.list)
			}
		})
	}
}

func ptrInt64(v int64) *int64 { return &v }

func TestImageCommandNotFound(t *testing.T) {
	r, _ := newImageRuntime(t, "")
	reg := imagetest.Registry(t)
	imagetest.Push(t, reg+"/app:1", appImage(t))
	st := runToEnd(t, r, testPod("nf", corev1.RestartPolicyNever, corev1.Container{Name: "main", Image: reg + "/app:1", Command: []string{"nope"}}))
	term := st.ContainerStatuses[0].State.Terminated
	if term == nil || term.Reason != "StartError" || term.ExitCode != 128 || !strings.Contains(term.Message, `exec: "nope": executable file not found in $PATH`) {
		t.Fatalf("want StartError for a missing command, got %+v", st.ContainerStatuses[0].State)
	}
}

func TestImagePullErrorsShowInStatus(t *testing.T) {
	r, ev := newImageRuntime(t, "")
	reg := imagetest.Registry(t)
	p := testPod("missing", corev1.RestartPolicyNever, corev1.Container{Name: "main", Image: reg + "/nope:1"})
	if err := r.StartPod(context.Background(), p, fakeResolver{}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, r, "missing", "ImagePullBackOff", func(s runtime.PodStatus) bool {
		w := s.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == "ImagePullBackOff" && strings.HasPrefix(w.Message, `Back-off pulling image "`+reg+`/nope:1": ErrImagePull: `)
	})
	if !ev.has("Warning Failed Error: ErrImagePull") || !ev.has(`Normal BackOff Back-off pulling image "`+reg+`/nope:1"`) {
		t.Fatalf("events: %v", ev.list)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.KillPod(ctx, "missing", time.Second); err != nil {
		t.Fatal(err)
	}

	never := testPod("never", corev1.RestartPolicyNever, corev1.Container{Name: "main", Image: reg + "/nope:1", ImagePullPolicy: corev1.PullNever})
	if err := r.StartPod(context.Background(), never, fakeResolver{}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, r, "never", "ErrImageNeverPull", func(s runtime.PodStatus) bool {
		w := s.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == "ErrImageNeverPull" && w.Message == `Container image "`+reg+`/nope:1" is not present with pull policy of Never`
	})
	if err := r.KillPod(ctx, "never", time.Second); err != nil {
		t.Fatal(err)
	}
}

// TestImageSIGTERMGrace: an image's PID 1 handles SIGTERM itself; one that
// ignores it is killed only once the grace period is over.
func TestImageSIGTERMGrace(t *testing.T) {
	r, _ := newImageRuntime(t, "")
	reg := imagetest.Registry(t)
	imagetest.Push(t, reg+"/app:1", appImage(t))
	trap := testPod("trap", corev1.RestartPolicyNever, corev1.Container{Name: "main", Image: reg + "/app:1",
		Command: []string{"sh", "-c", `trap 'echo term; exit 3' TERM; echo ready; while true; do sleep 0.05; done`}})
	ignore := testPod("ignore", corev1.RestartPolicyNever, corev1.Container{Name: "main", Image: reg + "/app:1",
		Command: []string{"sleep", "600"}})
	for _, p := range []*corev1.Pod{trap, ignore} {
		if err := r.StartPod(context.Background(), p, fakeResolver{}); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, r, p.UID, "running", func(s runtime.PodStatus) bool { return s.ContainerStatuses[0].State.Running != nil })
	}
	for !strings.Contains(logs(t, r, "trap", "main", runtime.LogOptions{}), "ready") {
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := r.KillPod(ctx, "trap", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if st, _ := r.PodStatus("trap"); st.ContainerStatuses[0].State.Terminated.ExitCode != 3 {
		t.Fatalf("trap: %+v", st.ContainerStatuses[0].State)
	}
	start := time.Now()
	if err := r.KillPod(ctx, "ignore", 500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	st, _ := r.PodStatus("ignore")
	if term := st.ContainerStatuses[0].State.Terminated; term == nil || term.ExitCode != 137 {
		t.Fatalf("a PID 1 without a SIGTERM handler: want SIGKILL after the grace (137), got %+v", st.ContainerStatuses[0].State)
	}
	if time.Since(start) < 500*time.Millisecond {
		t.Fatal("killed before the grace period ended")
	}
}

// TestRuntimeSelection: with the process runtime as the default, a pod asks
// for its image with runtimeClassName or the annotation; others run on the
// host as before.
func TestRuntimeSelection(t *testing.T) {
	r, _ := newImageRuntime(t, "")
	r.cfg.ImagesByDefault = false
	reg := imagetest.Registry(t)
	imagetest.Push(t, reg+"/app:1", appImage(t))
	check := func(uid string, p *corev1.Pod, want string) {
		t.Helper()
		runToEnd(t, r, p)
		if got := logs(t, r, types.UID(uid), "main", runtime.LogOptions{}); !strings.Contains(got, want) {
			t.Fatalf("%s: log %q lacks %q", uid, got, want)
		}
	}
	cat := corev1.Container{Name: "main", Image: reg + "/app:1", Command: []string{"sh", "-c", "cat /hello 2>/dev/null || echo on the host"}}
	byClass := testPod("class", corev1.RestartPolicyNever, cat)
	class := RuntimeImage
	byClass.Spec.RuntimeClassName = &class
	check("class", byClass, "hello from the image")
	byAnnotation := testPod("annotation", corev1.RestartPolicyNever, cat)
	byAnnotation.Annotations[RuntimeAnnotation] = RuntimeImage
	check("annotation", byAnnotation, "hello from the image")
	check("default", testPod("default", corev1.RestartPolicyNever, cat), "on the host")
}
