package e2e

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// batchletCmd runs a batchlet subcommand and returns stdout, stderr and the
// exit code.
func batchletCmd(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return stdout.String(), stderr.String(), exitErr.ExitCode()
	} else if err != nil {
		t.Fatalf("batchlet %s: %v", strings.Join(args, " "), err)
	}
	return stdout.String(), stderr.String(), 0
}

func writeManifest(t *testing.T, name, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

const unknownFieldManifest = `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data: {a: b}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: typo
spec:
  completionz: 3
  template:
    spec:
      containers:
      - name: c
        image: busybox
        command: ["true"]
      restartPolicy: Never
`

// An unknown field is refused as kubectl apply's strict validation refuses
// it, with the same message, and nothing of the manifest is created.
func TestRunRefusesUnknownFieldsLikeKubectl(t *testing.T) {
	s := startServer(t)
	file := writeManifest(t, "typo.yaml", unknownFieldManifest)
	const want = `Error from server (BadRequest): error when creating "` // + file + ...
	const why = `Job in version "v1" cannot be handled as a Job: strict decoding error: unknown field "spec.completionz"`

	_, stderr, code := batchletCmd(t, "run", "--kubeconfig", s.kubeconfig, file)
	if code != 2 {
		t.Fatalf("run --kubeconfig: exit %d, want 2\n%s", code, stderr)
	}
	if out, err := s.kubectlErr("get", "configmap", "settings"); err == nil || !strings.Contains(out, "NotFound") {
		t.Errorf("the ConfigMap of the refused manifest was created: %s", out)
	}
	kubectlOut, err := s.kubectlErr("apply", "-f", file)
	if err == nil {
		t.Fatalf("kubectl apply accepted the unknown field:\n%s", kubectlOut)
	}
	var kubectlLine string
	for _, l := range strings.Split(kubectlOut, "\n") {
		if strings.HasPrefix(l, want) {
			kubectlLine = l
		}
	}
	if kubectlLine != want+file+`": `+why {
		t.Fatalf("kubectl's refusal is not the expected one:\n%s", kubectlOut)
	}
	if strings.TrimSpace(stderr) != kubectlLine {
		t.Errorf("batchlet run's refusal\n  %s\ndiffers from kubectl's\n  %s", strings.TrimSpace(stderr), kubectlLine)
	}

	// The embedded control plane refuses it the same way.
	_, stderr, code = batchletCmd(t, "run", file)
	if code != 2 || strings.TrimSpace(stderr) != kubectlLine {
		t.Errorf("embedded run: exit %d, stderr:\n%s\nwant exit 2 and\n%s", code, stderr, kubectlLine)
	}
}

func TestRunFailedContainerSummaryShowsItsMessage(t *testing.T) {
	job := `apiVersion: batch/v1
kind: Job
metadata:
  name: missing-binary
spec:
  backoffLimit: 0
  template:
    spec:
      containers:
      - name: c
        image: busybox
        command: ["/no/such/binary"]
      restartPolicy: Never
`
	_, stderr, code := runBatchlet(t, job, "--quiet", "-")
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, stderr)
	}
	if !regexp.MustCompile(`pod missing-binary-\w+ container c exited 128 StartError: .*/no/such/binary`).MatchString(stderr) {
		t.Errorf("summary lacks the container's reason and message:\n%s", stderr)
	}
}

