// Package e2e drives the batchlet binary as a user would: it builds it,
// starts `batchlet server` on a free port with a temporary data dir, and
// runs the real kubectl against it.
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

var binary string // path of the batchlet binary built by TestMain

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "batchlet-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "batchlet")
	// batchlet-shim beside batchlet: the agent runs it as each
	// container's shim and init (runtime/process.ShimBinaryName).
	build := exec.Command("go", "build", "-o", dir+"/", "../cmd/batchlet", "../cmd/batchlet-shim")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build batchlet:", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// server is one running `batchlet server`.
type server struct {
	t          *testing.T
	dataDir    string
	port       int
	cmd        *exec.Cmd
	kubeconfig string
	log        *bytes.Buffer
	extraArgs  []string
	// bin, when set, is the binary start runs instead of the test's (an
	// upgrade).
	bin string
}

func kubectlPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not installed; the e2e tests drive the real kubectl")
	}
	return p
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startServer starts a server on a fresh data dir and waits until kubectl
// can reach it.
func startServer(t *testing.T, extraArgs ...string) *server {
	t.Helper()
	kubectlPath(t)
	s := &server{t: t, dataDir: t.TempDir(), port: freePort(t), extraArgs: extraArgs}
	s.kubeconfig = filepath.Join(s.dataDir, "kubeconfig")
	s.start()
	t.Cleanup(s.stop)
	return s
}

func (s *server) start() {
	s.t.Helper()
	s.log = &bytes.Buffer{}
	args := append([]string{"server", "--data-dir", s.dataDir, "--port", fmt.Sprint(s.port), "--log-level", "info"}, s.extraArgs...)
	if os.Getenv("BATCHLET_E2E_SHIM_SUPERVISOR") == "0" {
		// The whole suite with a shim per container, the server's
		// default before the shim supervisor.
		args = append(args, "--shim-supervisor=false")
	}
	bin := binary
	if s.bin != "" {
		bin = s.bin
	}
	s.cmd = exec.Command(bin, args...)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("start server: %v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(s.kubeconfig); err == nil {
			if out, err := s.kubectlErr("get", "--raw", "/readyz"); err == nil && strings.Contains(out, "ok") {
				return
			}
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("server did not become ready:\n%s", s.log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop sends SIGTERM and waits for a clean exit.
func (s *server) stop() {
	// SIGTERM leaves pods running (--on-shutdown=keep): end what the
	// test's pods left behind.
	defer killShims(s.dataDir)
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-done
		s.t.Errorf("server did not stop within 60s of SIGTERM")
	}
	s.cmd = nil
	if s.t.Failed() {
		s.t.Logf("server log:\n%s", s.log.String())
	}
}

// kill9 kills the server (and its pod processes' group) without warning.
func (s *server) kill9() {
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	_ = s.cmd.Wait()
	s.cmd = nil
}

func (s *server) kubectlErr(args ...string) (string, error) {
	return s.kubectlWithin(60*time.Second, args...)
}

// kubectlWithin runs kubectl, killing it after limit.
func (s *server) kubectlWithin(limit time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kubectl", args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+s.kubeconfig)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// kubectl runs kubectl and fails the test if it fails.
func (s *server) kubectl(args ...string) string {
	s.t.Helper()
	out, err := s.kubectlErr(args...)
	if err != nil {
		s.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// kubectlStdin runs kubectl with stdin.
func (s *server) kubectlStdin(stdin string, args ...string) (string, error) {
	cmd := exec.Command("kubectl", args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+s.kubeconfig)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// eventually polls fn until it returns true or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, fn func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !fn() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// jsonpath reads one field with kubectl -o jsonpath.
func (s *server) jsonpath(resource, path string) string {
	out, _ := s.kubectlErr("get", resource, "-o", "jsonpath="+path)
	return strings.TrimSpace(out)
}

func example(name string) string { return filepath.Join("..", "examples", name) }

func itoa(i int) string { return fmt.Sprint(i) }
