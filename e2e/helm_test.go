package e2e

import (
	"context"
	"go/build"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// helmPath finds Helm 3: $BATCHLET_HELM, helm on PATH, or the go install
// location .ci/run puts it in.
func helmPath() string {
	if p := os.Getenv("BATCHLET_HELM"); p != "" {
		return p
	}
	if p, err := exec.LookPath("helm"); err == nil {
		return p
	}
	p := filepath.Join(build.Default.GOPATH, "bin", "helm")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return ""
}

// helm runs Helm against the server with its own config and cache dirs.
type helm struct {
	t    *testing.T
	path string
	env  []string
}

func newHelm(t *testing.T, s *server) *helm {
	path := helmPath()
	if path == "" {
		t.Skip("helm is not installed (go install helm.sh/helm/v3/cmd/helm; .ci/run does it)")
	}
	home := t.TempDir()
	return &helm{t: t, path: path, env: append(os.Environ(), "KUBECONFIG="+s.kubeconfig,
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"), "HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"))}
}

func (h *helm) runErr(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.path, args...)
	cmd.Env = h.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (h *helm) run(args ...string) string {
	h.t.Helper()
	out, err := h.runErr(args...)
	if err != nil {
		h.t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// TestHelm installs, upgrades, rolls back and uninstalls a chart whose
// pre-install/pre-upgrade hook is a Job (testdata/helm/demo), with Helm 3
// waiting on the Jobs as it does on a cluster, and a failing hook Job
// failing the install with the Job's reason.
func TestHelm(t *testing.T) {
	s := startServer(t)
	h := newHelm(t, s)
	const chart = "testdata/helm/demo"
	wait := []string{"--wait", "--wait-for-jobs", "--timeout", "90s"}

	h.run(append([]string{"install", "demo", chart}, wait...)...)
	if got := s.kubectl("logs", "job/demo-migrate"); got != "migrating revision 1\n" {
		t.Errorf("pre-install hook log = %q", got)
	}
	if got := s.jsonpath("job/demo-work-1", "{.status.succeeded} {.status.completedIndexes}"); got != "2 0,1" {
		t.Errorf("demo-work-1 succeeded, completedIndexes = %q; want 2 0,1", got)
	}

	h.run(append([]string{"upgrade", "demo", chart, "--set", "message=bye"}, wait...)...)
	if got := s.kubectl("logs", "job/demo-migrate"); got != "migrating revision 2\n" {
		t.Errorf("pre-upgrade hook log = %q (before-hook-creation recreates the hook Job)", got)
	}
	if got := s.jsonpath("configmap/demo-config", "{.data.message}"); got != "bye" {
		t.Errorf("message after upgrade = %q", got)
	}
	if got := s.kubectl("logs", "job/demo-work-2", "--all-pods", "--prefix=false"); !strings.Contains(got, "bye 0") || !strings.Contains(got, "bye 1") {
		t.Errorf("demo-work-2 logs = %q", got)
	}

	h.run(append([]string{"rollback", "demo", "1"}, wait...)...)
	if got := s.jsonpath("configmap/demo-config", "{.data.message}"); got != "hello" {
		t.Errorf("message after rollback = %q", got)
	}
	if hist := h.run("history", "demo"); !strings.Contains(hist, "Rollback to 1") || !strings.Contains(hist, "deployed") {
		t.Errorf("helm history:\n%s", hist)
	}

	h.run("uninstall", "demo", "--wait")
	s.kubectl("wait", "--for=delete", "configmap/demo-config", "job/demo-work-1", "--timeout=60s")
	if got := s.kubectl("get", "secrets", "-l", "owner=helm,name=demo", "-o", "name"); got != "" {
		t.Errorf("release secrets left after uninstall: %q", got)
	}

	out, err := h.runErr(append([]string{"install", "bad", chart, "--set", "hookFails=true"}, wait...)...)
	if err == nil || !strings.Contains(out, "job bad-migrate failed: BackoffLimitExceeded") {
		t.Errorf("install with a failing hook: %v\n%s", err, out)
	}
	if got := s.jsonpath("job/bad-migrate", `{.status.conditions[?(@.type=="Failed")].reason}`); got != "BackoffLimitExceeded" {
		t.Errorf("bad-migrate Failed reason = %q", got)
	}
}
