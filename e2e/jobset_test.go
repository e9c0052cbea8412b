package e2e

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The JobSet acceptance tests run the seed 004 examples (copies with
// shortened sleeps and fast failure triggers) against one server, each
// scenario in its own namespace, in parallel.

const (
	restartAttemptLabel    = "jobset.sigs.k8s.io/restart-attempt"
	jobRestartAttemptLabel = "jobset.sigs.k8s.io/job-restart-attempt"
	jobSetTimeout          = 120 * time.Second
)

// nsClient is a server seen from one subtest, bound to one namespace.
type nsClient struct {
	*server
	ns string
}

// inNamespace returns a copy of s that fails t (not the parent test) and
// works in a new namespace ns.
func (s *server) inNamespace(t *testing.T, ns string) *nsClient {
	t.Helper()
	c := *s
	c.t = t
	c.kubectl("create", "namespace", ns)
	return &nsClient{server: &c, ns: ns}
}

func (c *nsClient) k(args ...string) string {
	c.t.Helper()
	return c.kubectl(append([]string{"-n", c.ns}, args...)...)
}

// get reads a jsonpath of a resource; "" when it cannot be read.
func (c *nsClient) get(resource, path string) string {
	out, err := c.kubectlErr("-n", c.ns, "get", resource, "-o", "jsonpath="+path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

func (c *nsClient) apply(manifest string) {
	c.t.Helper()
	if out, err := c.kubectlStdin(manifest, "-n", c.ns, "apply", "-f", "-"); err != nil {
		c.t.Fatalf("apply: %v\n%s", err, out)
	}
}

func (c *nsClient) cond(js, typ, field string) string {
	return c.get("jobset/"+js, `{.status.conditions[?(@.type=="`+typ+`")].`+field+`}`)
}

// waitJobSetCondition polls until the JobSet has condition typ=True.
func (c *nsClient) waitJobSetCondition(js, typ string) {
	c.t.Helper()
	eventually(c.t, jobSetTimeout, "jobset/"+js+" "+typ, func() bool {
		return c.cond(js, typ, "status") == "True"
	})
}

// events lists the reasons of the events of one object, oldest first, an
// aggregated event (count n) n times.
func (c *nsClient) events(name string) []string {
	out := c.get("events", `{range .items[?(@.involvedObject.name=="`+name+`")]}{.reason} {.count}{"\n"}{end}`)
	var reasons []string
	for _, line := range strings.Split(out, "\n") {
		reason, n, _ := strings.Cut(line, " ")
		k, err := strconv.Atoi(n)
		if err != nil || k < 1 {
			k = 1
		}
		for ; reason != "" && k > 0; k-- {
			reasons = append(reasons, reason)
		}
	}
	return reasons
}

func count(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

// podOf returns the name of the running pod of child Job job and index idx.
func (c *nsClient) podOf(job, idx string) string {
	c.t.Helper()
	var name string
	eventually(c.t, jobSetTimeout, "running pod of "+job+" index "+idx, func() bool {
		name = c.get("pods", `{range .items[?(@.status.phase=="Running")]}{.metadata.labels.batch\.kubernetes\.io/job-name}/{.metadata.labels.batch\.kubernetes\.io/job-completion-index}={.metadata.name}{"\n"}{end}`)
		for _, line := range strings.Split(name, "\n") {
			if k, v, ok := strings.Cut(line, "="); ok && k == job+"/"+idx {
				name = v
				return true
			}
		}
		return false
	})
	return name
}

// seedCopy reads an example and applies replacements, failing if one of the
// old strings is missing (the seed changed).
func seedCopy(t *testing.T, file string, oldNew ...string) string {
	t.Helper()
	b, err := os.ReadFile(example(file))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for i := 0; i+1 < len(oldNew); i += 2 {
		if !strings.Contains(s, oldNew[i]) {
			t.Fatalf("%s lacks %q", file, oldNew[i])
		}
		s = strings.ReplaceAll(s, oldNew[i], oldNew[i+1])
	}
	return s
}

// fastLeader shortens the leader's 10 s countdown to n seconds.
func fastLeader(t *testing.T, file, n string) string {
	return seedCopy(t, file, "seq 10 -1 1", "seq "+n+" -1 1")
}

func TestJobSetSeedExamples(t *testing.T) {
	s := startServer(t)
	t.Run("FailJobSet", func(t *testing.T) { t.Parallel(); testFailJobSet(s.inNamespace(t, "failjobset")) })
	t.Run("RestartJobSet", func(t *testing.T) { t.Parallel(); testRestartJobSet(s.inNamespace(t, "restartjobset")) })
	t.Run("RestartJobSetAndIgnoreMaxRestarts", func(t *testing.T) {
		t.Parallel()
		c := s.inNamespace(t, "rjimr")
		testIgnoreMaxRestarts(c, fastLeader(t, "jobset-rjimr-action-example.yaml", "1"), "rjimr-action-example")
	})
	t.Run("OnJobFailureReasonsBackoffLimitExceeded", func(t *testing.T) {
		t.Parallel()
		c := s.inNamespace(t, "reasons-backoff")
		testIgnoreMaxRestarts(c, fastLeader(t, "jobset-onjobfailurereasons-present-example.yaml", "1"), "onjobfailurereasons-present-example")
		if ev := c.events("onjobfailurereasons-present-example-leader-0"); count(ev, "BackoffLimitExceeded") < 4 {
			t.Errorf("events of the leader Job = %v, want BackoffLimitExceeded on each attempt", ev)
		}
		if ev := c.events("onjobfailurereasons-present-example"); count(ev, "RestartJobSetAndIgnoreMaxRestartsFailurePolicyAction") < 4 {
			t.Errorf("events of the JobSet = %v, want RestartJobSetAndIgnoreMaxRestartsFailurePolicyAction on each restart", ev)
		}
	})
	t.Run("OnJobFailureReasonsPodFailurePolicy", func(t *testing.T) {
		t.Parallel()
		c := s.inNamespace(t, "reasons-pfp")
		testIgnoreMaxRestarts(c, fastLeader(t, "jobset-onjobfailurereasons-podfailurepolicy-example.yaml", "1"), "onjobfailurereasons-podfailurepolicy-example")
		if ev := c.events("onjobfailurereasons-podfailurepolicy-example-leader-0"); count(ev, "PodFailurePolicy") < 4 {
			t.Errorf("events of the leader Job = %v, want PodFailurePolicy on each attempt", ev)
		}
	})
	t.Run("RecreateJob", func(t *testing.T) { t.Parallel(); testRecreateJob(s.inNamespace(t, "recreatejob")) })
	t.Run("RecreateJobCountsTowardMax", func(t *testing.T) { t.Parallel(); testRecreateJobMax(s.inNamespace(t, "recreatemax")) })
	t.Run("HostMaintenance", func(t *testing.T) { t.Parallel(); testHostMaintenance(s.inNamespace(t, "maintenance")) })
	t.Run("SuspendResumeTTL", func(t *testing.T) { t.Parallel(); testSuspendResume(s.inNamespace(t, "suspend")) })
	t.Run("Validation", func(t *testing.T) { t.Parallel(); testValidation(s.inNamespace(t, "validation")) })
	t.Run("NoFailurePolicy", func(t *testing.T) { t.Parallel(); testNoFailurePolicy(s.inNamespace(t, "nopolicy")) })
	t.Run("SuccessPolicyAny", func(t *testing.T) { t.Parallel(); testSuccessPolicyAny(s.inNamespace(t, "successany")) })
	t.Run("StartupPolicyInOrder", func(t *testing.T) { t.Parallel(); testInOrder(s.inNamespace(t, "inorder")) })
}

func testFailJobSet(c *nsClient) {
	t := c.t
	const js = "failjobset-action-example"
	c.apply(fastLeader(t, "jobset-failjobset-action-example.yaml", "1"))
	c.waitJobSetCondition(js, "Failed")
	if got := c.cond(js, "Failed", "reason"); got != "FailJobSetFailurePolicyAction" {
		t.Errorf("Failed reason = %q", got)
	}
	if got, want := c.cond(js, "Failed", "message"), "applying FailJobSet failure policy action (first failed job: "+js+"-leader-0)"; got != want {
		t.Errorf("Failed message = %q, want %q", got, want)
	}
	if got := c.get("jobset/"+js, "{.status.terminalState}|{.status.restarts}"); got != "Failed|0" {
		t.Errorf("terminalState|restarts = %q, want Failed|0", got)
	}
	eventually(t, 30*time.Second, "workers Job deleted", func() bool {
		return c.get("jobs", "{.items[*].metadata.name}") == js+"-leader-0"
	})
	if got := c.get("job/"+js+"-leader-0", `{.status.conditions[?(@.type=="Failed")].status}`); got != "True" {
		t.Errorf("leader Job Failed = %q, want True", got)
	}
	if ev := c.events(js); count(ev, "FailJobSetFailurePolicyAction") != 1 {
		t.Errorf("events of %s = %v, want one FailJobSetFailurePolicyAction", js, ev)
	}
}

func testRestartJobSet(c *nsClient) {
	t := c.t
	const js = "restartjobset-action-example"
	// The leader must outlive the moment every Job is ready (JobsReady), as
	// the seed's 10 s do, or a restart's RestartingJobSet condition never
	// flips back and its event is not repeated; 4 s leaves room under load.
	c.apply(fastLeader(t, "jobset-restartjobset-action-example.yaml", "4"))
	seen := map[string]bool{}
	eventually(t, 3*jobSetTimeout, "jobset Failed", func() bool {
		for _, v := range strings.Fields(c.get("jobs", `{range .items[*]}{.metadata.labels.jobset\.sigs\.k8s\.io/restart-attempt} {end}`)) {
			seen[v] = true
		}
		return c.cond(js, "Failed", "status") == "True"
	})
	if got := c.cond(js, "Failed", "reason") + "|" + c.cond(js, "Failed", "message"); got != "ReachedMaxRestarts|jobset failed due to reaching max number of restarts (first failed job: "+js+"-leader-0)" {
		t.Errorf("Failed = %q", got)
	}
	if got := c.get("jobset/"+js, "{.status.restarts}|{.status.restartsCountTowardsMax}|{.status.terminalState}"); got != "3|3|Failed" {
		t.Errorf("restarts|restartsCountTowardsMax|terminalState = %q, want 3|3|Failed", got)
	}
	if got := c.cond(js, "RestartingJobSet", "status") + "/" + c.cond(js, "RestartingJobSet", "reason") + "/" + c.cond(js, "RestartingJobSet", "message"); got != "False/JobSetFailed/jobset failed" {
		t.Errorf("RestartingJobSet = %q", got)
	}
	var attempts []string
	for v := range seen {
		attempts = append(attempts, v)
	}
	sort.Strings(attempts)
	if strings.Join(attempts, ",") != "0,1,2,3" {
		t.Errorf("restart-attempt labels seen on child Jobs = %v, want 0..3", attempts)
	}
	ev := c.events(js)
	for reason, n := range map[string]int{"RestartJobSetFailurePolicyAction": 3, "ReachedMaxRestarts": 1} {
		if count(ev, reason) != n {
			t.Errorf("events of %s = %v, want %d × %s", js, ev, n, reason)
		}
	}
	// The rule's event goes with the RestartingJobSet condition turning
	// True: once, and again after each time every Job became ready
	// (JobsReady turns it False). Under load a restart can come before
	// JobsReady, so count against JobsReady rather than the restarts.
	if rule, ready := count(ev, "FailurePolicy_failurePolicyRule0"), count(ev, "JobsReady"); rule < 1 || rule > 3 || rule > 1+ready {
		t.Errorf("events of %s = %v: %d × FailurePolicy_failurePolicyRule0 with %d × JobsReady, want 1 + one per JobsReady, at most 3", js, ev, rule, ready)
	}
}

// testIgnoreMaxRestarts runs a JobSet whose leader always fails and whose
// rule restarts it without counting: restarts grow, the count toward
// maxRestarts stays 0 and the JobSet never fails.
func testIgnoreMaxRestarts(c *nsClient, manifest, js string) {
	t := c.t
	c.apply(manifest)
	eventually(t, 3*jobSetTimeout, "4 restarts", func() bool {
		n, _ := strconv.Atoi(c.get("jobset/"+js, "{.status.restarts}"))
		return n >= 4
	})
	if got := c.get("jobset/"+js, "{.status.restartsCountTowardsMax}"); got != "" && got != "0" {
		t.Errorf("restartsCountTowardsMax = %q, want 0", got)
	}
	if got := c.cond(js, "Failed", "status"); got == "True" {
		t.Errorf("JobSet failed: %s", c.cond(js, "Failed", "message"))
	}
	if got := c.get("jobset/"+js, "{.status.terminalState}"); got != "" {
		t.Errorf("terminalState = %q", got)
	}
	c.k("delete", "jobset", js, "--wait=false")
}

// exec runs a command in a pod of the namespace.
func (c *nsClient) exec(pod string, cmd ...string) {
	c.t.Helper()
	c.k(append([]string{"exec", pod, "--"}, cmd...)...)
}

func (c *nsClient) uid(resource string) string { return c.get(resource, "{.metadata.uid}") }

func testRecreateJob(c *nsClient) {
	t := c.t
	const js = "test"
	c.apply(seedCopy(t, "jobset-recreatejob-example.yaml"))
	pod := c.podOf(js+"-workers-a-0", "0")
	others := map[string]string{}
	for _, j := range []string{"workers-a-1", "workers-b-0", "workers-b-1", "workers-b-2"} {
		others[j] = c.uid("job/" + js + "-" + j)
	}
	oldUID := c.uid("job/" + js + "-workers-a-0")
	c.exec(pod, "touch", "/tmp/fail")
	eventually(t, jobSetTimeout, "workers-a-0 recreated", func() bool {
		u := c.uid("job/" + js + "-workers-a-0")
		return u != "" && u != oldUID
	})
	if got := c.get("job/"+js+"-workers-a-0", `{.metadata.labels.jobset\.sigs\.k8s\.io/job-restart-attempt}`); got != "1" {
		t.Errorf("recreated Job label %s = %q, want 1", jobRestartAttemptLabel, got)
	}
	for j, u := range others {
		if got := c.uid("job/" + js + "-" + j); got != u {
			t.Errorf("Job %s was recreated (uid %s -> %s); only workers-a-0 should be", j, u, got)
		}
	}
	if got := c.get("jobset/"+js, "{.status.restarts}"); got != "0" {
		t.Errorf("restarts = %q after a per-Job restart, want 0", got)
	}
	if got := c.get("jobset/"+js, `{.status.replicatedJobsStatus[?(@.name=="workers-a")].jobRestarts}`); got != "[1,0]" {
		t.Errorf("workers-a jobRestarts = %q, want [1,0]", got)
	}
	if ev := c.events(js); count(ev, "RestartJobFailurePolicyAction") != 1 {
		t.Errorf("events of %s = %v, want one RestartJobFailurePolicyAction", js, ev)
	}

	// A failure in workers-b (no rule targets it) restarts the whole JobSet.
	c.exec(c.podOf(js+"-workers-b-1", "0"), "touch", "/tmp/fail")
	eventually(t, jobSetTimeout, "JobSet restarted", func() bool {
		return c.get("jobset/"+js, "{.status.restarts}") == "1"
	})
	eventually(t, jobSetTimeout, "all child Jobs recreated with restart-attempt 1", func() bool {
		got := c.get("jobs", `{range .items[*]}{.metadata.labels.jobset\.sigs\.k8s\.io/restart-attempt}{end}`)
		return got == "11111"
	})
	if ev := c.events(js); count(ev, "DefaultFailurePolicy") != 1 {
		t.Errorf("events of %s = %v, want one DefaultFailurePolicy", js, ev)
	}

	// Every worker succeeds: the JobSet completes.
	for _, j := range []string{"workers-a-0", "workers-a-1", "workers-b-0", "workers-b-1", "workers-b-2"} {
		for _, idx := range []string{"0", "1"} {
			c.exec(c.podOf(js+"-"+j, idx), "touch", "/tmp/succeed")
		}
	}
	c.waitJobSetCondition(js, "Completed")
	if got := c.cond(js, "Completed", "reason") + "|" + c.cond(js, "Completed", "message"); got != "AllJobsCompleted|jobset completed successfully" {
		t.Errorf("Completed = %q", got)
	}
}

const recreateMaxJobSet = `apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: rjmax
spec:
  failurePolicy:
    maxRestarts: 3
    rules:
    - action: RecreateJob
      targetReplicatedJobs:
      - workers-a
  replicatedJobs:
  - name: workers-a
    replicas: 2
    template:
      spec:
        backoffLimit: 0
        template:
          spec:
            restartPolicy: Never
            containers:
            - name: worker
              image: busybox
              command: ["sh", "-c", "case $HOSTNAME in *workers-a-0-*) sleep 0.2; exit 1;; esac; sleep 1000"]
  - name: workers-b
    replicas: 1
    template:
      spec:
        template:
          spec:
            containers:
            - name: worker
              image: busybox
              command: ["sh", "-c", "sleep 1000"]
`

// testRecreateJobMax: per-Job restarts count toward maxRestarts; the 4th
// failure of workers-a-0 with maxRestarts 3 fails the JobSet.
func testRecreateJobMax(c *nsClient) {
	t := c.t
	const js = "rjmax"
	c.apply(recreateMaxJobSet)
	c.waitJobSetCondition(js, "Failed")
	if got, want := c.cond(js, "Failed", "reason")+"|"+c.cond(js, "Failed", "message"), "ReachedMaxRestarts|jobset failed due to reaching max number of restarts (first failed job: rjmax-workers-a-0)"; got != want {
		t.Errorf("Failed = %q, want %q", got, want)
	}
	if got := c.get("jobset/"+js, `{.status.restarts}|{.status.replicatedJobsStatus[?(@.name=="workers-a")].jobRestarts}|{.status.replicatedJobsStatus[?(@.name=="workers-a")].jobRestartsCountTowardsMax}`); got != "0|[3,0]|[3,0]" {
		t.Errorf("restarts|jobRestarts|jobRestartsCountTowardsMax = %q, want 0|[3,0]|[3,0]", got)
	}
	if got := c.get("job/rjmax-workers-a-0", `{.metadata.labels.jobset\.sigs\.k8s\.io/job-restart-attempt}`); got != "3" {
		t.Errorf("last workers-a-0 Job has %s %q, want 3", jobRestartAttemptLabel, got)
	}
	if ev := c.events(js); count(ev, "RestartJobFailurePolicyAction") != 3 || count(ev, "ReachedMaxRestarts") != 1 {
		t.Errorf("events of %s = %v, want 3 × RestartJobFailurePolicyAction then ReachedMaxRestarts", js, ev)
	}
}

func (c *nsClient) evict(pod string) {
	c.t.Helper()
	body := `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"` + pod + `","namespace":"` + c.ns + `"}}`
	if out, err := c.kubectlStdin(body, "create", "--raw", "/api/v1/namespaces/"+c.ns+"/pods/"+pod+"/eviction", "-f", "-"); err != nil {
		c.t.Fatalf("evict %s: %v\n%s", pod, err, out)
	}
}

func testHostMaintenance(c *nsClient) {
	t := c.t
	const js = "host-maintenance-event-model"
	// The leader's index 0 fails when told to (instead of after 120 s).
	c.apply(seedCopy(t, "jobset-host-maintenance-event-model.yaml",
		`echo "Sleeping in $i"`, `[ -f /tmp/fail ] && break; echo "Sleeping in $i"`))
	leader := js + "-leader-0"
	pod := c.podOf(leader, "0")
	c.evict(pod)
	eventually(t, jobSetTimeout, "restart after eviction", func() bool {
		return c.get("jobset/"+js, "{.status.restarts}") == "1"
	})
	if got := c.get("jobset/"+js, "{.status.restartsCountTowardsMax}"); got != "" && got != "0" {
		t.Errorf("restartsCountTowardsMax after eviction = %q, want 0", got)
	}
	if ev := c.events(leader); count(ev, "PodFailurePolicy") != 1 {
		t.Errorf("events of the evicted leader Job = %v, want one PodFailurePolicy", ev)
	}
	if ev := c.events(js); count(ev, "RestartJobSetAndIgnoreMaxRestartsFailurePolicyAction") != 1 {
		t.Errorf("events of %s = %v, want one RestartJobSetAndIgnoreMaxRestartsFailurePolicyAction", js, ev)
	}
	if got := c.cond(js, "Failed", "status"); got == "True" {
		t.Fatalf("JobSet failed after an eviction: %s", c.cond(js, "Failed", "message"))
	}
	eventually(t, jobSetTimeout, "new leader Job", func() bool {
		return c.get("job/"+leader, `{.metadata.labels.jobset\.sigs\.k8s\.io/restart-attempt}`) == "1"
	})
	// A plain failure of the leader is not a PodFailurePolicy failure:
	// RestartJobSet with maxRestarts 0 fails the JobSet.
	c.exec(c.podOf(leader, "0"), "touch", "/tmp/fail")
	c.waitJobSetCondition(js, "Failed")
	if got, want := c.cond(js, "Failed", "reason")+"|"+c.cond(js, "Failed", "message"), "ReachedMaxRestarts|jobset failed due to reaching max number of restarts (first failed job: "+leader+")"; got != want {
		t.Errorf("Failed = %q, want %q", got, want)
	}
	if got := c.get("jobset/"+js, "{.status.restarts}|{.status.restartsCountTowardsMax}"); got != "1|" && got != "1|0" {
		t.Errorf("restarts|restartsCountTowardsMax = %q, want 1|0", got)
	}
}

const noPolicyJobSet = `apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: nopolicy
spec:
  replicatedJobs:
  - name: leader
    replicas: 1
    template:
      spec:
        backoffLimit: 0
        template:
          spec:
            restartPolicy: Never
            containers:
            - name: leader
              image: bash:latest
              command: ["sh", "-c", "exit 1"]
  - name: workers
    replicas: 1
    template:
      spec:
        template:
          spec:
            containers:
            - name: worker
              image: bash:latest
              command: ["sh", "-c", "sleep 1000"]
`

func testNoFailurePolicy(c *nsClient) {
	t := c.t
	c.apply(noPolicyJobSet)
	c.waitJobSetCondition("nopolicy", "Failed")
	if got := c.cond("nopolicy", "Failed", "reason") + "|" + c.cond("nopolicy", "Failed", "message"); got != "FailedJobs|jobset failed due to one or more job failures (first failed job: nopolicy-leader-0)" {
		t.Errorf("Failed = %q", got)
	}
	if got := c.get("jobset/nopolicy", "{.status.terminalState}|{.status.restarts}"); got != "Failed|0" {
		t.Errorf("terminalState|restarts = %q", got)
	}
}

const successAnyJobSet = `apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: successany
spec:
  successPolicy:
    operator: Any
    targetReplicatedJobs:
    - workers
  replicatedJobs:
  - name: leader
    replicas: 1
    template:
      spec:
        template:
          spec:
            containers:
            - name: leader
              image: bash:latest
              command: ["sh", "-c", "sleep 1000"]
  - name: workers
    replicas: 2
    template:
      spec:
        completions: 2
        parallelism: 2
        template:
          spec:
            containers:
            - name: worker
              image: bash:latest
              command: ["sh", "-c", "exit 0"]
`

func testSuccessPolicyAny(c *nsClient) {
	t := c.t
	c.apply(successAnyJobSet)
	c.waitJobSetCondition("successany", "Completed")
	if got := c.cond("successany", "Completed", "reason") + "|" + c.cond("successany", "Completed", "message"); got != "AllJobsCompleted|jobset completed successfully" {
		t.Errorf("Completed = %q", got)
	}
	if got := c.get("jobset/successany", "{.status.terminalState}"); got != "Completed" {
		t.Errorf("terminalState = %q", got)
	}
	eventually(t, 30*time.Second, "leader Job deleted", func() bool {
		_, err := c.kubectlErr("-n", c.ns, "get", "job", "successany-leader-0")
		return err != nil
	})
}

const inOrderJobSet = `apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: inorder
spec:
  startupPolicy:
    startupPolicyOrder: InOrder
  replicatedJobs:
  - name: leader
    replicas: 1
    template:
      spec:
        template:
          spec:
            containers:
            - name: leader
              image: bash:latest
              command: ["sh", "-c", "while [ ! -f /tmp/done ]; do sleep 0.2; done"]
              readinessProbe:
                exec:
                  command: ["test", "-f", "/tmp/ready"]
                periodSeconds: 1
  - name: workers
    replicas: 2
    template:
      spec:
        template:
          spec:
            containers:
            - name: worker
              image: bash:latest
              command: ["sh", "-c", "exit 0"]
`

// testInOrder: the workers Jobs are created only once the leader's pod is
// ready (its readiness probe passes once /tmp/ready exists).
func testInOrder(c *nsClient) {
	t := c.t
	c.apply(inOrderJobSet)
	leader := c.podOf("inorder-leader-0", "0")
	eventually(t, jobSetTimeout, "StartupPolicyInProgress", func() bool {
		return c.cond("inorder", "StartupPolicyInProgress", "status") == "True"
	})
	if got := c.cond("inorder", "StartupPolicyInProgress", "reason") + "/" + c.cond("inorder", "StartupPolicyInProgress", "message"); got != "InOrderStartupPolicyInProgress/in order startup policy is in progress" {
		t.Errorf("StartupPolicyInProgress = %q", got)
	}
	if jobs := c.get("jobs", "{.items[*].metadata.name}"); jobs != "inorder-leader-0" {
		t.Errorf("Jobs while the leader is not ready = %q, want only inorder-leader-0", jobs)
	}
	c.exec(leader, "touch", "/tmp/ready")
	eventually(t, jobSetTimeout, "StartupPolicyCompleted", func() bool {
		return c.cond("inorder", "StartupPolicyCompleted", "status") == "True"
	})
	if got := c.cond("inorder", "StartupPolicyCompleted", "reason") + "/" + c.cond("inorder", "StartupPolicyCompleted", "message"); got != "InOrderStartupPolicyCompleted/in order startup policy has completed" {
		t.Errorf("StartupPolicyCompleted = %q", got)
	}
	if got := c.cond("inorder", "StartupPolicyInProgress", "status"); got != "False" {
		t.Errorf("StartupPolicyInProgress = %q after completion, want False", got)
	}
	// The leader exits as soon as it sees the file, and its PID namespace
	// goes with it: an exec still exiting then ends with SIGKILL (137) after
	// doing its work, as it would under a kubelet.
	if out, err := c.kubectlErr("-n", c.ns, "exec", leader, "--", "touch", "/tmp/done"); err != nil && !strings.Contains(out, "exit code 137") {
		t.Fatalf("exec touch /tmp/done: %v\n%s", err, out)
	}
	c.waitJobSetCondition("inorder", "Completed")
	if got := c.cond("inorder", "Completed", "reason"); got != "AllJobsCompleted" {
		t.Errorf("Completed reason = %q", got)
	}
}

const dnsJobSet = `apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: dns
spec:
  replicatedJobs:
  - name: leader
    replicas: 1
    template:
      spec:
        template:
          spec:
            containers:
            - name: leader
              image: bash:latest
              command: ["sh", "-c", "sleep 1000"]
  - name: workers
    replicas: 2
    template:
      spec:
        template:
          spec:
            containers:
            - name: worker
              image: bash:latest
              command: ["sh", "-c", "sleep 1000"]
`

// TestJobSetHostnamesResolve checks that the pods of one JobSet resolve each
// other by <jobset>-<replicatedJob>-<jobIndex>-<podIndex>.<subdomain>, as
// they do through cluster DNS upstream.
func TestJobSetHostnamesResolve(t *testing.T) {
	s := startServer(t)
	c := s.inNamespace(t, "dns")
	c.apply(dnsJobSet)
	worker := c.podOf("dns-workers-1", "0")
	c.podOf("dns-leader-0", "0")
	c.podOf("dns-workers-0", "0")
	getent := func(host string) string {
		out, err := c.kubectlErr("-n", c.ns, "exec", worker, "--", "getent", "hosts", host)
		if err != nil {
			return ""
		}
		return strings.TrimSpace(out)
	}
	fqdn := "dns-leader-0-0.dns." + c.ns + ".svc.cluster.local"
	eventually(t, 30*time.Second, "getent hosts "+fqdn, func() bool { return getent(fqdn) != "" })
	for _, host := range []string{"dns-leader-0-0.dns", "dns-workers-0-0.dns", "dns-workers-0-0.dns." + c.ns + ".svc.cluster.local"} {
		if out := getent(host); len(strings.Fields(out)) < 2 {
			t.Errorf("getent hosts %s in pod %s = %q, want the pod's address", host, worker, out)
		}
	}
	c.k("delete", "jobset", "dns", "--wait=false")
}

const completingJobSet = `apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: hello-jobset
spec:
  replicatedJobs:
  - name: leader
    replicas: 1
    template:
      spec:
        template:
          spec:
            containers:
            - name: leader
              image: bash:latest
              command: ["sh", "-c", "echo hello from the leader"]
  - name: workers
    replicas: 2
    template:
      spec:
        completions: 2
        parallelism: 2
        template:
          spec:
            containers:
            - name: worker
              image: bash:latest
              command: ["sh", "-c", "echo hello from worker $JOB_COMPLETION_INDEX"]
`

func TestRunJobSetCompletes(t *testing.T) {
	stdout, stderr, code := runBatchlet(t, completingJobSet, "-")
	if code != 0 {
		t.Fatalf("exit %d, want 0\nstderr:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "jobset/hello-jobset Completed (AllJobsCompleted): jobset completed successfully") {
		t.Errorf("summary lacks the Completed line:\n%s", stderr)
	}
	for _, want := range []string{"hello from the leader", "hello from worker 0", "hello from worker 1"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
}

func TestRunJobSetFailsExitsOne(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jobset-failjobset-action-example.yaml")
	if err := os.WriteFile(path, []byte(fastLeader(t, "jobset-failjobset-action-example.yaml", "1")), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runBatchlet(t, "", "--quiet", path)
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstderr:\n%s", code, stderr)
	}
	want := "jobset/failjobset-action-example Failed (FailJobSetFailurePolicyAction): applying FailJobSet failure policy action (first failed job: failjobset-action-example-leader-0)"
	if !strings.Contains(stderr, want) {
		t.Errorf("summary lacks %q:\n%s", want, stderr)
	}
}

const suspendedJobSet = `apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: susp
spec:
  suspend: true
  ttlSecondsAfterFinished: 0
  replicatedJobs:
  - name: a
    replicas: 2
    template:
      spec:
        template:
          spec:
            containers:
            - name: c
              image: bash:latest
              command: ["sh", "-c", "exit 0"]
`

// testSuspendResume: a suspended JobSet has suspended child Jobs and no
// pods; once resumed it completes, and ttlSecondsAfterFinished 0 deletes it.
func testSuspendResume(c *nsClient) {
	t := c.t
	c.apply(suspendedJobSet)
	c.waitJobSetCondition("susp", "Suspended")
	if got := c.cond("susp", "Suspended", "reason") + "/" + c.cond("susp", "Suspended", "message"); got != "SuspendedJobs/jobset is suspended" {
		t.Errorf("Suspended = %q", got)
	}
	eventually(t, jobSetTimeout, "2 suspended child Jobs", func() bool {
		return c.get("jobset/susp", "{.status.replicatedJobsStatus[0].suspended}") == "2"
	})
	if got := c.get("jobs", "{.items[*].spec.suspend}"); got != "true true" {
		t.Errorf("child Jobs suspend = %q, want true true", got)
	}
	if pods := c.get("pods", "{.items[*].metadata.name}"); pods != "" {
		t.Errorf("a suspended JobSet has pods %q", pods)
	}
	c.k("patch", "jobset/susp", "--type=merge", "-p", `{"spec":{"suspend":false}}`)
	eventually(t, jobSetTimeout, "JobSet completed and deleted by its TTL", func() bool {
		_, err := c.kubectlErr("-n", c.ns, "get", "jobset", "susp")
		return err != nil
	})
	if ev := c.events("susp"); count(ev, "SuspendedJobs") != 1 || count(ev, "ResumeJobs") != 1 || count(ev, "AllJobsCompleted") != 1 {
		t.Errorf("events of susp = %v, want SuspendedJobs, ResumeJobs, AllJobsCompleted", ev)
	}
}

// testValidation checks the JobSet admission messages upstream's webhook
// gives.
func testValidation(c *nsClient) {
	t := c.t
	rjob := func(name, extra string) string {
		return "  - name: " + name + "\n    replicas: 1\n" + extra + `    template:
      spec:
        template:
          spec:
            containers:
            - name: c
              image: bash:latest
              command: ["true"]
`
	}
	head := "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata:\n  name: bad\nspec:\n"
	cases := []struct{ spec, want string }{
		{"  failurePolicy:\n    rules:\n    - action: FailJobSet\n      targetReplicatedJobs: [zzz]\n  replicatedJobs:\n" + rjob("a", ""),
			"invalid replicatedJob name 'zzz' in failure policy does not appear in .spec.ReplicatedJobs"},
		{"  failurePolicy:\n    rules:\n    - action: FailJobSet\n      onJobFailureReasons: [Nope]\n  replicatedJobs:\n" + rjob("a", ""),
			"invalid job failure reason 'Nope' in failure policy is not a recognized job failure reason"},
		{"  replicatedJobs:\n" + rjob("a", "    dependsOn:\n    - name: b\n      status: Ready\n") + rjob("b", ""),
			"DependsOn can't be set for the first ReplicatedJob"},
		{"  failurePolicy:\n    rules:\n    - action: Bogus\n  replicatedJobs:\n" + rjob("a", ""),
			`Unsupported value: "Bogus": supported values: "FailJobSet", "RestartJobSet", "RestartJobSetAndIgnoreMaxRestarts", "RestartJob", "RestartJobAndIgnoreMaxRestarts"`},
	}
	for _, tc := range cases {
		out, err := c.kubectlStdin(head+tc.spec, "-n", c.ns, "apply", "-f", "-")
		if err == nil || !strings.Contains(out, tc.want) {
			t.Errorf("apply = %v, %q; want an error containing %q", err, out, tc.want)
		}
	}
}
