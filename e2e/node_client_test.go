package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// nodeClientDir is where .ci/run installs @kubernetes/client-node
// (npm install --prefix DIR); BATCHLET_NODE_CLIENT_DIR overrides it.
func nodeClientDir() string {
	if d := os.Getenv("BATCHLET_NODE_CLIENT_DIR"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "batchlet", "node-client")
}

// TestNodeClient drives the server with the official JavaScript client:
// its informer (list, then watch from the list's resourceVersion), a Job
// watched to completion, log follow, exec over websocket with exit codes,
// suspend and resume by merge patch, and an orphaning delete.
func TestNodeClient(t *testing.T) {
	modules := filepath.Join(nodeClientDir(), "node_modules")
	if _, err := os.Stat(filepath.Join(modules, "@kubernetes", "client-node")); err != nil {
		t.Skipf("@kubernetes/client-node is not installed (npm install --prefix %s @kubernetes/client-node; .ci/run does it): %v", nodeClientDir(), err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	s := startServer(t)
	for _, scenario := range []string{"informer", "job_watch", "log_follow", "exec", "suspend_resume", "orphan_delete"} {
		t.Run(scenario, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, "testdata/node_client.cjs", scenario)
			cmd.Env = append(os.Environ(), "KUBECONFIG="+s.kubeconfig, "NODE_PATH="+modules)
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "ok "+scenario) {
				t.Fatalf("node scenario %s: %v\n%s", scenario, err, out)
			}
		})
	}
}
