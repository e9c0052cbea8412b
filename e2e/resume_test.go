package e2e

import (
	"strings"
	"testing"
	"time"
)

const runningJob = `apiVersion: batch/v1
kind: Job
metadata:
  name: resumable
spec:
  parallelism: 2
  completions: 2
  template:
    spec:
      containers:
      - name: c
        image: busybox
        command: ["sleep", "6"]
      restartPolicy: Never
`

// TestResumeStartedJob suspends a Job whose pods already run, then resumes
// it: the controller's status writes after the resume carry a new startTime,
// which the status strategy must accept (kubernetes#134521).
func TestResumeStartedJob(t *testing.T) {
	s := startServer(t)
	s.apply(runningJob)
	eventually(t, 30*time.Second, "job started with 2 active pods", func() bool {
		return s.jsonpath("job/resumable", "{.status.active}") == "2" && s.jsonpath("job/resumable", "{.status.startTime}") != ""
	})
	s.kubectl("patch", "job/resumable", "--type=strategic", "--patch", `{"spec":{"suspend":true}}`)
	eventually(t, 30*time.Second, "Suspended=True and no active pods", func() bool {
		return s.jsonpath("job/resumable", `{.status.conditions[?(@.type=="Suspended")].status}|{.status.active}`) == "True|"
	})
	// startTime has second granularity: resume in a later second, so the
	// controller's new startTime differs from the first one.
	first := s.jsonpath("job/resumable", "{.status.startTime}")
	started, err := time.Parse(time.RFC3339, first)
	if err != nil {
		t.Fatalf("startTime %q: %v", first, err)
	}
	eventually(t, 5*time.Second, "a second after startTime", func() bool { return time.Now().After(started.Add(time.Second)) })
	s.kubectl("patch", "job/resumable", "--type=strategic", "--patch", `{"spec":{"suspend":false}}`)
	s.waitCondition("job/resumable", "complete", 60*time.Second)
	if again := s.jsonpath("job/resumable", "{.status.startTime}"); again <= first {
		t.Errorf("startTime after resume = %q, want later than %q", again, first)
	}

	want := "Suspended=False/JobResumed;SuccessCriteriaMet=True/CompletionsReached;Complete=True/CompletionsReached;"
	if got := s.conditionTypes("job/resumable"); got != want {
		t.Errorf("conditions = %q, want %q", got, want)
	}
	if got := s.jsonpath("job/resumable", "{.status.succeeded}"); got != "2" {
		t.Errorf("succeeded = %q, want 2", got)
	}
	resumed := s.jsonpath("events", `{range .items[?(@.reason=="Resumed")]}{.involvedObject.name}={.count};{end}`)
	if resumed != "resumable=1;" {
		t.Errorf("Resumed events = %q, want one with count 1", resumed)
	}
	eventually(t, 30*time.Second, "job-tracking finalizers removed from all pods", func() bool {
		return !strings.Contains(s.jsonpath("pods", "{.items[*].metadata.finalizers}"), "job-tracking")
	})
	if log := s.log.String(); strings.Contains(log, "startTime cannot be removed") {
		t.Errorf("a status write was refused:\n%s", log)
	}
}
