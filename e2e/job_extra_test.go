package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// gateCommand keeps a pod running until /tmp/done exists in its (private)
// /tmp; the test opens the gate with `kubectl exec <pod> -- touch /tmp/done`.
const gateCommand = `["sh", "-c", "until [ -e /tmp/done ]; do sleep 0.2; done"]`

// applyYAML applies a manifest given as a string.
func (s *server) applyYAML(manifest string) {
	s.t.Helper()
	if out, err := s.kubectlStdin(manifest, "apply", "-f", "-"); err != nil {
		s.t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
}

// podsOf lists "name:phase" of the pods of a Job, in list order.
func (s *server) podsOf(job string) []string {
	out := s.jsonpath("pods", `{range .items[?(@.metadata.labels.job-name=="`+job+`")]}{.metadata.name}:{.status.phase} {end}`)
	return strings.Fields(out)
}

// runningPods returns the names of the Running pods whose name has prefix.
func (s *server) runningPods(prefix string) []string {
	var names []string
	for _, p := range strings.Fields(s.jsonpath("pods", `{range .items[*]}{.metadata.name}:{.status.phase} {end}`)) {
		name, phase, _ := strings.Cut(p, ":")
		if strings.HasPrefix(name, prefix) && phase == "Running" {
			names = append(names, name)
		}
	}
	return names
}

// openGate lets gated pods finish.
func (s *server) openGate(pods ...string) {
	s.t.Helper()
	for _, p := range pods {
		s.kubectl("exec", p, "--", "touch", "/tmp/done")
	}
}

// eventLines lists "type/reason/message" of the events of one object.
func (s *server) eventLines(name string) []string {
	out := s.jsonpath("events", `{range .items[?(@.involvedObject.name=="`+name+`")]}{.type}/{.reason}/{.message}{"\n"}{end}`)
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

// lineWatch collects the output lines of a long-running kubectl (a watch).
type lineWatch struct {
	mu     sync.Mutex
	lines  []string
	cancel context.CancelFunc
	done   chan struct{}
}

func (s *server) watchLines(args ...string) *lineWatch {
	s.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "kubectl", args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+s.kubeconfig)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		s.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	w := &lineWatch{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			w.mu.Lock()
			w.lines = append(w.lines, sc.Text())
			w.mu.Unlock()
		}
		_ = cmd.Wait()
	}()
	s.t.Cleanup(w.stop)
	return w
}

func (w *lineWatch) stop() {
	w.cancel()
	<-w.done
}

func (w *lineWatch) snapshot() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.lines...)
}

// watchPods watches every pod and prints "EVENT name phase deleting disruptionReason".
// (kubectl's jsonpath printer cannot use {range} in watch mode: its template
// state leaks from one object to the next.)
func (s *server) watchPods() *lineWatch {
	return s.watchLines("get", "pods", "--watch", "--output-watch-events", "-o",
		`jsonpath={.type} {.object.metadata.name} {.object.status.phase} {.object.metadata.deletionTimestamp} {.object.status.conditions[?(@.type=="DisruptionTarget")].reason}{"\n"}`)
}

func indexOf(lines []string, match func(fields []string) bool) int {
	for i, l := range lines {
		if match(strings.Fields(l)) {
			return i
		}
	}
	return -1
}

func (s *server) expectJSONPath(t *testing.T, resource, path, want string) {
	t.Helper()
	if got := s.jsonpath(resource, path); got != want {
		t.Errorf("%s %s = %q, want %q", resource, path, got, want)
	}
}

const oldJobYAML = `apiVersion: batch/v1
kind: Job
metadata:
  name: old
spec:
  completions: 3
  parallelism: 3
  template:
    spec:
      containers:
      - name: c
        image: busybox
        command: ` + gateCommand + `
      restartPolicy: Never
`

const newJobYAML = `apiVersion: batch/v1
kind: Job
metadata:
  name: new
spec:
  manualSelector: true
  selector:
    matchLabels:
      batch.kubernetes.io/controller-uid: %[1]s
  completions: 5
  parallelism: 5
  template:
    metadata:
      labels:
        batch.kubernetes.io/controller-uid: %[1]s
    spec:
      containers:
      - name: c
        image: busybox
        command: ` + gateCommand + `
      restartPolicy: Never
`

