package apiserver

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batchlet/batchlet/apiserver/endpoints"

	"github.com/batchlet/batchlet/apiserver/openapi"
	"github.com/batchlet/batchlet/storage/memory"
)

// kubectlEnv runs the real kubectl against the server over TLS.
type kubectlEnv struct {
	t          *testing.T
	kubectl    string
	kubeconfig string
	dir        string
}

func newKubectlEnv(t *testing.T) *kubectlEnv {
	t.Helper()
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not installed")
	}
	oa, err := openapi.New()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Config{Storage: memory.New(10000), Authenticator: endpoints.TokenMap{testToken: endpoints.AdminUser()}, OpenAPIV2: oa.V2Handler(), OpenAPIV3: oa.V3Handler()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = srv.Run(ctx) }()
	hs := httptest.NewTLSServer(srv.Handler())
	t.Cleanup(hs.Close)
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %s, insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: %s}}]
contexts: [{name: c, context: {cluster: c, user: u, namespace: default}}]
current-context: c
`, hs.URL, testToken)
	if err := os.WriteFile(kc, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return &kubectlEnv{t: t, kubectl: kubectl, kubeconfig: kc, dir: dir}
}

func (k *kubectlEnv) run(stdin string, args ...string) (string, error) {
	cmd := exec.Command(k.kubectl, append([]string{"--kubeconfig", k.kubeconfig, "--cache-dir", filepath.Join(k.dir, "cache")}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (k *kubectlEnv) must(stdin string, args ...string) string {
	k.t.Helper()
	out, err := k.run(stdin, args...)
	if err != nil {
		k.t.Fatalf("kubectl %v: %v\n%s", args, err, out)
	}
	return out
}

const kubectlJob = `apiVersion: batch/v1
kind: Job
metadata:
  name: pi
spec:
  backoffLimit: 4
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: pi
        image: perl:5.34.0
        command: ["perl", "-Mbignum=bpi", "-wle", "print bpi(2000)"]
`

const kubectlJobSet = `apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: js
spec:
  replicatedJobs:
  - name: workers
    template:
      spec:
        template:
          spec:
            containers: [{name: c, image: x}]
`

func TestKubectl(t *testing.T) {
	k := newKubectlEnv(t)
	steps := []struct {
		stdin string
		args  []string
		want  string
	}{
		{kubectlJob, []string{"apply", "-f", "-"}, "job.batch/pi created"},
		{kubectlJob, []string{"apply", "-f", "-"}, "job.batch/pi unchanged"},
		{"", []string{"get", "job", "pi", "-o", "jsonpath={.metadata.managedFields[*].manager}/{.metadata.managedFields[*].operation}"}, "kubectl-client-side-apply/Update"},
		{strings.Replace(kubectlJob, "backoffLimit: 4", "backoffLimit: 5", 1), []string{"apply", "-f", "-"}, "job.batch/pi configured"},
		{"", []string{"get", "job", "pi", "-o", "jsonpath={.spec.backoffLimit}/{.metadata.generation}"}, "5/2"},
		{"", []string{"get", "jobs"}, "NAME   STATUS    COMPLETIONS   DURATION   AGE"},
		{"", []string{"label", "job", "pi", "team=a"}, "job.batch/pi labeled"},
		{"", []string{"get", "jobs", "-l", "team=a", "-o", "name"}, "job.batch/pi"},
		{kubectlJobSet, []string{"apply", "-f", "-"}, "jobset.jobset.x-k8s.io/js created"},
		{strings.Replace(kubectlJobSet, "name: js", "name: js\n  labels: {a: b}", 1), []string{"apply", "-f", "-"}, "jobset.jobset.x-k8s.io/js configured"},
		{"", []string{"get", "jobsets"}, "NAME   TERMINALSTATE   RESTARTS   COMPLETED   SUSPENDED   AGE"},
		{kubectlJob, []string{"apply", "--server-side", "-f", "-"}, "job.batch/pi serverside-applied"},
		{"", []string{"create", "configmap", "cm", "--from-literal=a=b"}, "configmap/cm created"},
		{"", []string{"get", "cm", "cm", "-o", "jsonpath={.data.a}"}, "b"},
		{strings.Replace(kubectlJob, "backoffLimit: 4", "backoffLimit: 7", 1), []string{"diff", "-f", "-"}, "-  backoffLimit: 4\n+  backoffLimit: 7"},
		{strings.Replace(kubectlJob, "backoffLimit: 4", "backoffLimit: 8", 1), []string{"apply", "--dry-run=server", "-f", "-"}, "job.batch/pi configured (server dry run)"},
		{"", []string{"get", "job", "pi", "-o", "jsonpath={.spec.backoffLimit}"}, "4"},
		{"", []string{"delete", "job", "pi"}, `job.batch "pi" deleted`},
		{"", []string{"get", "job", "pi"}, `Error from server (NotFound): jobs.batch "pi" not found`},
		{"", []string{"get", "ns"}, "kube-node-lease"},
		{"", []string{"api-resources", "--api-group=batch"}, "jobs                batch/v1     true         Job"},
	}
	for _, s := range steps {
		out, _ := k.run(s.stdin, s.args...)
		if !strings.Contains(out, s.want) {
			t.Errorf("kubectl %v: output %q does not contain %q", s.args, out, s.want)
		}
	}
	// Invalid input is rejected with upstream's messages and changes nothing.
	out, err := k.run(strings.Replace(kubectlJob, "name: pi", "name: Bad_Name", 1), "create", "-f", "-")
	if err == nil || !strings.Contains(out, `The Job "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain`) {
		t.Errorf("invalid name: %v %s", err, out)
	}
	out, err = k.run(strings.Replace(kubectlJob, "restartPolicy: Never", "restartPolicy: Always", 1), "create", "-f", "-")
	if err == nil || !strings.Contains(out, `spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"`) {
		t.Errorf("invalid job: %v %s", err, out)
	}
	if out := k.must("", "get", "jobs", "-o", "name"); strings.TrimSpace(out) != "" {
		t.Errorf("jobs left after rejected creates: %q", out)
	}
}

func TestKubectlDrainEvicts(t *testing.T) {
	k := newKubectlEnv(t)
	k.must(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"}}`, "create", "-f", "-")
	k.must(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","ownerReferences":[{"apiVersion":"batch/v1","kind":"Job","name":"j","uid":"u","controller":true}]},"spec":{"nodeName":"n1","containers":[{"name":"c","image":"x"}]}}`, "create", "-f", "-")
	out, _ := k.run("", "drain", "n1", "--timeout=1s")
	if !strings.Contains(out, "node/n1 cordoned") || !strings.Contains(out, "evicting pod default/p") {
		t.Fatalf("drain: %s", out)
	}
	if got := k.must("", "get", "pod", "p", "-o", `jsonpath={.status.conditions[?(@.type=="DisruptionTarget")].reason}`); got != "EvictionByEvictionAPI" {
		t.Fatalf("DisruptionTarget reason = %q", got)
	}
	if got := k.must("", "get", "node", "n1", "-o", "jsonpath={.spec.unschedulable}"); got != "true" {
		t.Fatalf("node not cordoned: %q", got)
	}
}
