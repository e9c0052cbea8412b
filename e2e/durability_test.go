package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// procInfo identifies a live process: PID plus start time (PIDs are reused).
type procInfo struct {
	pid   int
	start string
	cmd   string
}

// procStat returns the start time and state of a process ("" when gone).
func procStat(pid int) (start, state string) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", ""
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 20 {
		return "", ""
	}
	return f[19], f[0] // starttime is field 22, state field 3
}

// descendants lists every live process below pid.
func descendants(pid int) []procInfo {
	var out []procInfo
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, t := range tasks {
		b, _ := os.ReadFile(t)
		for _, c := range strings.Fields(string(b)) {
			child, err := strconv.Atoi(c)
			if err != nil {
				continue
			}
			start, state := procStat(child)
			if start == "" || state == "Z" {
				continue
			}
			cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", child))
			out = append(out, procInfo{pid: child, start: start, cmd: strings.ReplaceAll(string(cmd), "\x00", " ")})
			out = append(out, descendants(child)...)
		}
	}
	return out
}

// survivors returns the processes of procs that still run.
func survivors(procs []procInfo) []procInfo {
	var alive []procInfo
	for _, p := range procs {
		if start, state := procStat(p.pid); start == p.start && state != "Z" {
			alive = append(alive, p)
		}
	}
	return alive
}

