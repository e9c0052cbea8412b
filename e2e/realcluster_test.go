//go:build realcluster

package e2e

// The real-cluster tier: batchlet's controllers and agent against a real
// etcd and kube-apiserver built from the Go module proxy
// (hack/realcluster/build.sh), with RBAC from `batchlet install` and the
// service-account tokens it grants. The seed scenarios must end in the same
// states as on `batchlet server`. Run it with hack/realcluster/test.sh.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// realClusterControllers replace kube-controller-manager and kube-scheduler,
// which the tier does not run.
const realClusterControllers = "job,jobset,ttl-after-finished,garbage-collector,scheduler,podgc,nodelifecycle"

func startRealCluster(t *testing.T) *server {
	t.Helper()
	kubectlPath(t)
	bin := os.Getenv("BATCHLET_REALCLUSTER_BIN")
	if bin == "" {
		t.Fatal("BATCHLET_REALCLUSTER_BIN is not set: run hack/realcluster/test.sh")
	}
	dir := t.TempDir()
	etcdPort, peerPort, apiPort := freePort(t), freePort(t), freePort(t)
	startDaemon(t, "etcd", filepath.Join(bin, "etcd"),
		"--name=default", "--data-dir="+filepath.Join(dir, "etcd"),
		fmt.Sprintf("--listen-client-urls=http://127.0.0.1:%d", etcdPort),
		fmt.Sprintf("--advertise-client-urls=http://127.0.0.1:%d", etcdPort),
		fmt.Sprintf("--listen-peer-urls=http://127.0.0.1:%d", peerPort),
		fmt.Sprintf("--initial-advertise-peer-urls=http://127.0.0.1:%d", peerPort),
		fmt.Sprintf("--initial-cluster=default=http://127.0.0.1:%d", peerPort))

	token := randomHex(t)
	saKey := filepath.Join(dir, "sa.key")
	writeRSAKey(t, saKey)
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(token+`,admin,admin,"system:masters"`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	clientCA, clientCert, clientKey := writeClientCert(t, dir)
	startDaemon(t, "kube-apiserver", filepath.Join(bin, "kube-apiserver"),
		// Logs and exec reach the agent by its InternalIP, with a client
		// certificate the agent's --client-ca-file admits.
		"--kubelet-client-certificate="+clientCert, "--kubelet-client-key="+clientKey,
		"--kubelet-preferred-address-types=InternalIP",
		fmt.Sprintf("--etcd-servers=http://127.0.0.1:%d", etcdPort),
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", apiPort),
		"--cert-dir="+filepath.Join(dir, "certs"), "--token-auth-file="+tokens, "--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc", "--service-account-key-file="+saKey,
		"--service-account-signing-key-file="+saKey, "--service-cluster-ip-range=10.96.0.0/16",
		// No kube-controller-manager creates the default service accounts.
		"--disable-admission-plugins=ServiceAccount")
	apiURL := fmt.Sprintf("https://127.0.0.1:%d", apiPort)
	waitHTTPS(t, apiURL+"/readyz", token)

	s := &server{t: t, dataDir: dir, kubeconfig: writeKubeconfig(t, dir, "admin", apiURL, token)}
	// The JobSet webhook runs in `batchlet controllers`, outside the cluster.
	webhookAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	certDir := filepath.Join(dir, "webhook")
	install := exec.Command(binary, "install", "--kubeconfig", s.kubeconfig, "--controllers", realClusterControllers, "--agent",
		"--webhook-url=https://"+webhookAddr, "--webhook-cert-dir="+certDir)
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("batchlet install: %v\n%s", err, out)
	}
	// The controllers and the agent run as the service accounts `batchlet
	// install` made, so its RBAC is what this tier checks.
	ctlKubeconfig := writeKubeconfig(t, dir, "controllers", apiURL,
		strings.TrimSpace(s.kubectl("create", "token", "batchlet-controllers", "-n", "batchlet-system", "--duration=2h")))
	agentKubeconfig := writeKubeconfig(t, dir, "agent", apiURL,
		strings.TrimSpace(s.kubectl("create", "token", "batchlet-agent", "-n", "batchlet-system", "--duration=2h")))
	startDaemon(t, "controllers", binary, "controllers", "--kubeconfig", ctlKubeconfig, "--controllers", realClusterControllers,
		"--webhook-bind-address="+webhookAddr, "--webhook-cert-dir="+certDir)
	startDaemon(t, "agent", binary, "agent", "--kubeconfig", agentKubeconfig, "--node-name", "realcluster-node",
		"--root-dir", filepath.Join(dir, "agent"), "--client-ca-file="+clientCA)
	// The agent registers its Node after asking for a serving certificate
	// (which nothing approves on a real cluster: it waits, then serves a
	// self-signed one), so the Node may not exist yet: wait for it first.
	s.kubectl("wait", "--for=create", "node/realcluster-node", "--timeout=60s")
	s.kubectl("wait", "--for=condition=Ready", "node/realcluster-node", "--timeout=60s")
	return s
}

