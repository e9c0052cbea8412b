package process

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/batchlet/batchlet/runtime"
)

// A restarted runtime finds its pods by their shard: the hash must not
// change between versions.
func TestShardIndexStable(t *testing.T) {
	for uid, want := range map[types.UID]int{"7c9e6679-7425-40de-944b-e07fc1f90ae7": 147, "a": 300} {
		if got := shardIndex(uid); got != want {
			t.Errorf("shardIndex(%q) = %d, want %d", uid, got, want)
		}
	}
	for name, want := range map[string]bool{"000": true, "09f": true, "7ff": true, "7FF": false, "00": false, "0g0": false, ".spare": false} {
		if got := isShardName(name); got != want {
			t.Errorf("isShardName(%q) = %v", name, got)
		}
	}
}

// A new pod's directory is RootDir/<shard>/<uid>, made with its shard.
func TestPodDirInShard(t *testing.T) {
	r, _ := newTestRuntime(t, nil)
	if err := r.StartPod(context.Background(), testPod("sharded", corev1.RestartPolicyNever, shC("main", "echo hi")), fakeResolver{}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, r, "sharded", "done", func(s runtime.PodStatus) bool { return s.Done })
	want := filepath.Join(r.cfg.RootDir, shardName(shardIndex("sharded")), "sharded")
	if got := r.podDir("sharded"); got != want {
		t.Fatalf("podDir = %s, want %s", got, want)
	}
	if _, err := os.Stat(filepath.Join(want, "main.0.log")); err != nil {
		t.Fatalf("the log is not in the sharded pod dir: %v", err)
	}
	entries, err := os.ReadDir(r.cfg.RootDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !isShardName(e.Name()) && !strings.HasPrefix(e.Name(), ".") {
			t.Errorf("%s in the RootDir: pods belong in shards", e.Name())
		}
	}
	r.RemovePod("sharded")
}

// Pods whose directories an earlier version made directly in the RootDir
// keep them across a restart onto this version: their running containers
// are adopted, their logs served, the deleted ones reaped; new pods go to
// shards beside them.
func TestLegacyPodDirsAfterRestart(t *testing.T) {
	r, _ := newTestRuntime(t, nil)
	// The first runtime lays these pods out as earlier versions did.
	r.legacyPods = map[types.UID]bool{"old-running": true, "old-done": true, "old-deleted": true}
	pods := map[types.UID]*corev1.Pod{
		"old-running": testPod("old-running", corev1.RestartPolicyNever, shC("main", "echo up; sleep 60")),
		"old-done":    testPod("old-done", corev1.RestartPolicyNever, shC("main", "echo done")),
		"old-deleted": testPod("old-deleted", corev1.RestartPolicyNever, shC("main", "sleep 60")),
	}
	for _, p := range pods {
		if err := r.StartPod(context.Background(), p, fakeResolver{}); err != nil {
			t.Fatal(err)
		}
	}
	running := waitStatus(t, r, "old-running", "running", func(s runtime.PodStatus) bool { return s.ContainerStatuses[0].State.Running != nil })
	waitStatus(t, r, "old-deleted", "running", func(s runtime.PodStatus) bool { return s.ContainerStatuses[0].State.Running != nil })
	waitStatus(t, r, "old-done", "done", func(s runtime.PodStatus) bool { return s.Done })
	for uid := range pods {
		if _, err := os.Stat(filepath.Join(r.cfg.RootDir, string(uid))); err != nil {
			t.Fatalf("%s: no directory in the earlier layout: %v", uid, err)
		}
	}

	r2 := restartedRuntime(t, r)
	if got, want := r2.podDir("old-running"), filepath.Join(r.cfg.RootDir, "old-running"); got != want {
		t.Fatalf("restarted podDir = %s, want %s", got, want)
	}
	apiPod := pods["old-running"].DeepCopy()
	apiPod.Status.ContainerStatuses = running.ContainerStatuses
	if ad, err := r2.Adopt(context.Background(), apiPod, fakeResolver{}); err != nil || !ad.Adopted {
		t.Fatalf("Adopt = %+v, %v; want adopted", ad, err)
	}
	if got := logs(t, r2, "old-done", "main", runtime.LogOptions{}); got != "done\n" {
		t.Errorf("log of a pod in the earlier layout %q", got)
	}
	r2.ReapOrphans(map[types.UID]bool{"old-running": true, "old-done": false})
	waitStatus(t, r, "old-deleted", "killed", func(s runtime.PodStatus) bool { return s.Done })
	deleted := filepath.Join(r.cfg.RootDir, "old-deleted")
	deadline := time.Now().Add(10 * time.Second)
	for _, err := os.Stat(deleted); err == nil && time.Now().Before(deadline); _, err = os.Stat(deleted) {
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := os.Stat(deleted); err == nil {
		t.Error("the deleted pod's directory in the earlier layout is still there")
	}

	if err := r2.StartPod(context.Background(), testPod("new", corev1.RestartPolicyNever, shC("main", "echo new")), fakeResolver{}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, r2, "new", "done", func(s runtime.PodStatus) bool { return s.Done })
	if got := logs(t, r2, "new", "main", runtime.LogOptions{}); got != "new\n" {
		t.Errorf("log of a new pod %q", got)
	}
	if _, err := os.Stat(filepath.Join(r.cfg.RootDir, shardName(shardIndex("new")), "new")); err != nil {
		t.Errorf("the new pod's directory is not in its shard: %v", err)
	}
	r2.RemovePod("old-running")
	r2.RemovePod("new")
}