// crashAndRestart crashes the host as far as the server is concerned: it
// kill -9s the server and the processes below it (the pods' shims, which
// outlive the server alone, then their containers), checks that they died,
// and starts the server again on the same data dir.
func (s *server) crashAndRestart(t *testing.T) {
	t.Helper()
	procs := descendants(s.cmd.Process.Pid)
	s.kill9()
	for _, p := range procs {
		if start, _ := procStat(p.pid); start == p.start {
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(survivors(procs)) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if left := survivors(procs); len(left) > 0 {
		for _, p := range left {
			t.Errorf("process %d (%s) outlived the kill -9 of the server", p.pid, p.cmd)
		}
	}
	s.start()
}

func (s *server) intField(resource, path string) int {
	n, _ := strconv.Atoi(s.jsonpath(resource, path))
	return n
}

const crashJobYAML = `apiVersion: batch/v1
kind: Job
metadata:
  name: crash
spec:
  completionMode: %s
  completions: 200
  parallelism: 20
  backoffLimit: 10000
  template:
    spec:
      containers:
      - name: main
        image: busybox
        command: ["sh", "-c", "sleep 0.$(($$ %% 5))"]
      restartPolicy: Never
`

// runThroughCrashes runs a 200-pod Job while the server is killed with
// SIGKILL three times; every pod must be counted exactly once. The pods
// running at each kill die with the agent and, as with a kubelet whose
// containers vanished, end Failed (ContainerStatusUnknown) with a
// DisruptionTarget condition and are replaced: lost to the control plane,
// they are not the Job's failures and none is counted (docs/differences.md).
func runThroughCrashes(t *testing.T, mode string) *server {
	s := startServer(t)
	// A long pod shows whether pod processes die with the agent.
	s.kubectl("run", "sleeper", "--image=busybox", "--restart=Never", "--", "sleep", "300")
	s.applyYAML(fmt.Sprintf(crashJobYAML, mode))
	for _, at := range []int{30, 90, 150} {
		eventually(t, 120*time.Second, fmt.Sprintf("succeeded ≥ %d", at), func() bool {
			return s.intField("job/crash", "{.status.succeeded}") >= at
		})
		s.crashAndRestart(t)
	}
	s.waitCondition("job/crash", "complete", 180*time.Second)
	s.expectJSONPath(t, "job/crash", "{.status.succeeded}|{.status.active}|{.status.terminating}|{.status.uncountedTerminatedPods}", "200||0|{}")
	if got := s.conditionTypes("job/crash"); got != "SuccessCriteriaMet=True/CompletionsReached;Complete=True/CompletionsReached;" {
		t.Errorf("conditions = %q", got)
	}
	pods := s.jobPods("crash")
	indexes := map[string]int{}
	failed := 0
	for _, p := range pods {
		switch {
		case p.phase == "Succeeded":
			indexes[p.index]++
		case p.phase == "Failed" && p.reason == "ContainerStatusUnknown" && p.exitCode == "137" && p.restarts == "0" &&
			p.disruption == "TerminationByKubelet":
			failed++
		default:
			t.Errorf("pod %+v: want Succeeded, or Failed as lost with the agent (ContainerStatusUnknown, 137, not restarted, DisruptionTarget)", p)
		}
	}
	if succeeded := len(pods) - failed; succeeded != 200 {
		t.Errorf("%d Succeeded pods, want 200", succeeded)
	}
	if mode == "Indexed" && len(indexes) != 200 {
		t.Errorf("succeeded pods cover %d indexes, want each of the 200 once: %v", len(indexes), indexes)
	}
	t.Logf("%d pods lost with the agent over three kills", failed)
	if failed == 0 {
		t.Errorf("no pod was lost with the agent in three kills: the crash did not hit running pods")
	}
	// No lost pod is counted as a failure.
	s.expectJSONPath(t, "job/crash", "{.status.failed}", "")
	if f := s.jsonpath("pods", `{.items[?(@.metadata.finalizers)].metadata.name}`); f != "" {
		t.Errorf("pods still holding finalizers: %s", f)
	}
	// The sleeper died with the first kill: Failed, not run a second time.
	s.expectJSONPath(t, "pod/sleeper", "{.status.phase}|{.status.containerStatuses[0].state.terminated.reason}|{.status.containerStatuses[0].restartCount}",
		"Failed|ContainerStatusUnknown|0")
	return s
}

// jobPod is what the crash tests check of one pod of a Job.
type jobPod struct {
	name, phase, index, reason, exitCode, restarts string
	disruption                                     string // reason of a DisruptionTarget condition
}

// jobPods lists the pods of a Job with their phase, completion index and
// the terminated state of their (only) container.
func (s *server) jobPods(job string) []jobPod {
	out := s.jsonpath("pods", `{range .items[?(@.metadata.labels.job-name=="`+job+`")]}`+
		`{.metadata.name}|{.status.phase}|{.metadata.annotations.batch\.kubernetes\.io/job-completion-index}|`+
		`{.status.containerStatuses[0].state.terminated.reason}|{.status.containerStatuses[0].state.terminated.exitCode}|`+
		`{.status.containerStatuses[0].restartCount}|{.status.conditions[?(@.type=="DisruptionTarget")].reason}{"\n"}{end}`)
	var pods []jobPod
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(line, "|")
		if len(f) != 7 {
			continue
		}
		pods = append(pods, jobPod{name: f[0], phase: f[1], index: f[2], reason: f[3], exitCode: f[4], restarts: f[5], disruption: f[6]})
	}
	return pods
}

// TestCrashLosesNoCompletion is issue 4: kill -9 during a Job never loses or
// double-counts a completion.
func TestCrashLosesNoCompletion(t *testing.T) {
	runThroughCrashes(t, "NonIndexed")
}

// TestCrashLosesNoCompletionIndexed is the Indexed variant: every index is
// completed exactly once.
func TestCrashLosesNoCompletionIndexed(t *testing.T) {
	s := runThroughCrashes(t, "Indexed")
	s.expectJSONPath(t, "job/crash", "{.status.completedIndexes}|{.status.failedIndexes}", "0-199|")
}

// configMapsYAML is n ConfigMaps cm-000 … in one multi-document manifest.
func configMapsYAML(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%03d\ndata:\n  i: \"%d\"\n", i, i)
	}
	return b.String()
}

// configMapRVs maps the name of every ConfigMap of default to its resourceVersion.
func (s *server) configMapRVs(t *testing.T) map[string]string {
	t.Helper()
	out := s.kubectl("get", "configmaps", "-o", `jsonpath={range .items[*]}{.metadata.name}={.metadata.resourceVersion}{"\n"}{end}`)
	rvs := map[string]string{}
	for _, l := range strings.Fields(out) {
		name, rv, _ := strings.Cut(l, "=")
		if strings.HasPrefix(name, "cm-") {
			rvs[name] = rv
		}
	}
	return rvs
}

func (s *server) clientset(t *testing.T) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", s.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 1000, 1000 // no client-side throttling
	return kubernetes.NewForConfigOrDie(cfg)
}

func rvInt(t *testing.T, rv string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q is not a number: %v", rv, err)
	}
	return n
}