func TestRealClusterSeedJobs(t *testing.T) {
	s := startRealCluster(t)
	t.Run("HelloIndexed", func(t *testing.T) {
		c := s.inNamespace(t, "hello")
		c.k("apply", "-f", example("hello-indexed.yaml"))
		c.k("wait", "--for=condition=complete", "job/hello-indexed", "--timeout=90s")
		if got := c.get("job/hello-indexed", "{.status.completedIndexes}/{.status.succeeded}"); got != "0-3/4" {
			t.Errorf("completedIndexes/succeeded = %q, want 0-3/4", got)
		}
	})
	t.Run("PodFailurePolicy", func(t *testing.T) { seedPodFailurePolicyFailJob(s.inNamespace(t, "pfp")) })
	t.Run("BackoffLimitPerIndex", func(t *testing.T) { seedBackoffLimitPerIndexExecuteAll(s.inNamespace(t, "blpi")) })
}

func TestRealClusterJobSetSeeds(t *testing.T) {
	s := startRealCluster(t)
	t.Run("FailJobSet", func(t *testing.T) { t.Parallel(); testFailJobSet(s.inNamespace(t, "failjobset")) })
	t.Run("RestartJobSet", func(t *testing.T) { t.Parallel(); testRestartJobSet(s.inNamespace(t, "restartjobset")) })
	t.Run("RestartJobSetAndIgnoreMaxRestarts", func(t *testing.T) {
		t.Parallel()
		c := s.inNamespace(t, "rjimr")
		testIgnoreMaxRestarts(c, fastLeader(t, "jobset-rjimr-action-example.yaml", "1"), "rjimr-action-example")
	})
	t.Run("HostMaintenance", func(t *testing.T) { t.Parallel(); testHostMaintenance(s.inNamespace(t, "maintenance")) })
	t.Run("SuccessPolicyAny", func(t *testing.T) { t.Parallel(); testSuccessPolicyAny(s.inNamespace(t, "successany")) })
	t.Run("StartupPolicyInOrder", func(t *testing.T) { t.Parallel(); testInOrder(s.inNamespace(t, "inorder")) })
	// Upstream JobSet v0.12 names seed 004's RecreateJob action RestartJob:
	// its CRD refuses the seed as upstream-observed.md records, where
	// batchlet server accepts both names.
	t.Run("RecreateJobRefused", func(t *testing.T) {
		t.Parallel()
		c := s.inNamespace(t, "recreatejob")
		out, err := c.kubectlStdin(seedCopy(t, "jobset-recreatejob-example.yaml"), "-n", c.ns, "apply", "-f", "-")
		if err == nil || !strings.Contains(out, `Unsupported value: "RecreateJob": supported values: "FailJobSet", "RestartJobSet", "RestartJobSetAndIgnoreMaxRestarts", "RestartJob", "RestartJobAndIgnoreMaxRestarts"`) {
			t.Errorf("apply of seed RecreateJob: %v\n%s\nwant the CRD's Unsupported value", err, out)
		}
	})
}

// startDaemon starts a long-running process for the test and stops it
// (SIGTERM, then SIGKILL) at cleanup, logging its output if the test failed.
func startDaemon(t *testing.T, name, path string, args ...string) {
	t.Helper()
	log := &syncBuffer{}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		if t.Failed() {
			out := log.String()
			if len(out) > 20000 {
				out = "…" + out[len(out)-20000:]
			}
			t.Logf("%s log:\n%s", name, out)
		}
	})
}

func waitHTTPS(t *testing.T, url, token string) {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	eventually(t, 90*time.Second, url, func() bool {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

func writeKubeconfig(t *testing.T, dir, user, server, token string) string {
	t.Helper()
	path := filepath.Join(dir, user+".kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: real
  cluster:
    server: %s
    insecure-skip-tls-verify: true
users:
- name: %s
  user:
    token: %s
contexts:
- name: real
  context: {cluster: real, user: %s}
current-context: real
`, server, user, token, user)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeClientCert issues a CA and, from it, the client certificate the API
// server presents to the agent.
func writeClientCert(t *testing.T, dir string) (caFile, certFile, keyFile string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubelet-client-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"system:masters"}},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	caFile, certFile, keyFile = filepath.Join(dir, "kubelet-client-ca.crt"), filepath.Join(dir, "kubelet-client.crt"), filepath.Join(dir, "kubelet-client.key")
	for path, block := range map[string]*pem.Block{
		caFile: {Type: "CERTIFICATE", Bytes: caDER}, certFile: {Type: "CERTIFICATE", Bytes: der}, keyFile: {Type: "EC PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return caFile, certFile, keyFile
}

func writeRSAKey(t *testing.T, path string) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	data := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func randomHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