// TestOrphanAndAdopt is seed 000's "specifying your own pod selector": the
// pods of a Job deleted with --cascade=orphan keep running, are released,
// and a new Job with the same (manual) selector adopts and counts them.
func TestOrphanAndAdopt(t *testing.T) {
	s := startServer(t)
	s.applyYAML(oldJobYAML)
	var oldPods []string
	eventually(t, 60*time.Second, "3 running pods of job old", func() bool {
		oldPods = s.runningPods("old-")
		return len(oldPods) == 3
	})
	uid := s.jsonpath("job/old", "{.metadata.uid}")
	if sel := s.jsonpath("job/old", "{.spec.selector.matchLabels}"); sel != `{"batch.kubernetes.io/controller-uid":"`+uid+`"}` {
		t.Fatalf("selector of job old = %s", sel)
	}

	out := s.kubectl("delete", "job", "old", "--cascade=orphan")
	if !strings.Contains(out, `job.batch "old" deleted`) {
		t.Errorf("delete --cascade=orphan: %s", out)
	}
	meta := func(pod string) string {
		return s.jsonpath("pod/"+pod, `{.status.phase}|{.metadata.finalizers}|{range .metadata.ownerReferences[*]}{.kind}/{.name}/{.uid}/{.controller};{end}`)
	}
	eventually(t, 30*time.Second, "job old gone and its pods released", func() bool {
		if _, err := s.kubectlErr("get", "job", "old"); err == nil {
			return false
		}
		for _, p := range oldPods {
			if meta(p) != "Running||" {
				return false
			}
		}
		return true
	})

	s.applyYAML(fmt.Sprintf(newJobYAML, uid))
	newUID := s.jsonpath("job/new", "{.metadata.uid}")
	wantMeta := `Running|["batch.kubernetes.io/job-tracking"]|Job/new/` + newUID + `/true;`
	eventually(t, 30*time.Second, "job new adopts the 3 pods and runs 5", func() bool {
		for _, p := range oldPods {
			if meta(p) != wantMeta {
				return false
			}
		}
		return s.jsonpath("job/new", "{.status.active}") == "5"
	})
	all := s.runningPods("")
	var created []string
	for _, p := range all {
		if strings.HasPrefix(p, "new-") {
			created = append(created, p)
		}
	}
	if len(all) != 5 || len(created) != 2 {
		t.Errorf("running pods = %v, want the 3 adopted and 2 new-*", all)
	}
	var creates []string
	for _, p := range created {
		creates = append(creates, "Normal/SuccessfulCreate/Created pod: "+p)
	}
	if got := s.eventLines("new"); len(got) != 2 || !sameSet(got, creates) {
		t.Errorf("events of job new = %q, want %q", got, creates)
	}

	s.openGate(all...)
	s.waitCondition("job/new", "complete", 60*time.Second)
	s.expectJSONPath(t, "job/new", "{.status.succeeded}|{.status.failed}|{.status.active}", "5||")
	if got := s.conditionTypes("job/new"); got != "SuccessCriteriaMet=True/CompletionsReached;Complete=True/CompletionsReached;" {
		t.Errorf("conditions of job new = %q", got)
	}
	if got := s.eventReasons("new"); got != "SuccessfulCreate,SuccessfulCreate,Completed," {
		t.Errorf("events of job new = %q", got)
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]int{}
	for _, x := range a {
		seen[x]++
	}
	for _, x := range b {
		seen[x]--
	}
	for _, n := range seen {
		if n != 0 {
			return false
		}
	}
	return true
}

const ignoreDisruptionJob = `apiVersion: batch/v1
kind: Job
metadata:
  name: evictme
spec:
  backoffLimit: 0
  podFailurePolicy:
    rules:
    - action: Ignore
      onPodConditions:
      - type: DisruptionTarget
  template:
    spec:
      containers:
      - name: main
        image: busybox
        command: ` + gateCommand + `
      restartPolicy: Never
`

