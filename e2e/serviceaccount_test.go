package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestServiceAccountTokensAndRBAC: `kubectl create token` issues a token
// that authenticates as the service account, which RBAC allows only what a
// RoleBinding grants it, with upstream's 403 otherwise.
func TestServiceAccountTokensAndRBAC(t *testing.T) {
	s := startServer(t)
	token := strings.TrimSpace(s.kubectl("create", "token", "default"))
	if got := s.kubectl("--token", token, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}"); got !=
		`system:serviceaccount:default:default ["system:serviceaccounts","system:serviceaccounts:default","system:authenticated"]` {
		t.Errorf("whoami with the token = %q", got)
	}
	const forbidden = `Error from server (Forbidden): pods is forbidden: User "system:serviceaccount:default:default" cannot list resource "pods" in API group "" in the namespace "default"`
	if out, err := s.kubectlErr("--token", token, "get", "pods"); err == nil || strings.TrimSpace(out) != forbidden {
		t.Errorf("get pods before the RoleBinding: err=%v\n%s\nwant %s", err, out, forbidden)
	}
	// Discovery is every authenticated user's; /metrics is not.
	for path, want := range map[string]string{"/apis": "yes", "/metrics": "no"} {
		if got, _ := s.kubectlErr("--token", token, "auth", "can-i", "get", path); strings.TrimSpace(got) != want {
			t.Errorf("can-i get %s = %q, want %s", path, got, want)
		}
	}
	const noMetrics = `Error from server (Forbidden): forbidden: User "system:serviceaccount:default:default" cannot get path "/metrics"`
	if out, err := s.kubectlErr("--token", token, "get", "--raw", "/metrics"); err == nil || strings.TrimSpace(out) != noMetrics {
		t.Errorf("get /metrics with the token: err=%v\n%s\nwant %s", err, out, noMetrics)
	}
	s.kubectl("create", "rolebinding", "default-view", "--clusterrole=view", "--serviceaccount=default:default")
	if out, err := s.kubectlErr("--token", token, "get", "pods"); err != nil || !strings.Contains(out, "No resources found") {
		t.Errorf("get pods with view: err=%v\n%s", err, out)
	}
	if out, err := s.kubectlErr("--token", token, "delete", "rolebinding", "default-view"); err == nil || !strings.Contains(out, `cannot delete resource "rolebindings" in API group "rbac.authorization.k8s.io"`) {
		t.Errorf("view deleting a rolebinding: err=%v\n%s", err, out)
	}
}

// TestInClusterClientInAJob: a Job's pod lists pods with client-go's
// in-cluster config through its mounted token: 403 without a RoleBinding,
// the count with one; automountServiceAccountToken: false mounts nothing.
func TestInClusterClientInAJob(t *testing.T) {
	s := startServer(t)
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "incluster"), "./testdata/incluster")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the in-cluster client: %v\n%s", err, out)
	}
	s.kubectl("create", "namespace", "incluster")
	job := func(name string) string {
		return `apiVersion: batch/v1
kind: Job
metadata: {name: ` + name + `, namespace: incluster}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: incluster
        command: ["/opt/incluster/incluster"]
        volumeMounts: [{name: bin, mountPath: /opt/incluster}]
      volumes:
      - name: bin
        hostPath: {path: ` + bin + `}
`
	}
	if out, err := s.kubectlStdin(job("denied"), "apply", "-f", "-"); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	s.kubectl("wait", "-n", "incluster", "--for=condition=Failed", "job/denied", "--timeout=120s")
	const forbidden = `pods is forbidden: User "system:serviceaccount:incluster:default" cannot list resource "pods" in API group "" in the namespace "incluster"`
	if logs := s.kubectl("logs", "-n", "incluster", "job/denied"); strings.TrimSpace(logs) != forbidden {
		t.Errorf("denied job logs = %q, want %q", logs, forbidden)
	}

	s.kubectl("create", "rolebinding", "-n", "incluster", "default-view", "--clusterrole=view", "--serviceaccount=incluster:default")
	if out, err := s.kubectlStdin(job("allowed"), "apply", "-f", "-"); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	s.kubectl("wait", "-n", "incluster", "--for=condition=Complete", "job/allowed", "--timeout=120s")
	// The denied Job's pod and the allowed one's.
	if logs := s.kubectl("logs", "-n", "incluster", "job/allowed"); strings.TrimSpace(logs) != "pods in incluster: 2" {
		t.Errorf("allowed job logs = %q, want the pod count", logs)
	}

	noToken := `apiVersion: v1
kind: Pod
metadata: {name: no-token, namespace: incluster}
spec:
  automountServiceAccountToken: false
  restartPolicy: Never
  containers:
  - name: main
    image: sh
    command: ["sh", "-c", "test ! -e /var/run/secrets/kubernetes.io/serviceaccount/token"]
`
	if out, err := s.kubectlStdin(noToken, "apply", "-f", "-"); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	s.kubectl("wait", "-n", "incluster", "--for=jsonpath={.status.phase}=Succeeded", "pod/no-token", "--timeout=60s")
	if vols := s.kubectl("get", "-n", "incluster", "pod/no-token", "-o", "jsonpath={.spec.volumes}"); vols != "" {
		t.Errorf("pod without automount has volumes %s", vols)
	}
}
