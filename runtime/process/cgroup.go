package process

import (
	"bufio"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

const cgroupMount = "/sys/fs/cgroup"

// cgroupRoot is batchlet's cgroup v2 subtree with memory and cpu enabled.
type cgroupRoot struct {
	dir string
	log *slog.Logger
}

func newCgroupRoot(log *slog.Logger) (*cgroupRoot, error) {
	return newCgroupRootAt(cgroupMount, log)
}

// newCgroupRootAt enables memory and cpu under mount/batchlet.
func newCgroupRootAt(cgroupMount string, log *slog.Logger) (*cgroupRoot, error) {
	ctrl, err := os.ReadFile(filepath.Join(cgroupMount, "cgroup.controllers"))
	if err != nil {
		return nil, fmt.Errorf("no cgroup v2 at %s: %w", cgroupMount, err)
	}
	have := strings.Fields(string(ctrl))
	if !contains(have, "memory") || !contains(have, "cpu") {
		return nil, fmt.Errorf("cgroup v2 controllers %v lack memory or cpu", have)
	}
	dir := filepath.Join(cgroupMount, "batchlet")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	for _, d := range []string{cgroupMount, dir} {
		if err := os.WriteFile(filepath.Join(d, "cgroup.subtree_control"), []byte("+memory +cpu"), 0o644); err != nil {
			return nil, fmt.Errorf("enable controllers in %s: %w", d, err)
		}
	}
	return &cgroupRoot{dir: dir, log: log}, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// containerCgroup is one container attempt's cgroup.
type containerCgroup struct{ dir string }

// create makes a cgroup with the container's limits, or returns nil when
// the container has none.
func (r *cgroupRoot) create(name string, res corev1.ResourceRequirements) (*containerCgroup, error) {
	if r == nil {
		return nil, nil
	}
	mem, hasMem := res.Limits[corev1.ResourceMemory]
	cpu, hasCPU := res.Limits[corev1.ResourceCPU]
	if !hasMem && !hasCPU {
		return nil, nil
	}
	dir := filepath.Join(r.dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create cgroup %s: %w", dir, err)
	}
	if hasMem {
		if err := os.WriteFile(filepath.Join(dir, "memory.max"), []byte(fmt.Sprint(mem.Value())), 0o644); err != nil {
			return nil, fmt.Errorf("set memory.max: %w", err)
		}
		_ = os.WriteFile(filepath.Join(dir, "memory.swap.max"), []byte("0"), 0o644)
	}
	if hasCPU {
		const period = 100000
		quota := max(cpu.MilliValue()*period/1000, 1000)
		if err := os.WriteFile(filepath.Join(dir, "cpu.max"), []byte(fmt.Sprintf("%d %d", quota, period)), 0o644); err != nil {
			return nil, fmt.Errorf("set cpu.max: %w", err)
		}
	}
	return &containerCgroup{dir: dir}, nil
}

// open returns the cgroup directory for SysProcAttr.CgroupFD.
func (c *containerCgroup) open() (*os.File, error) {
	return os.Open(c.dir)
}

// oomKilled reports whether the kernel OOM-killed a process of the cgroup.
func (c *containerCgroup) oomKilled() bool {
	if c == nil {
		return false
	}
	f, err := os.Open(filepath.Join(c.dir, "memory.events"))
	if err != nil {
		return false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if k, v, ok := strings.Cut(s.Text(), " "); ok && k == "oom_kill" && v != "0" {
			return true
		}
	}
	return false
}

func (c *containerCgroup) remove() {
	if c != nil {
		_ = os.Remove(c.dir)
	}
}