// TestDurabilityAcrossKill9 is issue 2: every acknowledged write survives a
// kill -9 with its resourceVersion, resourceVersions keep growing, and a
// watch from a revision before the crash replays what followed it.
func TestDurabilityAcrossKill9(t *testing.T) {
	s := startServer(t, "--no-agent")
	if out, err := s.kubectlStdin(configMapsYAML(300), "apply", "-f", "-"); err != nil {
		t.Fatalf("apply 300 configmaps: %v\n%s", err, out)
	}
	from := s.jsonpath("configmap/cm-149", "{.metadata.resourceVersion}")
	for i := 290; i < 300; i++ {
		s.kubectl("label", "configmap", fmt.Sprintf("cm-%03d", i), "touched=yes")
	}
	for i := 280; i < 290; i++ {
		s.kubectl("delete", "configmap", fmt.Sprintf("cm-%03d", i))
	}
	before := s.configMapRVs(t)
	if len(before) != 290 {
		t.Fatalf("%d configmaps before the crash, want 290", len(before))
	}

	s.kill9()
	s.start()

	after := s.configMapRVs(t)
	if len(after) != len(before) {
		t.Errorf("%d configmaps after the crash, want %d", len(after), len(before))
	}
	var maxRV uint64
	for name, rv := range before {
		if after[name] != rv {
			t.Errorf("%s: resourceVersion %q after the crash, want %q", name, after[name], rv)
		}
		maxRV = max(maxRV, rvInt(t, rv))
	}
	if got := s.jsonpath("configmap/cm-295", "{.metadata.labels.touched}|{.data.i}"); got != "yes|295" {
		t.Errorf("cm-295 after the crash: %q", got)
	}

	s.kubectl("create", "configmap", "after-crash", "--from-literal=k=v")
	newRV := s.jsonpath("configmap/after-crash", "{.metadata.resourceVersion}")
	if rvInt(t, newRV) <= maxRV {
		t.Errorf("first write after the crash got resourceVersion %s, not above %d", newRV, maxRV)
	}

	checkReplay(t, s, from, newRV)
}

// checkReplay watches ConfigMaps from rv (cm-149's creation) and expects
// every later change in order: ADDED cm-150…cm-299, MODIFIED cm-290…299,
// DELETED cm-280…289, then ADDED after-crash at lastRV.
func checkReplay(t *testing.T, s *server, rv, lastRV string) {
	t.Helper()
	var want []string
	for i := 150; i < 300; i++ {
		want = append(want, fmt.Sprintf("ADDED cm-%03d", i))
	}
	for i := 290; i < 300; i++ {
		want = append(want, fmt.Sprintf("MODIFIED cm-%03d", i))
	}
	for i := 280; i < 290; i++ {
		want = append(want, fmt.Sprintf("DELETED cm-%03d", i))
	}
	want = append(want, "ADDED after-crash")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w, err := s.clientset(t).CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		t.Fatalf("watch from %s: %v", rv, err)
	}
	defer w.Stop()
	var got []string
	last := rvInt(t, rv)
	for len(got) < len(want) {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch from %s closed after %d events: %q", rv, len(got), got)
			}
			if ev.Type == watch.Error {
				t.Fatalf("watch from %s: error event %v", rv, apierrors.FromObject(ev.Object))
			}
			cm := ev.Object.(*corev1.ConfigMap)
			if n := rvInt(t, cm.ResourceVersion); n <= last {
				t.Errorf("event %s %s at resourceVersion %d after %d", ev.Type, cm.Name, n, last)
			} else {
				last = n
			}
			got = append(got, string(ev.Type)+" "+cm.Name)
		case <-ctx.Done():
			t.Fatalf("watch from %s: %d of %d events after 30s: last %q", rv, len(got), len(want), got[max(0, len(got)-3):])
		}
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("replayed event %d = %q, want %q", i, got[i], want[i])
			break
		}
	}
	if fmt.Sprint(last) != lastRV {
		t.Errorf("last replayed resourceVersion %d, want %s", last, lastRV)
	}
}

const failJobYAML = `apiVersion: batch/v1
kind: Job
metadata:
  name: failfast
spec:
  completionMode: Indexed
  completions: 2
  parallelism: 2
  podFailurePolicy:
    rules:
    - action: FailJob
      onExitCodes:
        operator: In
        values: [42]
  template:
    spec:
      terminationGracePeriodSeconds: 30
      containers:
      - name: main
        image: busybox
        command: ["sh", "-c", "if [ \"$JOB_COMPLETION_INDEX\" = 0 ]; then until [ -e /tmp/done ]; do sleep 0.2; done; exit 42; fi; trap 'sleep 300' TERM; sleep 300 & wait"]
      restartPolicy: Never
`