// TestPodFailurePolicyIgnoresEviction is seed 003: with an Ignore rule on
// DisruptionTarget and backoffLimit 0, a pod evicted by a drain is not
// counted and its replacement completes the Job.
func TestPodFailurePolicyIgnoresEviction(t *testing.T) {
	s := startServer(t)
	node := s.jsonpath("nodes", "{.items[0].metadata.name}")
	watch := s.watchPods()
	s.applyYAML(ignoreDisruptionJob)
	var first []string
	eventually(t, 60*time.Second, "a running pod", func() bool {
		first = s.runningPods("evictme-")
		return len(first) == 1
	})
	out := s.kubectl("drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--force", "--timeout=60s")
	for _, want := range []string{"node/" + node + " cordoned", "evicting pod default/" + first[0], "pod/" + first[0] + " evicted", "node/" + node + " drained"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl drain output lacks %q:\n%s", want, out)
		}
	}
	s.kubectl("uncordon", node)

	var second []string
	eventually(t, 60*time.Second, "a running replacement pod", func() bool {
		second = s.runningPods("evictme-")
		return len(second) == 1 && second[0] != first[0]
	})
	if got := s.jsonpath("job/evictme", "{.status.failed}"); got != "" && got != "0" {
		t.Errorf("failed = %q after the ignored eviction, want 0", got)
	}
	s.openGate(second...)
	s.waitCondition("job/evictme", "complete", 60*time.Second)
	s.expectJSONPath(t, "job/evictme", "{.status.succeeded}|{.status.failed}", "1|")
	if got := s.conditionTypes("job/evictme"); got != "SuccessCriteriaMet=True/CompletionsReached;Complete=True/CompletionsReached;" {
		t.Errorf("conditions = %q", got)
	}
	lines := watch.snapshot()
	if indexOf(lines, func(f []string) bool {
		return len(f) >= 4 && f[1] == first[0] && f[2] == "Failed" && f[len(f)-1] == "EvictionByEvictionAPI"
	}) < 0 {
		t.Errorf("the evicted pod %s never was Failed with DisruptionTarget EvictionByEvictionAPI; pod watch:\n%s", first[0], strings.Join(lines, "\n"))
	}
	if got := s.eventReasons("evictme"); got != "SuccessfulCreate,SuccessfulCreate,Completed," {
		t.Errorf("events of job evictme = %q", got)
	}
}

const backoffJob = `apiVersion: batch/v1
kind: Job
metadata:
  name: failing
spec:
  backoffLimit: 2
  template:
    spec:
      containers:
      - name: main
        image: busybox
        command: ["sh", "-c", "exit 1"]
      restartPolicy: Never
`

// TestBackoffLimitExceeded: every pod fails; the third failure fails the Job.
func TestBackoffLimitExceeded(t *testing.T) {
	s := startServer(t)
	s.applyYAML(backoffJob)
	s.waitCondition("job/failing", "failed", 90*time.Second)
	s.expectJSONPath(t, "job/failing", "{.status.failed}|{.status.succeeded}|{.status.active}", "3||")
	if got := s.conditionTypes("job/failing"); got != "FailureTarget=True/BackoffLimitExceeded;Failed=True/BackoffLimitExceeded;" {
		t.Errorf("conditions = %q", got)
	}
	s.expectJSONPath(t, "job/failing", `{.status.conditions[?(@.type=="Failed")].message}`, "Job has reached the specified backoff limit")
	events := s.eventLines("failing")
	want := []string{"Normal/SuccessfulCreate", "Normal/SuccessfulCreate", "Normal/SuccessfulCreate", "Warning/BackoffLimitExceeded/Job has reached the specified backoff limit"}
	if len(events) != len(want) {
		t.Fatalf("events = %q", events)
	}
	for i, w := range want {
		if !strings.HasPrefix(events[i], w) {
			t.Errorf("event %d = %q, want prefix %q", i, events[i], w)
		}
	}
	if pods := s.podsOf("failing"); len(pods) != 3 {
		t.Errorf("pods = %v, want 3 Failed", pods)
	}
	for _, p := range s.podsOf("failing") {
		if !strings.HasSuffix(p, ":Failed") {
			t.Errorf("pod %s, want Failed", p)
		}
	}
}

