package e2e

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// lostPodsJob is an Indexed Job with backoffLimit 0 whose first pod of each
// index creates markers/<index> and runs until killed; a replacement finds
// the marker and succeeds at once.
func lostPodsJob(markers string) string {
	return fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata:
  name: lost
spec:
  completions: 2
  parallelism: 2
  completionMode: Indexed
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        command: ["sh", "-c", "mkdir /markers/$JOB_COMPLETION_INDEX 2>/dev/null || exit 0; sleep 600"]
        volumeMounts:
        - name: markers
          mountPath: /markers
      volumes:
      - name: markers
        hostPath:
          path: %s
`, markers)
}

// TestLostPodsAreDisruptionsNotFailures is issue 19 item 7: the pods a
// kill -9 of the server loses end Failed with a DisruptionTarget condition
// (TerminationByKubelet), and the Job, though its backoffLimit is 0,
// replaces them at once without counting them and completes.
func TestLostPodsAreDisruptionsNotFailures(t *testing.T) {
	s := startServer(t)
	markers := t.TempDir()
	s.applyYAML(lostPodsJob(markers))
	for _, ix := range []string{"0", "1"} {
		waitFile(t, filepath.Join(markers, ix))
	}
	s.crashAndRestart(t)
	s.waitCondition("job/lost", "complete", 120*time.Second)
	s.expectJSONPath(t, "job/lost", "{.status.succeeded}|{.status.failed}|{.status.completedIndexes}", "2||0,1")
	lost := 0
	for _, p := range s.jobPods("lost") {
		switch {
		case p.phase == "Succeeded":
		case p.phase == "Failed" && p.reason == "ContainerStatusUnknown" && p.disruption == "TerminationByKubelet":
			lost++
		default:
			t.Errorf("pod %+v: want Succeeded, or Failed as lost with the agent with a DisruptionTarget condition", p)
		}
	}
	if lost != 2 {
		t.Errorf("%d pods lost with the agent, want the 2 running at the kill", lost)
	}
	msg := s.jsonpath("pods", `{.items[?(@.status.phase=="Failed")].status.conditions[?(@.type=="DisruptionTarget")].message}`)
	if want := "Pod was terminated because its containers were lost when the node agent restarted."; msg != want+" "+want {
		t.Errorf("DisruptionTarget messages %q, want %q on both lost pods", msg, want)
	}
}
