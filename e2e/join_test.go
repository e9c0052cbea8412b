package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// netns is a network namespace joined to the host by a veth pair: the
// host end is hostIP, the namespace's nsIP, with a default route to the
// host.
type netns struct{ name, hostIP, nsIP string }

// newNetns creates netns number i, removed at cleanup; the test is skipped
// where namespaces cannot be made (not root, no ip tool).
func newNetns(t *testing.T, i int) netns {
	t.Helper()
	id := fmt.Sprintf("bl%d-%d", os.Getpid()%100000, i)
	subnet := fmt.Sprintf("10.%d.%d", 200+os.Getpid()%50, i)
	n := netns{name: id, hostIP: subnet + ".1", nsIP: subnet + ".2"}
	steps := [][]string{
		{"netns", "add", id},
		{"link", "add", "h" + id, "type", "veth", "peer", "name", "n" + id},
		{"link", "set", "n" + id, "netns", id},
		{"addr", "add", n.hostIP + "/24", "dev", "h" + id},
		{"link", "set", "h" + id, "up"},
		{"-n", id, "addr", "add", n.nsIP + "/24", "dev", "n" + id},
		{"-n", id, "link", "set", "n" + id, "up"},
		{"-n", id, "link", "set", "lo", "up"},
		{"-n", id, "route", "add", "default", "via", n.hostIP},
	}
	t.Cleanup(func() {
		_ = exec.Command("ip", "link", "del", "h"+id).Run()
		_ = exec.Command("ip", "netns", "del", id).Run()
	})
	for _, s := range steps {
		if out, err := exec.Command("ip", s...).CombinedOutput(); err != nil {
			t.Skipf("network namespaces unavailable: ip %v: %v %s", s, err, out)
		}
	}
	return n
}

// joinAgent runs `batchlet agent` in ns with the join command's arguments and
// returns its command (stopped at cleanup unless the test killed it).
func joinAgent(t *testing.T, s *server, ns netns, node, joinArgs string) *exec.Cmd {
	t.Helper()
	log := &lockedBuffer{}
	rootDir := t.TempDir()
	args := append([]string{"netns", "exec", ns.name, binary, "agent", "--node-name", node, "--root-dir", rootDir,
		"--listen-address", ns.nsIP, "--runtime", "process"}, strings.Fields(joinArgs)...)
	cmd := exec.Command("ip", args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start agent: %v", err)
	}
	t.Cleanup(func() {
		defer killShims(rootDir)
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("agent %s log:\n%s", node, log.String())
		}
	})
	eventually(t, 60*time.Second, "node "+node+" Ready", func() bool {
		return s.jsonpath("node/"+node, `{.status.conditions[?(@.type=="Ready")].status}`) == "True"
	})
	return cmd
}

// TestAgentsJoinWithTokens: two agents in their own network namespaces
// join with a bootstrap token, get client and serving certificates from
// the server's CA, run a Job's pods spread over them (logs reach them
// through the verified node proxy); killing one taints its node
// unreachable, its pod is evicted after its tolerationSeconds and the Job
// replaces it on the other node.
func TestAgentsJoinWithTokens(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root")
	}
	ns1, ns2 := newNetns(t, 1), newNetns(t, 2)
	s := startServer(t, "--no-agent", "--bind-address", ns1.hostIP)
	join := strings.TrimSpace(s.batchlet("token", "create", "--print-join-command", "--kubeconfig", s.kubeconfig))
	joinArgs, ok := strings.CutPrefix(join, "batchlet agent ")
	if !ok || !strings.Contains(joinArgs, "--ca-cert-hash sha256:") {
		t.Fatalf("join command = %q", join)
	}
	a1 := joinAgent(t, s, ns1, "w1", joinArgs)
	joinAgent(t, s, ns2, "w2", joinArgs)
	csrs := s.kubectl("get", "csr", "-o", `jsonpath={range .items[*]}{.spec.signerName} {.spec.username} {.status.conditions[0].type}{"\n"}{end}`)
	for _, want := range []string{"kubernetes.io/kube-apiserver-client-kubelet system:bootstrap:", "kubernetes.io/kubelet-serving system:node:w1 Approved", "kubernetes.io/kubelet-serving system:node:w2 Approved"} {
		if !strings.Contains(csrs, want) {
			t.Errorf("CSRs:\n%s\nwant a line with %q", csrs, want)
		}
	}
	s.apply(`apiVersion: batch/v1
kind: Job
metadata: {name: spread}
spec:
  completions: 2
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
      tolerations:
      - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 1}
      - {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 1}
      containers:
      - name: c
        image: busybox
        command: ["sh", "-c", "echo on-$NODE; sleep 600"]
        env:
        - name: NODE
          valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
`)
	eventually(t, 60*time.Second, "two running pods", func() bool {
		return len(strings.Fields(s.jsonpath("pods", `{range .items[?(@.status.phase=="Running")]}{.metadata.name} {end}`))) == 2
	})
	nodes := strings.Fields(s.jsonpath("pods", `{range .items[*]}{.spec.nodeName} {end}`))
	if len(nodes) != 2 || nodes[0] == nodes[1] {
		t.Fatalf("pods on nodes %v, want one on each of w1 and w2", nodes)
	}
	onW1 := s.jsonpath("pods", `{.items[?(@.spec.nodeName=="w1")].metadata.name}`)
	eventually(t, 30*time.Second, "log of "+onW1+" through the node proxy", func() bool {
		out, _ := s.kubectlErr("logs", onW1)
		return strings.TrimSpace(out) == "on-w1"
	})

	_ = syscall.Kill(-a1.Process.Pid, syscall.SIGKILL)
	eventually(t, 120*time.Second, "w1 tainted unreachable", func() bool {
		return strings.Contains(s.jsonpath("node/w1", `{.spec.taints[*].key}`), "node.kubernetes.io/unreachable")
	})
	eventually(t, 120*time.Second, "the Job's replacement running on w2", func() bool {
		running := s.jsonpath("pods", `{range .items[?(@.status.phase=="Running")]}{.spec.nodeName} {end}`)
		return strings.Count(running, "w2") == 2
	})
	// The evicted pod stays Terminating while its node is gone.
	if got, err := s.kubectlErr("get", "pod/"+onW1, "-o", `jsonpath={.status.conditions[?(@.type=="DisruptionTarget")].reason}`); err == nil && got != "DeletionByTaintManager" {
		t.Errorf("evicted pod's DisruptionTarget reason = %q, want DeletionByTaintManager", got)
	}
}

// batchlet runs the binary with args and returns its output.
func (s *server) batchlet(args ...string) string {
	s.t.Helper()
	out, err := exec.Command(binary, args...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("batchlet %v: %v\n%s", args, err, out)
	}
	return string(out)
}