const replaceOnFailedJob = `apiVersion: batch/v1
kind: Job
metadata:
  name: replace
spec:
  podReplacementPolicy: Failed
  backoffLimit: 3
  template:
    spec:
      containers:
      - name: main
        image: busybox
        command: ["sh", "-c", "trap 'sleep 2; exit 1' TERM; until [ -e /tmp/done ]; do sleep 0.2; done"]
      restartPolicy: Never
`

const replaceAtOnceJob = `apiVersion: batch/v1
kind: Job
metadata:
  name: atonce
spec:
  backoffLimit: 3
  template:
    spec:
      containers:
      - name: main
        image: busybox
        command: ["sh", "-c", "trap 'sleep 60; exit 1' TERM; until [ -e /tmp/done ]; do sleep 0.2; done"]
      restartPolicy: Never
`

// TestPodReplacementPolicyFailed: a deleted pod that is still terminating is
// counted in status.terminating and not replaced until it is Failed. The
// default policy (TerminatingOrFailed, Job atonce, run alongside) counts it
// failed at once and replaces it after the backoff while it still terminates.
func TestPodReplacementPolicyFailed(t *testing.T) {
	s := startServer(t)
	watch := s.watchPods()
	s.applyYAML(replaceOnFailedJob)
	s.applyYAML(replaceAtOnceJob)
	var first, atOnce []string
	eventually(t, 60*time.Second, "a running pod of each Job", func() bool {
		first, atOnce = s.runningPods("replace-"), s.runningPods("atonce-")
		return len(first) == 1 && len(atOnce) == 1
	})
	s.kubectl("delete", "pod", first[0], atOnce[0], "--wait=false")
	eventually(t, 30*time.Second, "terminating 1", func() bool {
		return s.jsonpath("job/replace", "{.status.terminating}|{.status.active}") == "1|"
	})
	if pods := s.podsOf("replace"); len(pods) != 1 || !strings.HasPrefix(pods[0], first[0]+":") {
		t.Errorf("pods while the first one terminates = %v, want only %s", pods, first[0])
	}
	var second []string
	eventually(t, 60*time.Second, "a running replacement", func() bool {
		second = s.runningPods("replace-")
		return len(second) == 1 && second[0] != first[0]
	})
	s.expectJSONPath(t, "job/replace", "{.status.terminating}|{.status.failed}|{.status.active}", "0|1|1")
	s.openGate(second...)
	s.waitCondition("job/replace", "complete", 60*time.Second)
	s.expectJSONPath(t, "job/replace", "{.status.succeeded}|{.status.failed}|{.status.terminating}", "1|1|0")

	eventually(t, 30*time.Second, "job atonce replaces the pod that still terminates", func() bool {
		pods := s.podsOf("atonce")
		return len(pods) == 2 && s.jsonpath("pod/"+atOnce[0], "{.metadata.deletionTimestamp}") != ""
	})
	s.expectJSONPath(t, "job/atonce", "{.status.active}|{.status.terminating}|{.status.failed}", "1|1|1")
	s.kubectl("delete", "pod", atOnce[0], "--grace-period=0", "--force") // do not wait out its trap
	s.openGate(s.runningPods("atonce-")...)
	s.waitCondition("job/atonce", "complete", 60*time.Second)
	s.expectJSONPath(t, "job/atonce", "{.status.succeeded}|{.status.failed}|{.status.terminating}", "1|1|0")

	lines := watch.snapshot()
	failed := indexOf(lines, func(f []string) bool { return len(f) >= 3 && f[1] == first[0] && f[2] == "Failed" })
	added := indexOf(lines, func(f []string) bool { return len(f) >= 2 && f[0] == "ADDED" && f[1] == second[0] })
	if failed < 0 || added < 0 || added < failed {
		t.Errorf("the replacement %s was created (line %d) before %s was Failed (line %d):\n%s", second[0], added, first[0], failed, strings.Join(lines, "\n"))
	}
}

