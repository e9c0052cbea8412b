package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// shWorker is the fine-parallel worker in sh and curl: lease until the
// queue answers 204, retrying while the remaining items are leased (503)
// or the agent is away (000), and say what it did.
const shWorker = `
while :; do
  r=$(curl -s -o item -w '%{http_code} %header{batchlet-lease}' -X POST "$BATCHLET_QUEUE_URL/lease")
  case "${r%% *}" in
  200) echo "done $(cat item)"
       until c=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$BATCHLET_QUEUE_URL/complete/${r#* }"); [ "$c" != 000 ]; do sleep 1; done ;;
  204) exit 0 ;;
  *) sleep 0.2 ;;
  esac
done`

// pyWorker is the same in Python, except that the first lease of item-3
// hangs, for the test to kill it.
const pyWorker = `
import os, time, urllib.request, urllib.error
url = os.environ["BATCHLET_QUEUE_URL"]
def post(path):
    try:
        with urllib.request.urlopen(urllib.request.Request(url + path, method="POST")) as r:
            return r.status, r.headers, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read().decode()
while True:
    code, headers, item = post("/lease")
    if code == 204:
        break
    if code != 200:
        time.sleep(0.2)
        continue
    if item == "item-3" and headers["Batchlet-Attempt"] == "1":
        print("hang " + item, flush=True)
        time.sleep(3600)
    print("done " + item, flush=True)
    post("/complete/" + headers["Batchlet-Lease"])
`

// queueJobYAML is a fine-parallel Job (completions unset) over ConfigMap
// NAME-items, key items, with one container running program.
func queueJobYAML(name string, items int, program ...string) string {
	var lines []string
	for i := 1; i <= items; i++ {
		lines = append(lines, fmt.Sprintf("    item-%d", i))
	}
	var cmd []string
	for _, p := range program {
		cmd = append(cmd, fmt.Sprintf("        - %q", p))
	}
	return fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: %[1]s-items
data:
  items: |
%[2]s
---
apiVersion: batch/v1
kind: Job
metadata:
  name: %[1]s
spec:
  parallelism: 3
  template:
    metadata:
      annotations:
        batchlet.dev/work-queue: configmap/%[1]s-items/items
    spec:
      restartPolicy: Never
      containers:
      - name: worker
        image: busybox
        command:
%[3]s
`, name, strings.Join(lines, "\n"), strings.Join(cmd, "\n"))
}

// doneCounts counts the "done ITEM" lines of the Job's pods' logs.
func (s *server) doneCounts(job string) map[string]int {
	s.t.Helper()
	return doneItems(s.kubectl("logs", "-l", "batch.kubernetes.io/job-name="+job, "--tail=-1", "--prefix"))
}

// doneItems counts the "done ITEM" lines of logs read with --prefix.
func doneItems(logs string) map[string]int {
	counts := map[string]int{}
	for _, m := range regexp.MustCompile(`(?m)\] done (item-\d+)$`).FindAllStringSubmatch(logs, -1) {
		counts[m[1]]++
	}
	return counts
}

// checkEachDoneOnce wants every item of 1..n done exactly once.
func checkEachDoneOnce(t *testing.T, counts map[string]int, n int) {
	t.Helper()
	for i := 1; i <= n; i++ {
		if c := counts[fmt.Sprintf("item-%d", i)]; c != 1 {
			t.Errorf("item-%d processed %d times, want once (all: %v)", i, c, counts)
		}
	}
	if len(counts) != n {
		t.Errorf("processed %d distinct items, want %d: %v", len(counts), n, counts)
	}
}

// TestWorkQueueFineParallel runs the Job docs' "fine parallel processing
// using a work queue" shape on the built-in queue: 3 workers, completions
// unset, 20 items; every item is processed once, every worker exits 0 on
// the empty queue and the Job completes.
func TestWorkQueueFineParallel(t *testing.T) {
	s := startServer(t)
	s.applyYAML(queueJobYAML("fine", 20, "sh", "-c", shWorker))
	s.waitCondition("job/fine", "Complete", 90*time.Second)
	checkEachDoneOnce(t, s.doneCounts("fine"), 20)
	if got := s.jsonpath("job/fine", "{.status.succeeded} {.status.failed}"); got != "3" {
		t.Errorf("succeeded failed = %q, want 3 (no failure)", got)
	}
	got := s.jsonpath("workqueue/fine", "{.status.completed} {.status.completedCount} {.status.leaseCount} {.status.leases}")
	if got != "0-19 20 20" {
		t.Errorf("WorkQueue status (completed, count, leases granted, outstanding) = %q, want \"0-19 20 20\"", got)
	}
}

// TestWorkQueueKilledWorkerReleasesItem: a worker killed while it holds
// item-3 gives the item back; another worker processes it and the Job
// completes with every item done once (Python workers).
func TestWorkQueueKilledWorkerReleasesItem(t *testing.T) {
	s := startServer(t)
	s.applyYAML(queueJobYAML("killed", 6, "python3", "-c", pyWorker))
	var hung string
	eventually(t, 60*time.Second, "a worker hanging on item-3", func() bool {
		out, _ := s.kubectlErr("logs", "-l", "batch.kubernetes.io/job-name=killed", "--tail=-1", "--prefix")
		m := regexp.MustCompile(`(?m)^\[pod/([^/]+)/worker\] hang item-3$`).FindStringSubmatch(out)
		if m != nil {
			hung = m[1]
		}
		return m != nil
	})
	// The other workers cannot finish: item-3 is leased until its pod ends.
	if got := s.jsonpath("workqueue/killed", "{.status.leases[?(@.item==2)].pod}"); got != hung {
		t.Fatalf("item-3's lease is held by %q, want %q", got, hung)
	}
	// Its log goes with it: what it did before item-3 is read now (it
	// sleeps, so nothing follows).
	before := doneItems(s.kubectl("logs", hung, "--prefix"))
	s.kubectl("delete", "pod", hung, "--wait=false")
	s.waitCondition("job/killed", "Complete", 90*time.Second)
	counts := s.doneCounts("killed")
	for item, n := range before {
		counts[item] += n
	}
	checkEachDoneOnce(t, counts, 6)
	if got := s.jsonpath("workqueue/killed", "{.status.completedCount} {.status.attempts[2]} {.status.released}"); got != "6 2 1" {
		t.Errorf("WorkQueue (completed, item-3's leases, released) = %q, want \"6 2 1\"", got)
	}
}

// TestWorkQueueRestartedContainerReleasesItem: under restartPolicy
// OnFailure a worker that crashes on item-3 is restarted in its pod; the
// item it held goes back at once (the pod does not end) and is processed.
func TestWorkQueueRestartedContainerReleasesItem(t *testing.T) {
	s := startServer(t)
	crashing := strings.NewReplacer("import os,", "import os, sys,", "time.sleep(3600)", "sys.exit(1)").Replace(pyWorker)
	job := strings.Replace(queueJobYAML("crash", 6, "python3", "-c", crashing), "restartPolicy: Never", "restartPolicy: OnFailure", 1)
	s.applyYAML(job)
	s.waitCondition("job/crash", "Complete", 90*time.Second)
	if got := s.jsonpath("workqueue/crash", "{.status.completedCount} {.status.attempts[2]} {.status.released}"); got != "6 2 1" {
		t.Errorf("WorkQueue (completed, item-3's leases, released) = %q, want \"6 2 1\"", got)
	}
	if got := s.jsonpath("job/crash", "{.status.succeeded}"); got != "3" {
		t.Errorf("succeeded = %q, want 3", got)
	}
}