// TestCrashBetweenFailureTargetAndFailed: the server dies while the Job has
// FailureTarget and waits for a terminating pod; after the restart the Job
// still ends Failed with the same reason and message.
func TestCrashBetweenFailureTargetAndFailed(t *testing.T) {
	s := startServer(t)
	s.applyYAML(failJobYAML)
	var pods []string
	eventually(t, 60*time.Second, "2 running pods", func() bool {
		pods = s.runningPods("failfast-")
		return len(pods) == 2
	})
	zero := s.jsonpath("pods", `{.items[?(@.metadata.annotations.batch\.kubernetes\.io/job-completion-index=="0")].metadata.name}`)
	s.openGate(zero)
	eventually(t, 30*time.Second, "FailureTarget and a terminating pod", func() bool {
		return s.conditionTypes("job/failfast") == "FailureTarget=True/PodFailurePolicy;" &&
			s.jsonpath("job/failfast", "{.status.terminating}") == "1"
	})
	msg := s.jsonpath("job/failfast", `{.status.conditions[?(@.type=="FailureTarget")].message}`)
	if want := "Container main for pod default/" + zero + " failed with exit code 42 matching FailJob rule at index 0"; msg != want {
		t.Errorf("FailureTarget message = %q, want %q", msg, want)
	}
	s.crashAndRestart(t)
	s.waitCondition("job/failfast", "failed", 60*time.Second)
	if got := s.conditionTypes("job/failfast"); got != "FailureTarget=True/PodFailurePolicy;Failed=True/PodFailurePolicy;" {
		t.Errorf("conditions = %q", got)
	}
	s.expectJSONPath(t, "job/failfast", `{.status.conditions[?(@.type=="Failed")].message}`, msg)
	s.expectJSONPath(t, "job/failfast", "{.status.failed}|{.status.succeeded}|{.status.active}|{.status.terminating}|{.status.failedIndexes}", "2|||0|")
	if f := s.jsonpath("pods", `{.items[?(@.metadata.finalizers)].metadata.name}`); f != "" {
		t.Errorf("pods still holding finalizers: %s", f)
	}
}

// TestCrashDuringOrphanDeletion: the server dies right after a Job is
// deleted with --cascade=orphan; after the restart the Job is gone and its
// pods are released.
func TestCrashDuringOrphanDeletion(t *testing.T) {
	s := startServer(t)
	s.applyYAML(oldJobYAML)
	var pods []string
	eventually(t, 60*time.Second, "3 running pods of job old", func() bool {
		pods = s.runningPods("old-")
		return len(pods) == 3
	})
	s.kubectl("delete", "job", "old", "--cascade=orphan", "--wait=false")
	s.kill9()
	s.start()
	eventually(t, 60*time.Second, "job old gone and its pods released", func() bool {
		if _, err := s.kubectlErr("get", "job", "old"); err == nil {
			return false
		}
		for _, p := range pods {
			if s.jsonpath("pod/"+p, `{.metadata.name}|{.metadata.finalizers}|{.metadata.ownerReferences}`) != p+"||" {
				return false
			}
		}
		return true
	})
}

const ttlFiveJob = `apiVersion: batch/v1
kind: Job
metadata:
  name: ttl
spec:
  ttlSecondsAfterFinished: 3
  template:
    spec:
      containers:
      - name: main
        image: busybox
        command: ["true"]
      restartPolicy: Never
`

// TestCrashBeforeTTLExpires: a finished Job whose TTL runs out while the
// server is down is deleted (with its pod) after the restart.
func TestCrashBeforeTTLExpires(t *testing.T) {
	s := startServer(t)
	s.applyYAML(ttlFiveJob)
	s.waitCondition("job/ttl", "complete", 60*time.Second)
	s.kill9()
	s.start()
	eventually(t, 60*time.Second, "job ttl and its pod deleted", func() bool {
		_, err := s.kubectlErr("get", "job", "ttl")
		return err != nil && len(s.podsOf("ttl")) == 0
	})
}

