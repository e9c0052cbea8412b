package e2e

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// debianPython is the interpreter Debian's python3-kubernetes is installed
// for; a python3 earlier on PATH (pyenv, venv) would not see the package.
const debianPython = "/usr/bin/python3"

// TestPythonClient drives the server with the official Python client, whose
// query booleans are spelled True (watch=True, follow=True, stdout=True,
// orphanDependents=True).
func TestPythonClient(t *testing.T) {
	if err := exec.Command(debianPython, "-c", "import kubernetes").Run(); err != nil {
		t.Skipf("the Python client is not installed (apt-get install -y python3-kubernetes; .ci/run does it): %v", err)
	}
	s := startServer(t)
	for _, scenario := range []string{"watch", "log_follow", "exec", "orphan_delete", "suspend_resume"} {
		t.Run(scenario, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, debianPython, "testdata/python_client.py", scenario)
			cmd.Env = append(os.Environ(), "KUBECONFIG="+s.kubeconfig)
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "ok "+scenario) {
				t.Fatalf("python scenario %s: %v\n%s", scenario, err, out)
			}
		})
	}
}
