package process

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestCgroupLimitsAndOOM(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("cpuset cpu io memory pids\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cg, err := newCgroupRootAt(root, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	none, err := cg.create("a", corev1.ResourceRequirements{})
	if err != nil || none != nil {
		t.Fatalf("no limits: want no cgroup, got %v %v", none, err)
	}
	c, err := cg.create("b", corev1.ResourceRequirements{Limits: corev1.ResourceList{
		corev1.ResourceMemory: resource.MustParse("64Mi"), corev1.ResourceCPU: resource.MustParse("500m")}})
	if err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(c.dir, name))
		return string(b)
	}
	if got := read("memory.max"); got != "67108864" {
		t.Fatalf("memory.max %q", got)
	}
	if got := read("cpu.max"); got != "50000 100000" {
		t.Fatalf("cpu.max %q", got)
	}
	if c.oomKilled() {
		t.Fatal("no memory.events yet: not OOM-killed")
	}
	if err := os.WriteFile(filepath.Join(c.dir, "memory.events"), []byte("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !c.oomKilled() {
		t.Fatal("oom_kill 1: want OOM-killed")
	}
}

func TestNoCgroupV2(t *testing.T) {
	if _, err := newCgroupRootAt(t.TempDir(), slog.New(slog.DiscardHandler)); err == nil {
		t.Fatal("want an error without cgroup.controllers")
	}
}