// TestAcknowledgedWritesSurviveKill9: writers create ConfigMaps as fast as
// they can while the server is killed; every create that was acknowledged
// is there after the restart, with the resourceVersion it was given.
func TestAcknowledgedWritesSurviveKill9(t *testing.T) {
	s := startServer(t, "--no-agent")
	cs := s.clientset(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	acked := map[string]string{}
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("w%d-%05d", w, i)}}
				got, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{})
				if err != nil {
					return // the server is gone
				}
				mu.Lock()
				acked[got.Name] = got.ResourceVersion
				mu.Unlock()
			}
		}()
	}
	eventually(t, 60*time.Second, "200 acknowledged creates", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= 200
	})
	s.kill9()
	wg.Wait()
	s.start()

	after := s.configMapRVsAll(t)
	seen := map[string]string{}
	for name, rv := range after {
		if other, dup := seen[rv]; dup {
			t.Errorf("%s and %s share resourceVersion %s", name, other, rv)
		}
		seen[rv] = name
	}
	lost := 0
	for name, rv := range acked {
		if after[name] != rv {
			lost++
			if lost <= 5 {
				t.Errorf("acknowledged %s (resourceVersion %s) is %q after the restart", name, rv, after[name])
			}
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d acknowledged creates lost", lost, len(acked))
	}
}

// configMapRVsAll maps every ConfigMap of default to its resourceVersion.
func (s *server) configMapRVsAll(t *testing.T) map[string]string {
	t.Helper()
	out := s.kubectl("get", "configmaps", "-o", `jsonpath={range .items[*]}{.metadata.name}={.metadata.resourceVersion}{"\n"}{end}`)
	rvs := map[string]string{}
	for _, l := range strings.Fields(out) {
		name, rv, _ := strings.Cut(l, "=")
		rvs[name] = rv
	}
	return rvs
}

const perIndexCrashJob = `apiVersion: batch/v1
kind: Job
metadata:
  name: perindex
spec:
  completionMode: Indexed
  completions: 40
  parallelism: 10
  backoffLimitPerIndex: 10000
  podFailurePolicy:
    rules:
    - action: FailIndex
      onExitCodes:
        containerName: main
        operator: In
        values: [1]
  template:
    spec:
      containers:
      - name: main
        image: busybox
        command: ["sh", "-c", "sleep 0.$(($$ %% 5)); [ $(($JOB_COMPLETION_INDEX %% 7)) != 3 ]"]
      restartPolicy: Never
`

// TestCrashWithFailedIndexes: kill -9 while indexes fail; an index whose
// command fails (exit 1) fails at once (FailIndex), one whose pod was lost
// with the agent (ContainerStatusUnknown, 137, DisruptionTarget) is retried
// without counting against the per-index backoff limit. Every failure of a
// command is counted exactly once, and no lost pod.
func TestCrashWithFailedIndexes(t *testing.T) {
	s := startServer(t)
	s.applyYAML(strings.ReplaceAll(perIndexCrashJob, "%%", "%"))
	eventually(t, 60*time.Second, "first failures", func() bool {
		return s.jsonpath("job/perindex", "{.status.failed}") != ""
	})
	s.crashAndRestart(t)
	eventually(t, 60*time.Second, "a failed index", func() bool {
		return s.jsonpath("job/perindex", "{.status.failedIndexes}") != ""
	})
	s.crashAndRestart(t)
	s.waitCondition("job/perindex", "failed", 120*time.Second)
	s.expectJSONPath(t, "job/perindex", "{.status.failedIndexes}|{.status.completedIndexes}|{.status.succeeded}|{.status.active}",
		"3,10,17,24,31,38|0-2,4-9,11-16,18-23,25-30,32-37,39|34|")
	if got := s.conditionTypes("job/perindex"); got != "FailureTarget=True/FailedIndexes;Failed=True/FailedIndexes;" {
		t.Errorf("conditions = %q", got)
	}
	failing := map[string]bool{"3": true, "10": true, "17": true, "24": true, "31": true, "38": true}
	failedPods, commandFailures := 0, map[string]int{}
	for _, p := range s.jobPods("perindex") {
		if p.phase != "Failed" {
			continue
		}
		failedPods++
		switch {
		case p.reason == "Error" && p.exitCode == "1" && failing[p.index]:
			commandFailures[p.index]++
		case p.reason == "ContainerStatusUnknown" && p.exitCode == "137" && p.disruption == "TerminationByKubelet":
		default:
			t.Errorf("failed pod %+v: want exit 1 of a failing index or lost with the agent", p)
		}
	}
	if len(commandFailures) != len(failing) {
		t.Errorf("indexes whose command failed: %v, want each of %v once", commandFailures, failing)
	}
	for idx, n := range commandFailures {
		if n != 1 {
			t.Errorf("index %s failed %d times by its command, want once (FailIndex)", idx, n)
		}
	}
	t.Logf("%d failed pods, %d lost with the agent", failedPods, failedPods-len(commandFailures))
	s.expectJSONPath(t, "job/perindex", "{.status.failed}", itoa(len(failing)))
}

