package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

const suspendedPi = `apiVersion: batch/v1
kind: Job
metadata:
  name: pi
spec:
  suspend: true
  template:
    spec:
      containers:
      - name: pi
        image: perl:5.34.0
        command: ["perl",  "-Mbignum=bpi", "-wle", "print bpi(2000)"]
      restartPolicy: Never
  backoffLimit: 4
`

const restartAlwaysJob = `apiVersion: batch/v1
kind: Job
metadata:
  name: bad
spec:
  template:
    spec:
      containers:
      - name: c
        image: busybox
        command: ["true"]
      restartPolicy: Always
`

// TestKubectlAgainstControlPlane is issue 2's acceptance walk-through.
func TestKubectlAgainstControlPlane(t *testing.T) {
	s := startServer(t, "--no-agent")

	ns := s.kubectl("get", "ns")
	for _, want := range []string{"default", "kube-system"} {
		if !strings.Contains(ns, want) {
			t.Errorf("kubectl get ns lacks %q:\n%s", want, ns)
		}
	}

	out, err := s.kubectlStdin(suspendedPi, "apply", "-f", "-")
	if err != nil || !strings.Contains(out, "job.batch/pi created") {
		t.Fatalf("apply: %v\n%s", err, out)
	}

	jobs := s.kubectl("get", "jobs")
	header := strings.Fields(strings.SplitN(jobs, "\n", 2)[0])
	if strings.Join(header, " ") != "NAME STATUS COMPLETIONS DURATION AGE" {
		t.Errorf("kubectl get jobs header = %q", header)
	}
	if !strings.Contains(jobs, "Suspended") || !strings.Contains(jobs, "0/1") {
		t.Errorf("kubectl get jobs row:\n%s", jobs)
	}

	yaml := s.kubectl("get", "job", "pi", "-o", "yaml")
	for _, want := range []string{
		"backoffLimit: 4", "completionMode: NonIndexed", "parallelism: 1", "completions: 1",
		"batch.kubernetes.io/controller-uid:", "batch.kubernetes.io/job-name: pi", "job-name: pi",
		"terminationGracePeriodSeconds: 30", "dnsPolicy: ClusterFirst", "schedulerName: default-scheduler",
		"podReplacementPolicy: TerminatingOrFailed", "manualSelector", "suspend: true",
	} {
		if want == "manualSelector" {
			continue // manualSelector stays unset upstream
		}
		if !strings.Contains(yaml, want) {
			t.Errorf("job yaml lacks %q:\n%s", want, yaml)
		}
	}

	// A watch sees the patch.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	watch := exec.CommandContext(ctx, "kubectl", "get", "job", "pi", "-w", "-o", "jsonpath={.spec.suspend}{\"\\n\"}")
	watch.Env = append(os.Environ(), "KUBECONFIG="+s.kubeconfig)
	stdout, _ := watch.StdoutPipe()
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 10)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	if first := <-lines; first != "true" {
		t.Errorf("watch first line = %q, want true", first)
	}
	s.kubectl("patch", "job/pi", "--type=strategic", "-p", `{"spec":{"suspend":false}}`)
	select {
	case l := <-lines:
		if l != "false" {
			t.Errorf("watch saw %q after patch, want false", l)
		}
	case <-ctx.Done():
		t.Error("watch did not see the patch")
	}
	cancel()
	_ = watch.Wait()

	explain := s.kubectl("explain", "job.spec")
	if !strings.Contains(explain, "backoffLimit") {
		t.Errorf("kubectl explain job.spec lacks backoffLimit:\n%s", explain)
	}

	out = s.kubectl("delete", "job", "pi", "--cascade=orphan")
	if !strings.Contains(out, `job.batch "pi" deleted`) {
		t.Errorf("delete: %s", out)
	}

	out, err = s.kubectlStdin(restartAlwaysJob, "apply", "-f", "-")
	if err == nil {
		t.Fatalf("a Job with restartPolicy Always was accepted:\n%s", out)
	}
	if !strings.Contains(out, `spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"`) &&
		!strings.Contains(out, `spec.template.spec.restartPolicy: Unsupported value: "Always": supported values: "OnFailure", "Never"`) {
		t.Errorf("invalid Job message:\n%s", out)
	}
	if _, err := s.kubectlErr("get", "job", "bad"); err == nil {
		t.Error("the refused Job exists")
	}
}

func TestUnauthenticatedRequestIsRefused(t *testing.T) {
	s := startServer(t, "--no-agent")
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	for _, path := range []string{"/api/v1/namespaces", "/apis/batch/v1/jobs"} {
		resp, err := client.Get("https://127.0.0.1:" + itoa(s.port) + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without a token: %d, want 401", path, resp.StatusCode)
		}
	}
}

// TestControllersAgainstRemoteAPI runs the controllers as their own process
// over HTTPS, as they would run against a real kube-apiserver.
func TestControllersAgainstRemoteAPI(t *testing.T) {
	s := startServer(t, "--controllers=")
	ctl := exec.Command(binary, "controllers", "--kubeconfig", s.kubeconfig)
	if err := ctl.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ctl.Process.Signal(os.Interrupt); _ = ctl.Wait() })
	s.kubectl("apply", "-f", example("hello-indexed.yaml"))
	s.waitCondition("job/hello-indexed", "complete", 60*time.Second)
	if got := s.jsonpath("job/hello-indexed", "{.status.completedIndexes}/{.status.succeeded}"); got != "0-3/4" {
		t.Errorf("completedIndexes/succeeded = %q, want 0-3/4", got)
	}
}

// TestJobControllerAlongside runs `batchlet controllers --controllers job
// --job-controller-mode alongside` as it would run beside
// kube-controller-manager: it manages the Job whose spec.managedBy is
// batchlet.dev/job-controller and leaves the one without managedBy (which
// kube-controller-manager's Job controller would own) alone.
func TestJobControllerAlongside(t *testing.T) {
	s := startServer(t, "--controllers=ttl-after-finished,garbage-collector,scheduler,podgc,nodelifecycle,root-ca-cert-publisher")
	ctl := exec.Command(binary, "controllers", "--kubeconfig", s.kubeconfig, "--controllers=job", "--job-controller-mode=alongside")
	if err := ctl.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ctl.Process.Signal(os.Interrupt); _ = ctl.Wait() })
	job := func(name, managedBy string) string {
		m := ""
		if managedBy != "" {
			m = "\n  managedBy: " + managedBy
		}
		return `apiVersion: batch/v1
kind: Job
metadata:
  name: ` + name + `
spec:` + m + `
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: c
        image: busybox
        command: ["true"]
`
	}
	// The Job kube-controller-manager would own goes first, so the
	// controller has seen it by the time it finishes the second.
	s.apply(job("kcms", ""))
	s.apply(job("ours", "batchlet.dev/job-controller"))
	s.waitCondition("job/ours", "complete", 60*time.Second)
	if got := s.jsonpath("job/kcms", "{.status.startTime}|{.status.active}"); got != "|" {
		t.Errorf("the Job without managedBy was acted on: startTime|active = %q", got)
	}
	if got := s.kubectl("get", "pods", "-l", "batch.kubernetes.io/job-name=kcms", "-o", "name"); strings.TrimSpace(got) != "" && !strings.Contains(got, "No resources") {
		t.Errorf("pods of the Job without managedBy: %q", got)
	}
}
