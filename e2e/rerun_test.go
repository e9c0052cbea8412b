package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// flakyIndexedJob fails its odd indexes until markers/fixed exists.
func flakyIndexedJob(markers string) string {
	return fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata:
  name: flaky
  labels:
    app: flaky
spec:
  completions: 5
  parallelism: 5
  completionMode: Indexed
  backoffLimitPerIndex: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        command: ["sh", "-c", "[ $((JOB_COMPLETION_INDEX %% 2)) = 0 ] || [ -e /markers/fixed ]"]
        volumeMounts:
        - name: markers
          mountPath: /markers
      volumes:
      - name: markers
        hostPath:
          path: %s
`, markers)
}

// TestRerunFailedIndexes: `batchlet rerun JOB --failed` runs only the
// indexes that failed, as a new Job keeping their numbers, which completes
// with every index.
func TestRerunFailedIndexes(t *testing.T) {
	s := startServer(t)
	markers := t.TempDir()
	s.applyYAML(flakyIndexedJob(markers))
	s.waitCondition("job/flaky", "failed", 120*time.Second)
	s.expectJSONPath(t, "job/flaky", "{.status.completedIndexes}|{.status.failedIndexes}", "0,2,4|1,3")
	if err := os.WriteFile(filepath.Join(markers, "fixed"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out := s.batchletRerun("flaky", "--failed")
	if want := "job.batch/flaky-rerun-1 created: runs indexes 1,3 of job flaky (completedIndexes 0,2,4 carried over)\n"; out != want {
		t.Fatalf("batchlet rerun printed %q, want %q", out, want)
	}
	s.waitCondition("job/flaky-rerun-1", "complete", 120*time.Second)
	s.expectJSONPath(t, "job/flaky-rerun-1", "{.status.completedIndexes}|{.status.succeeded}|{.status.failed}|{.status.failedIndexes}",
		"0-4|5||")
	s.expectJSONPath(t, "job/flaky-rerun-1", `{.metadata.labels.batchlet\.dev/rerun-of}|{.metadata.labels.app}|{.metadata.annotations.batchlet\.dev/rerun-indexes}`,
		"flaky|flaky|1,3")
	// Only the failed indexes ran, with their own numbers.
	got := s.jsonpath("pods", `{range .items[?(@.metadata.labels.job-name=="flaky-rerun-1")]}{.metadata.annotations.batch\.kubernetes\.io/job-completion-index}:{.status.phase},{end}`)
	if got != "1:Succeeded,3:Succeeded," && got != "3:Succeeded,1:Succeeded," {
		t.Errorf("pods of the re-run (index:phase) = %q, want indexes 1 and 3 Succeeded", got)
	}
	// kubectl finds re-runs by label; a second one gets the next number.
	s.batchletRerun("flaky", "--failed")
	s.expectJSONPath(t, "jobs", `{.items[?(@.metadata.labels.batchlet\.dev/rerun-of=="flaky")].metadata.name}`, "flaky-rerun-1 flaky-rerun-2")
	// A Job with nothing failed is refused.
	cmd := exec.Command(binary, "rerun", "--kubeconfig", s.kubeconfig, "flaky-rerun-1", "--failed")
	if b, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(b), "job flaky-rerun-1 has no failed indexes: all 5 completed") {
		t.Errorf("rerun of a complete Job: %v\n%s", err, b)
	}
}

func (s *server) batchletRerun(args ...string) string {
	s.t.Helper()
	cmd := exec.Command(binary, append([]string{"rerun", "--kubeconfig", s.kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		s.t.Fatalf("batchlet rerun %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
