package e2e

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

func perlBpiWorks() bool {
	return exec.Command("perl", "-Mbignum=bpi", "-wle", "print bpi(2000)").Run() == nil
}

// waitCondition waits with kubectl wait for a Job/JobSet condition.
func (s *server) waitCondition(resource, cond string, timeout time.Duration) {
	s.t.Helper()
	// kubectl's own --timeout bounds the wait; the process limit only
	// guards against a hung kubectl (the default 60 s cut longer waits).
	args := []string{"wait", "--for=condition=" + cond, resource, "--timeout=" + timeout.String()}
	if out, err := s.kubectlWithin(timeout+30*time.Second, args...); err != nil {
		s.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func (s *server) conditionTypes(resource string) string {
	return s.jsonpath(resource, `{range .status.conditions[*]}{.type}={.status}/{.reason};{end}`)
}

func (s *server) eventReasons(name string) string {
	return s.jsonpath("events", `{range .items[?(@.involvedObject.name=="`+name+`")]}{.reason},{end}`)
}

func TestSeedPiCompletes(t *testing.T) {
	if !perlBpiWorks() {
		t.Skip("perl -Mbignum=bpi crashes on this host; install libmath-bigint-perl (see shared/spec/host-notes.md)")
	}
	s := startServer(t)
	s.kubectl("apply", "-f", example("pi.yaml"))
	s.waitCondition("job/pi", "complete", 90*time.Second)
	if got := s.jsonpath("job/pi", "{.status.succeeded}"); got != "1" {
		t.Errorf("succeeded = %q, want 1", got)
	}
	if got := s.conditionTypes("job/pi"); got != "SuccessCriteriaMet=True/CompletionsReached;Complete=True/CompletionsReached;" {
		t.Errorf("conditions = %q", got)
	}
	logs := s.kubectl("logs", "job/pi")
	if !strings.HasPrefix(strings.TrimSpace(logs), "3.14159265358979323846") || len(strings.TrimSpace(logs)) < 2000 {
		t.Errorf("kubectl logs job/pi = %.80q…", logs)
	}
	pods := s.kubectl("get", "pods", "--selector=batch.kubernetes.io/job-name=pi", "--output=jsonpath={.items[*].metadata.name}")
	if !strings.HasPrefix(pods, "pi-") {
		t.Errorf("pods of pi: %q", pods)
	}
	describe := s.kubectl("describe", "job", "pi")
	for _, want := range []string{"Pods Statuses:", "1 Active (0 Ready) / 1 Succeeded / 0 Failed", "SuccessfulCreate", "Completed"} {
		if want == "1 Active (0 Ready) / 1 Succeeded / 0 Failed" {
			want = "0 Active (0 Ready) / 1 Succeeded / 0 Failed"
		}
		if !strings.Contains(describe, want) {
			t.Errorf("describe job pi lacks %q:\n%s", want, describe)
		}
	}
	if got := s.eventReasons("pi"); got != "SuccessfulCreate,Completed," {
		t.Errorf("events of job pi = %q, want SuccessfulCreate,Completed,", got)
	}
}

func TestSeedPodFailurePolicyFailJob(t *testing.T) {
	seedPodFailurePolicyFailJob(&nsClient{server: startServer(t), ns: "default"})
}

// seedPodFailurePolicyFailJob runs the seed's pod failure policy example in
// c's namespace: exit code 42 fails the Job at once.
func seedPodFailurePolicyFailJob(c *nsClient) {
	t := c.t
	c.k("apply", "-f", example("job-pod-failure-policy-example.yaml"))
	job := "job/job-pod-failure-policy-example"
	c.k("wait", "--for=condition=failed", job, "--timeout=90s")
	if got := c.get(job, `{range .status.conditions[*]}{.type}={.status}/{.reason};{end}`); got != "FailureTarget=True/PodFailurePolicy;Failed=True/PodFailurePolicy;" {
		t.Errorf("conditions = %q", got)
	}
	msg := c.get(job, `{.status.conditions[?(@.type=="Failed")].message}`)
	if !strings.HasPrefix(msg, "Container main for pod "+c.ns+"/job-pod-failure-policy-example-") || !strings.HasSuffix(msg, " failed with exit code 42 matching FailJob rule at index 0") {
		t.Errorf("Failed message = %q", msg)
	}
	if got := c.get(job, "{.status.failed}/{.status.succeeded}"); got != "3/" { // succeeded 0 is omitted, as upstream
		t.Errorf("failed/succeeded = %q, want 3/ (succeeded omitted)", got)
	}
}

func TestSeedBackoffLimitPerIndexExecuteAll(t *testing.T) {
	seedBackoffLimitPerIndexExecuteAll(&nsClient{server: startServer(t), ns: "default"})
}

// seedBackoffLimitPerIndexExecuteAll runs the seed's backoffLimitPerIndex
// example in c's namespace: indexes 1 and 2 fail, the rest complete.
func seedBackoffLimitPerIndexExecuteAll(c *nsClient) {
	t := c.t
	c.k("apply", "-f", example("job-backoff-limit-per-index-execute-all.yaml"))
	job := "job/job-backoff-limit-per-index-execute-all"
	c.k("wait", "--for=condition=failed", job, "--timeout=120s")
	got := c.get(job, "{.status.completedIndexes}|{.status.failedIndexes}|{.status.succeeded}|{.status.failed}")
	if got != "0,3-7|1,2|6|4" {
		t.Errorf("completedIndexes|failedIndexes|succeeded|failed = %q, want 0,3-7|1,2|6|4", got)
	}
	if r := c.get(job, `{.status.conditions[?(@.type=="Failed")].reason}`); r != "FailedIndexes" {
		t.Errorf("reason = %q", r)
	}
}

const deadlineJob = `apiVersion: batch/v1
kind: Job
metadata:
  name: pi-with-timeout
spec:
  backoffLimit: 5
  activeDeadlineSeconds: 3
  template:
    spec:
      containers:
      - name: pi
        image: perl:5.34.0
        command: ["sleep", "100"]
      restartPolicy: Never
`

func TestActiveDeadlineExceeded(t *testing.T) {
	s := startServer(t)
	if out, err := s.kubectlStdin(deadlineJob, "apply", "-f", "-"); err != nil {
		t.Fatal(out)
	}
	s.waitCondition("job/pi-with-timeout", "failed", 60*time.Second)
	if got := s.jsonpath("job/pi-with-timeout", `{.status.conditions[?(@.type=="Failed")].reason}|{.status.conditions[?(@.type=="Failed")].message}`); got != "DeadlineExceeded|Job was active longer than specified deadline" {
		t.Errorf("Failed condition = %q", got)
	}
	eventually(t, 30*time.Second, "pods gone", func() bool {
		return s.jsonpath("pods", "{.items[*].metadata.name}") == ""
	})
}

const ttlJob = `apiVersion: batch/v1
kind: Job
metadata:
  name: pi-with-ttl
spec:
  ttlSecondsAfterFinished: 0
  template:
    spec:
      containers:
      - name: pi
        image: perl:5.34.0
        command: ["sh", "-c", "echo done"]
      restartPolicy: Never
`

func TestTTLZeroDeletesJobAndPods(t *testing.T) {
	s := startServer(t)
	if out, err := s.kubectlStdin(ttlJob, "apply", "-f", "-"); err != nil {
		t.Fatal(out)
	}
	eventually(t, 60*time.Second, "job and pods deleted", func() bool {
		_, err := s.kubectlErr("get", "job", "pi-with-ttl")
		return err != nil && s.jsonpath("pods", "{.items[*].metadata.name}") == ""
	})
}

const suspendedJob = `apiVersion: batch/v1
kind: Job
metadata:
  name: myjob
spec:
  suspend: true
  parallelism: 2
  completions: 4
  template:
    spec:
      containers:
      - name: c
        image: busybox
        command: ["sh", "-c", "sleep 0.2"]
      restartPolicy: Never
`

func TestSuspendResume(t *testing.T) {
	s := startServer(t)
	if out, err := s.kubectlStdin(suspendedJob, "apply", "-f", "-"); err != nil {
		t.Fatal(out)
	}
	eventually(t, 30*time.Second, "Suspended condition", func() bool {
		return s.jsonpath("job/myjob", `{.status.conditions[?(@.type=="Suspended")].reason}`) == "JobSuspended"
	})
	if st := s.jsonpath("job/myjob", "{.status.startTime}"); st != "" {
		t.Errorf("suspended job has startTime %q", st)
	}
	if pods := s.jsonpath("pods", "{.items[*].metadata.name}"); pods != "" {
		t.Errorf("suspended job has pods %q", pods)
	}
	s.kubectl("patch", "job/myjob", "--type=strategic", "--patch", `{"spec":{"suspend":false}}`)
	s.waitCondition("job/myjob", "complete", 60*time.Second)
	if got := s.jsonpath("job/myjob", `{.status.succeeded}|{.status.conditions[?(@.type=="Suspended")].status}/{.status.conditions[?(@.type=="Suspended")].reason}`); got != "4|False/JobResumed" {
		t.Errorf("succeeded|Suspended = %q", got)
	}
	if got := s.eventReasons("myjob"); got != "Suspended,SuccessfulCreate,SuccessfulCreate,Resumed,SuccessfulCreate,SuccessfulCreate,Completed," &&
		got != "Suspended,Resumed,SuccessfulCreate,SuccessfulCreate,SuccessfulCreate,SuccessfulCreate,Completed," {
		t.Logf("events of myjob = %q", got)
	}
}
