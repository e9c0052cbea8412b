package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// runBatchlet runs `batchlet run` and returns stdout, stderr and the exit code.
func runBatchlet(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"run"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	err := cmd.Run()
	code := 0
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		code = exitErr.ExitCode()
	} else if err != nil {
		t.Fatalf("batchlet run: %v", err)
	}
	return stdout.String(), stderr.String(), code
}

func TestRunPiPrintsPi(t *testing.T) {
	if !perlBpiWorks() {
		t.Skip("perl -Mbignum=bpi crashes on this host; install libmath-bigint-perl (see shared/spec/host-notes.md)")
	}
	stdout, stderr, code := runBatchlet(t, "", example("pi.yaml"))
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, stderr)
	}
	if !strings.HasPrefix(strings.TrimSpace(stdout), "3.14159265358979323846") {
		t.Errorf("stdout does not start with pi: %.100q", stdout)
	}
	if !strings.Contains(stderr, "job/pi Complete (CompletionsReached)") {
		t.Errorf("summary lacks the Complete line:\n%s", stderr)
	}
}

func TestRunIndexedPrefixesLogs(t *testing.T) {
	stdout, stderr, code := runBatchlet(t, "", example("hello-indexed.yaml"))
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, stderr)
	}
	for i := 0; i < 4; i++ {
		if !strings.Contains(stdout, "hello from index "+string(rune('0'+i))) {
			t.Errorf("stdout lacks index %d:\n%s", i, stdout)
		}
	}
	if !strings.Contains(stdout, "[hello-indexed-") {
		t.Errorf("log lines are not prefixed by pod:\n%s", stdout)
	}
}

func TestRunPodFailurePolicyExitsOne(t *testing.T) {
	_, stderr, code := runBatchlet(t, "", "--quiet", example("job-pod-failure-policy-example.yaml"))
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstderr:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "Failed (PodFailurePolicy)") || !strings.Contains(stderr, "exited 42") {
		t.Errorf("summary:\n%s", stderr)
	}
}

func TestRunInvalidManifestExitsTwo(t *testing.T) {
	_, stderr, code := runBatchlet(t, restartAlwaysJob, "-")
	if code != 2 {
		t.Fatalf("exit %d, want 2\nstderr:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "spec.template.spec.restartPolicy") || !strings.Contains(stderr, "Invalid") {
		t.Errorf("stderr lacks the validation message:\n%s", stderr)
	}
}

func TestRunOutputJSON(t *testing.T) {
	job := strings.Replace(ttlJob, "  ttlSecondsAfterFinished: 0\n", "", 1)
	stdout, stderr, code := runBatchlet(t, job, "--quiet", "--output", "json", "-")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var res struct {
		ExitCode int
		Items    []struct {
			Name    string
			Outcome string
			Counts  struct{ Succeeded int }
		}
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("--output json is not JSON: %v\n%s", err, stdout)
	}
	if len(res.Items) != 1 || res.Items[0].Outcome != "Complete" || res.Items[0].Counts.Succeeded != 1 {
		t.Errorf("json result = %+v", res)
	}
}

const sleeperJob = `apiVersion: batch/v1
kind: Job
metadata:
  name: sleeper
spec:
  template:
    spec:
      containers:
      - name: c
        image: busybox
        command: ["sh", "-c", "echo started; sleep 1000"]
      restartPolicy: Never
`

func TestRunInterruptLeavesNoProcess(t *testing.T) {
	marker := "batchlet-e2e-" + time.Now().Format("150405.000000")
	job := strings.Replace(sleeperJob, "sleep 1000", "sleep 1000 # "+marker, 1)
	cmd := exec.Command(binary, "run", "-")
	cmd.Stdin = strings.NewReader(job)
	stdout, stderr := &lockedBuffer{}, &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "pod started", func() bool { return strings.Contains(stdout.String(), "started") })
	_ = cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 130 {
		t.Errorf("exit after SIGINT: %v, want 130\n%s", err, stderr.String())
	}
	eventually(t, 10*time.Second, "no sleeper process left", func() bool {
		out, _ := exec.Command("pgrep", "-f", marker).Output()
		return strings.TrimSpace(string(out)) == ""
	})
}