const successPolicyJob = `apiVersion: batch/v1
kind: Job
metadata:
  name: leader
spec:
  completionMode: Indexed
  completions: 3
  parallelism: 3
  successPolicy:
    rules:
    - succeededIndexes: "0"
  template:
    spec:
      containers:
      - name: main
        image: busybox
        command: ["sh", "-c", "if [ \"$JOB_COMPLETION_INDEX\" = 0 ]; then until [ -e /tmp/done ]; do sleep 0.2; done; exit 0; fi; sleep 300"]
      restartPolicy: Never
`

// TestSuccessPolicyIndexZero: the Job succeeds as soon as index 0 does; the
// other pods are deleted and not counted as failed.
func TestSuccessPolicyIndexZero(t *testing.T) {
	s := startServer(t)
	s.applyYAML(successPolicyJob)
	var pods []string
	eventually(t, 60*time.Second, "3 running pods", func() bool {
		pods = s.runningPods("leader-")
		return len(pods) == 3
	})
	leader := s.jsonpath("pods", `{.items[?(@.metadata.annotations.batch\.kubernetes\.io/job-completion-index=="0")].metadata.name}`)
	if !strings.HasPrefix(leader, "leader-0-") {
		t.Fatalf("pod of index 0 = %q", leader)
	}
	s.openGate(leader)
	s.waitCondition("job/leader", "complete", 60*time.Second)
	s.expectJSONPath(t, "job/leader", "{.status.succeeded}|{.status.failed}|{.status.active}|{.status.completedIndexes}|{.status.failedIndexes}", "1|||0|")
	if got := s.conditionTypes("job/leader"); got != "SuccessCriteriaMet=True/SuccessPolicy;Complete=True/SuccessPolicy;" {
		t.Errorf("conditions = %q", got)
	}
	s.expectJSONPath(t, "job/leader", `{range .status.conditions[*]}{.message};{end}`, "Matched rules at index 0;Matched rules at index 0;")
	events := s.eventLines("leader")
	var reasons []string
	for _, e := range events {
		reasons = append(reasons, strings.SplitN(e, "/", 3)[1])
	}
	if got := strings.Join(reasons, ","); got != "SuccessfulCreate,SuccessfulCreate,SuccessfulCreate,SuccessfulDelete,SuccessfulDelete,Completed" {
		t.Errorf("events = %q", events)
	}
	var others []string
	for _, p := range pods {
		if p != leader {
			others = append(others, "Normal/SuccessfulDelete/Deleted pod: "+p)
		}
	}
	if len(events) == 6 && (!sameSet(events[3:5], others) || events[5] != "Normal/Completed/Job completed") {
		t.Errorf("events = %q, want deletes %q then Normal/Completed/Job completed", events, others)
	}
	eventually(t, 30*time.Second, "the other pods gone", func() bool {
		left := s.podsOf("leader")
		return len(left) == 1 && left[0] == leader+":Succeeded"
	})
}

const workQueueJob = `apiVersion: batch/v1
kind: Job
metadata:
  name: queue
spec:
  parallelism: 3
  template:
    spec:
      containers:
      - name: worker
        image: busybox
        command: ["sh", "-c", "exit 0"]
      restartPolicy: Never
`

// TestWorkQueueJob: completions unset, parallelism 3, every worker exits 0.
func TestWorkQueueJob(t *testing.T) {
	s := startServer(t)
	s.applyYAML(workQueueJob)
	s.waitCondition("job/queue", "complete", 60*time.Second)
	s.expectJSONPath(t, "job/queue", "{.spec.completions}|{.status.succeeded}|{.status.failed}|{.status.active}", "|3||")
	if got := s.conditionTypes("job/queue"); got != "SuccessCriteriaMet=True/CompletionsReached;Complete=True/CompletionsReached;" {
		t.Errorf("conditions = %q", got)
	}
	if got := s.eventReasons("queue"); got != "SuccessfulCreate,SuccessfulCreate,SuccessfulCreate,Completed," {
		t.Errorf("events = %q", got)
	}
	if got := strings.Join(strings.Fields(s.kubectl("get", "job", "queue", "--no-headers")), " "); !strings.HasPrefix(got, "queue Complete 3/1 of 3 ") {
		t.Errorf("kubectl get job queue = %q, want queue Complete 3/1 of 3 …", got)
	}
}
