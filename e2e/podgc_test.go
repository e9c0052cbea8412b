package e2e

import (
	"strings"
	"testing"
	"time"
)

const countedJob = `apiVersion: batch/v1
kind: Job
metadata:
  name: counted
spec:
  completions: 6
  parallelism: 2
  completionMode: Indexed
  template:
    spec:
      containers:
      - name: main
        image: busybox
        command: ["sh", "-c", "echo done $JOB_COMPLETION_INDEX"]
      restartPolicy: Never
`

// TestCountedPodGC: with --terminated-pod-gc-policy=counted the pod GC
// deletes the pods the Job has counted, keeping its newest, so the Job's
// status is whole and `kubectl logs job/NAME` still finds a pod.
func TestCountedPodGC(t *testing.T) {
	s := startServer(t, "--terminated-pod-gc-policy=counted")
	s.applyYAML(countedJob)
	s.waitCondition("job/counted", "complete", 90*time.Second)
	s.expectJSONPath(t, "job/counted", "{.status.succeeded}|{.status.failed}|{.status.completedIndexes}", "6||0-5")
	var pods []string
	eventually(t, 60*time.Second, "one pod of job/counted left", func() bool {
		pods = s.podsOf("counted")
		return len(pods) == 1
	})
	if !strings.HasSuffix(pods[0], ":Succeeded") {
		t.Errorf("kept pod %s, want Succeeded", pods[0])
	}
	if out := s.kubectl("logs", "job/counted"); !strings.HasPrefix(out, "done ") {
		t.Errorf("kubectl logs job/counted = %q, want the kept pod's output", out)
	}
}