func TestRunBarePodRunsToItsEnd(t *testing.T) {
	pod := `apiVersion: v1
kind: Pod
metadata:
  name: lone
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: busybox
    command: ["sh", "-c", "echo hello from a bare pod; exit CODE"]
`
	stdout, stderr, code := runBatchlet(t, strings.Replace(pod, "CODE", "0", 1), "-")
	if code != 0 || !strings.Contains(stdout, "hello from a bare pod") || !strings.Contains(stderr, "pod/lone Succeeded") {
		t.Errorf("succeeding pod: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	stdout, stderr, code = runBatchlet(t, strings.Replace(pod, "CODE", "3", 1), "-")
	if code != 1 || !strings.Contains(stdout, "hello from a bare pod") || !strings.Contains(stderr, "pod lone container c exited 3 Error") {
		t.Errorf("failing pod: exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

// Against a server, run removes what it created (pods too), so running the
// same manifest again works.
func TestRunAgainstServerTwiceLeavesNothing(t *testing.T) {
	s := startServer(t)
	url := "https://127.0.0.1:" + itoa(s.port)
	job := strings.Replace(ttlJob, "  ttlSecondsAfterFinished: 0\n", "", 1)
	file := writeManifest(t, "job.yaml", job)
	for i := 1; i <= 2; i++ {
		_, stderr, code := batchletCmd(t, "run", "--quiet", "--server", url, "--kubeconfig", s.kubeconfig, file)
		if code != 0 {
			t.Fatalf("run %d: exit %d\n%s", i, code, stderr)
		}
	}
	if out := strings.TrimSpace(s.kubectl("get", "jobs,pods", "-o", "name")); out != "" {
		t.Errorf("left behind after the runs:\n%s", out)
	}
	_, stderr, code := batchletCmd(t, "run", "--quiet", "--keep", "--server", url, "--kubeconfig", s.kubeconfig, file)
	if code != 0 {
		t.Fatalf("run --keep: exit %d\n%s", code, stderr)
	}
	if out := s.jsonpath("jobs", "{.items[*].metadata.name}"); out == "" {
		t.Errorf("run --keep removed its Job")
	}
}

// internalNoise matches what must never reach a run's user: Go's log
// package lines, panics, stack traces, slog and klog lines.
var internalNoise = regexp.MustCompile(`(?m)suppressing panic|^panic|^goroutine |^\d{4}/\d\d/\d\d \d\d:|level=|^[IWEF]\d{4} `)

func TestRunInterruptAndTimeoutAreQuiet(t *testing.T) {
	job := strings.Replace(sleeperJob, "spec:\n  template:", "spec:\n  parallelism: 3\n  completions: 3\n  template:", 1)
	cmd := exec.Command(binary, "run", "-")
	cmd.Stdin = strings.NewReader(job)
	var stdout, stderr lockedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the pods' logs streaming", func() bool { return strings.Count(stdout.String(), "started") == 3 })
	_ = cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 130 {
		t.Errorf("exit after SIGINT: %v, want 130\n%s", err, stderr.String())
	}
	if m := internalNoise.FindString(stderr.String() + stdout.String()); m != "" {
		t.Errorf("interrupted run printed internal noise %q:\nstderr:\n%s\nstdout:\n%s", m, stderr.String(), stdout.String())
	}

	out, errOut, code := runBatchlet(t, job, "--timeout", "3s", "-")
	if code != 1 || !strings.Contains(errOut, "timed out after 3s") {
		t.Errorf("--timeout: exit %d, want 1\n%s", code, errOut)
	}
	if m := internalNoise.FindString(errOut + out); m != "" {
		t.Errorf("timed-out run printed internal noise %q:\nstderr:\n%s\nstdout:\n%s", m, errOut, out)
	}
}

func TestWaitExitCodes(t *testing.T) {
	s := startServer(t)
	jobs := strings.Replace(ttlJob, "  ttlSecondsAfterFinished: 0\n", "", 1)
	if out, err := s.kubectlStdin(jobs, "create", "-f", "-"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	failing := `apiVersion: batch/v1
kind: Job
metadata:
  name: failing
spec:
  backoffLimit: 0
  template:
    spec:
      containers:
      - name: c
        image: busybox
        command: ["sh", "-c", "exit 1"]
      restartPolicy: Never
`
	if out, err := s.kubectlStdin(failing+"---\n"+sleeperJob+"---\n"+completingJobSet, "create", "-f", "-"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	const name = "pi-with-ttl"
	cases := []struct {
		target   string
		extra    []string
		wantCode int
		wantOut  string
		wantErr  string
	}{
		{name, nil, 0, "job/" + name + " Complete (CompletionsReached): Reached expected number of succeeded pods", ""},
		{"job/failing", nil, 1, "job/failing Failed (BackoffLimitExceeded): Job has reached the specified backoff limit", ""},
		{"jobset/hello-jobset", nil, 0, "jobset/hello-jobset Completed (AllJobsCompleted): jobset completed successfully", ""},
		{"job/nothing", nil, 2, "", `error: jobs.batch "nothing" not found`},
		{"job/sleeper", []string{"--timeout", "1s"}, 124, "", "error: timed out after 1s waiting for job/sleeper to finish"},
	}
	for _, tc := range cases {
		stdout, stderr, code := batchletCmd(t, append([]string{"wait", "--kubeconfig", s.kubeconfig, tc.target}, tc.extra...)...)
		if code != tc.wantCode || strings.TrimSpace(stdout) != tc.wantOut || strings.TrimSpace(stderr) != tc.wantErr {
			t.Errorf("wait %s: exit %d\nstdout: %s\nstderr: %s\nwant exit %d\nstdout: %s\nstderr: %s", tc.target, code, stdout, stderr, tc.wantCode, tc.wantOut, tc.wantErr)
		}
	}
}
