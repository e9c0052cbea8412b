package process

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/batchlet/batchlet/runtime"
)

// TestContainerEnvIsThePods: the variables a container init gets for its
// Go runtime's start (shim.InitStart) never reach the command, and a pod's
// own value of one of them is what the command sees, whichever starts the
// init.
func TestContainerEnvIsThePods(t *testing.T) {
	modes := []struct {
		name string
		cfg  Config
	}{
		{"shim", Config{}},
		{"supervisor", Config{ShimSupervisor: true}},
		{"no shims", Config{NoShims: true}},
	}
	envs := []struct {
		name string
		env  []corev1.EnvVar
	}{
		{"pod sets none", []corev1.EnvVar{{Name: "A", Value: "1"}}},
		{"pod sets GOMAXPROCS", []corev1.EnvVar{{Name: "GOMAXPROCS", Value: "7"}, {Name: "A", Value: "1"}}},
		{"pod sets it empty", []corev1.EnvVar{{Name: "GOMAXPROCS", Value: ""}}},
	}
	for _, m := range modes {
		for i, e := range envs {
			t.Run(m.name+"/"+e.name, func(t *testing.T) {
				cfg := m.cfg
				cfg.RootDir, cfg.Logger = t.TempDir(), slog.New(slog.DiscardHandler)
				r, err := New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				uid := "env" + string(rune('a'+i))
				c := corev1.Container{Name: "main", Image: "x", Command: []string{"/usr/bin/env"}, Env: e.env}
				if err := r.StartPod(context.Background(), testPod(uid, corev1.RestartPolicyNever, c), fakeResolver{}); err != nil {
					t.Fatal(err)
				}
				defer r.RemovePod(types.UID(uid))
				waitStatus(t, r, types.UID(uid), "done", func(s runtime.PodStatus) bool { return s.Done })
				got := strings.Split(strings.TrimSuffix(logs(t, r, types.UID(uid), "main", runtime.LogOptions{}), "\n"), "\n")
				// What the runtime adds to every container's (as the kubelet
				// and the image config do), then the pod's.
				want := []string{"HOME=/root", "HOSTNAME=p-" + uid, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
				for _, v := range e.env {
					want = append(want, v.Name+"="+v.Value)
				}
				slices.Sort(got)
				slices.Sort(want)
				if !slices.Equal(got, want) {
					t.Fatalf("environment %q, want %q", got, want)
				}
			})
		}
	}
}