// TestCrashLostPodsAsKubelet: the pods running when the server is killed
// are not silently run again. The restartPolicy Never pod ends Failed with
// its container ContainerStatusUnknown and keeps its one run's log; the
// OnFailure pod is restarted in place, restartCount 1, and its first run's
// log is its previous one.
func TestCrashLostPodsAsKubelet(t *testing.T) {
	s := startServer(t)
	s.kubectl("run", "never", "--image=busybox", "--restart=Never", "--", "sh", "-c", "echo first run; sleep 300")
	s.kubectl("run", "onf", "--image=busybox", "--restart=OnFailure", "--", "sh", "-c", "echo run $(date +%s%N); sleep 300")
	var first string
	eventually(t, 60*time.Second, "both pods running with their output", func() bool {
		first, _ = s.kubectlErr("logs", "onf")
		never, _ := s.kubectlErr("logs", "never")
		return len(s.runningPods("")) == 2 && strings.HasPrefix(first, "run ") && never == "first run\n"
	})
	s.crashAndRestart(t)
	eventually(t, 60*time.Second, "never Failed", func() bool { return s.jsonpath("pod/never", "{.status.phase}") == "Failed" })
	s.expectJSONPath(t, "pod/never", "{.status.containerStatuses[0].state.terminated.reason}|{.status.containerStatuses[0].state.terminated.message}|"+
		"{.status.containerStatuses[0].state.terminated.exitCode}|{.status.containerStatuses[0].restartCount}",
		"ContainerStatusUnknown|The container could not be located when the pod was terminated|137|0")
	s.expectJSONPath(t, "pod/never", `{.status.conditions[?(@.type=="Ready")].status}/{.status.conditions[?(@.type=="Ready")].reason}`, "False/PodFailed")
	s.expectJSONPath(t, "pod/never", `{.status.conditions[?(@.type=="DisruptionTarget")].status}/{.status.conditions[?(@.type=="DisruptionTarget")].reason}/{.status.conditions[?(@.type=="DisruptionTarget")].message}`,
		"True/TerminationByKubelet/Pod was terminated because its containers were lost when the node agent restarted.")
	if got := s.kubectl("logs", "never"); got != "first run\n" {
		t.Errorf("log of the lost pod = %q, want its one run", got)
	}
	out, err := s.kubectlErr("logs", "never", "--previous")
	if want := `Error from server (BadRequest): previous terminated container "never" in pod "never" not found`; err == nil || strings.TrimSpace(out) != want {
		t.Errorf("logs --previous: %q (%v), want %q", out, err, want)
	}
	started := 0
	for _, e := range s.eventLines("never") {
		if strings.HasPrefix(e, "Normal/Started/") {
			started++
		}
	}
	if started != 1 {
		t.Errorf("never was started %d times, want once: %v", started, s.eventLines("never"))
	}
	eventually(t, 60*time.Second, "onf restarted and running", func() bool {
		return s.jsonpath("pod/onf", "{.status.phase}|{.status.containerStatuses[0].restartCount}|{.status.containerStatuses[0].ready}") == "Running|1|true"
	})
	s.expectJSONPath(t, "pod/onf", "{.status.containerStatuses[0].lastState.terminated.reason}|{.status.containerStatuses[0].lastState.terminated.message}",
		"ContainerStatusUnknown|The container could not be located when the pod was deleted.  The container used to be Running")
	if got := s.kubectl("logs", "onf", "--previous"); got != first {
		t.Errorf("previous log = %q, want the first run's %q", got, first)
	}
	eventually(t, 30*time.Second, "onf's second run logged", func() bool {
		cur, _ := s.kubectlErr("logs", "onf")
		return strings.HasPrefix(cur, "run ") && cur != first
	})
}
