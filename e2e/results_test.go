package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// mixedJob has a succeeding index 0 and a failing index 1 (exit 3), each
// logging a line to stdout and, for the failure, one to stderr.
const mixedJob = `apiVersion: batch/v1
kind: Job
metadata:
  name: mixed
spec:
  completionMode: Indexed
  completions: 2
  parallelism: 2
  backoffLimitPerIndex: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        command: ["sh", "-c", "echo hello from $JOB_COMPLETION_INDEX; if [ $JOB_COMPLETION_INDEX = 1 ]; then echo boom >&2; exit 3; fi"]
`

// batchletResults runs `batchlet results` against s.
func (s *server) batchletResults(args ...string) string {
	s.t.Helper()
	cmd := exec.Command(binary, append([]string{"results", "--kubeconfig", s.kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		s.t.Fatalf("batchlet results %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

type resultSpec struct {
	JobName         string `json:"jobName"`
	CompletionIndex *int   `json:"completionIndex"`
	ExitCode        int    `json:"exitCode"`
	Reason          string `json:"reason"`
	LogTail         string `json:"logTail"`
}

// resultsOf reads `batchlet results JOB -o json` by completion index.
func (s *server) resultsOf(job string) map[int]resultSpec {
	s.t.Helper()
	var list struct {
		Items []struct {
			Spec resultSpec `json:"spec"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(s.batchletResults(job, "-o", "json")), &list); err != nil {
		s.t.Fatal(err)
	}
	out := map[int]resultSpec{}
	for _, it := range list.Items {
		if it.Spec.CompletionIndex != nil {
			out[*it.Spec.CompletionIndex] = it.Spec
		}
	}
	return out
}

// TestResultsOutliveTheJob: the exit codes, reasons and log tails of a
// Job's containers stay queryable (batchlet results, kubectl get
// containerresults) after the Job and its pods are deleted.
func TestResultsOutliveTheJob(t *testing.T) {
	s := startServer(t)
	s.applyYAML(mixedJob)
	s.kubectl("wait", "--for=condition=Failed", "--timeout=90s", "job/mixed")
	eventually(t, 30*time.Second, "a result of each index", func() bool { return len(s.resultsOf("mixed")) == 2 })

	s.kubectl("delete", "job", "mixed", "--cascade=foreground", "--timeout=60s")
	eventually(t, 60*time.Second, "the Job's pods gone", func() bool {
		return s.jsonpath("pods", `{.items[*].metadata.name}`) == ""
	})

	got := s.resultsOf("mixed")
	if r := got[0]; r.ExitCode != 0 || r.Reason != "Completed" || r.LogTail != "hello from 0\n" {
		t.Errorf("index 0 = %+v, want exit 0 Completed with its log", r)
	}
	if r := got[1]; r.ExitCode != 3 || r.Reason != "Error" || !strings.Contains(r.LogTail, "hello from 1\n") || !strings.Contains(r.LogTail, "boom\n") {
		t.Errorf("index 1 = %+v, want exit 3 Error with its stdout and stderr", r)
	}

	table := s.batchletResults("job/mixed", "--failed", "--logs")
	if !strings.Contains(table, "EXIT") || !strings.Contains(table, "boom") || strings.Contains(table, "hello from 0") {
		t.Errorf("batchlet results --failed --logs:\n%s\nwant index 1 only, with its log", table)
	}
	out := s.kubectl("get", "containerresults", "--field-selector", "spec.jobName=mixed",
		"-o", `jsonpath={range .items[*]}{.spec.completionIndex}:{.spec.exitCode} {end}`)
	if strings.TrimSpace(out) != "0:0 1:3" {
		t.Errorf("kubectl get containerresults = %q, want 0:0 1:3", out)
	}
	if out := s.kubectl("get", "containerresults", "-l", "batch.kubernetes.io/job-completion-index=1"); !strings.Contains(out, "EXIT") || !strings.Contains(out, "Error") {
		t.Errorf("kubectl get containerresults (table):\n%s", out)
	}
}

// TestResultsRetentionByAge: with a short --results-retention-age the
// result of a finished container is deleted by the retention controller,
// while its Job stays.
func TestResultsRetentionByAge(t *testing.T) {
	s := startServer(t, "--results-retention-age", "3s")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// Watch from before the Job exists, so neither event can be missed.
	watch := exec.CommandContext(ctx, "kubectl", "get", "containerresults", "--watch", "--output-watch-events", "-o", "json")
	watch.Env = append(os.Environ(), "KUBECONFIG="+s.kubeconfig)
	stdout, err := watch.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = watch.Wait() }()
	type event struct {
		Type   string `json:"type"`
		Object struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		} `json:"object"`
	}
	events := make(chan event)
	go func() {
		defer close(events)
		dec := json.NewDecoder(stdout)
		for {
			var ev event
			if dec.Decode(&ev) != nil {
				return
			}
			events <- ev
		}
	}()
	// The watch is established once kubectl listed; give it that before
	// the result can exist by waiting for the (empty) list to be served.
	s.kubectl("get", "containerresults")

	s.applyYAML(`apiVersion: batch/v1
kind: Job
metadata:
  name: short
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        command: ["sh", "-c", "echo done"]
`)
	var added, deleted bool
	for !deleted {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatalf("kubectl watch ended (added=%v)", added)
			}
			ours := strings.HasPrefix(ev.Object.Metadata.Name, "short-")
			added = added || ours && ev.Type == "ADDED"
			deleted = added && ours && ev.Type == "DELETED"
		case <-ctx.Done():
			t.Fatalf("timed out waiting for the result to be added and deleted (added=%v)", added)
		}
	}
	s.kubectl("wait", "--for=condition=Complete", "--timeout=30s", "job/short")
}
