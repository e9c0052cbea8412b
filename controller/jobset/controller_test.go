package jobset

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	jobsetapi "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	jobsetfake "sigs.k8s.io/jobset/client-go/clientset/versioned/fake"
	jobsetinformers "sigs.k8s.io/jobset/client-go/informers/externalversions"

	"github.com/batchlet/batchlet/controller/controllerctx"
)

// harness drives the controller against fake clients. The test plays the
// Job controller: it flips child Job conditions itself, and refresh copies
// the fake API state into the informer caches (no informer goroutines).
type harness struct {
	t    *testing.T
	ctx  context.Context
	kube *kubefake.Clientset
	kinf informers.SharedInformerFactory
	// jobsets is the JobSet API and jsinf its informers.
	jobsets *jobsetfake.Clientset
	jsinf   jobsetinformers.SharedInformerFactory
	c       *Controller
	rec     *record.FakeRecorder
	clock   *clocktesting.FakeClock
	reg     *prometheus.Registry
	key     string
}

func newHarness(t *testing.T, js *jobsetapi.JobSet) *harness {
	t.Helper()
	h := &harness{t: t, ctx: t.Context(), kube: kubefake.NewClientset(), jobsets: jobsetfake.NewClientset(withResourceVersion(js.DeepCopy(), "1")),
		rec: record.NewFakeRecorder(1000), clock: clocktesting.NewFakeClock(t0), reg: prometheus.NewRegistry(), key: js.Namespace + "/" + js.Name}
	// JobSet updates get a new resourceVersion, as from the API server.
	var rv atomic.Int64
	rv.Store(1)
	h.jobsets.PrependReactor("update", "jobsets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		a.(k8stesting.UpdateAction).GetObject().(*jobsetapi.JobSet).ResourceVersion = strconv.FormatInt(rv.Add(1), 10)
		return false, nil, nil
	})
	h.kinf = informers.NewSharedInformerFactory(h.kube, 0)
	h.jsinf = jobsetinformers.NewSharedInformerFactory(h.jobsets, 0)
	var err error
	h.c, err = New(controllerctx.Context{Client: h.kube, Informers: h.kinf, JobSetClient: h.jobsets, JobSetInformers: h.jsinf,
		Clock: h.clock, Logger: discardLogger(), Registerer: h.reg, Recorder: h.rec})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return h
}

func withResourceVersion(js *jobsetapi.JobSet, rv string) *jobsetapi.JobSet {
	js.ResourceVersion = rv
	return js
}

// reconcile refreshes the caches and runs one reconcile of the JobSet.
func (h *harness) reconcile() time.Duration {
	h.t.Helper()
	h.refresh()
	after, err := h.c.sync(h.ctx, h.key)
	if err != nil {
		h.t.Fatalf("sync: %v", err)
	}
	return after
}

func (h *harness) refresh() {
	jobs, err := h.kube.BatchV1().Jobs("").List(h.ctx, metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	var items []interface{}
	for i := range jobs.Items {
		items = append(items, &jobs.Items[i])
	}
	if err := h.kinf.Batch().V1().Jobs().Informer().GetIndexer().Replace(items, ""); err != nil {
		h.t.Fatal(err)
	}
	svcs, err := h.kube.CoreV1().Services("").List(h.ctx, metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	items = nil
	for i := range svcs.Items {
		items = append(items, &svcs.Items[i])
	}
	if err := h.kinf.Core().V1().Services().Informer().GetIndexer().Replace(items, ""); err != nil {
		h.t.Fatal(err)
	}
	jobsets, err := h.jobsets.JobsetV1alpha2().JobSets("").List(h.ctx, metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	items = nil
	for i := range jobsets.Items {
		items = append(items, &jobsets.Items[i])
	}
	if err := h.jsinf.Jobset().V1alpha2().JobSets().Informer().GetIndexer().Replace(items, ""); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) jobSet() *jobsetapi.JobSet {
	h.t.Helper()
	ns, name, _ := strings.Cut(h.key, "/")
	js, err := h.jobsets.JobsetV1alpha2().JobSets(ns).Get(h.ctx, name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatalf("get jobset: %v", err)
	}
	return js
}

func (h *harness) jobs() []batchv1.Job {
	h.t.Helper()
	list, err := h.kube.BatchV1().Jobs("default").List(h.ctx, metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return list.Items
}

func (h *harness) jobNames() []string {
	var names []string
	for _, j := range h.jobs() {
		names = append(names, j.Name)
	}
	slices.Sort(names)
	return names
}

// updateJob mutates a child Job's status (as the Job controller would).
func (h *harness) updateJob(name string, mutate func(*batchv1.Job)) {
	h.t.Helper()
	job, err := h.kube.BatchV1().Jobs("default").Get(h.ctx, name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatalf("get job %s: %v", name, err)
	}
	mutate(job)
	if _, err := h.kube.BatchV1().Jobs("default").UpdateStatus(h.ctx, job, metav1.UpdateOptions{}); err != nil {
		h.t.Fatalf("update job %s: %v", name, err)
	}
}

func (h *harness) allJobsReady() {
	for _, name := range h.jobNames() {
		h.updateJob(name, func(j *batchv1.Job) { readyJob(j) })
	}
}

func (h *harness) failJob(name, reason string) {
	h.clock.Step(time.Second)
	h.updateJob(name, func(j *batchv1.Job) {
		failedJob(j, reason, "Job has reached the specified backoff limit", h.clock.Now())
	})
}

func (h *harness) events() []string {
	var out []string
	for {
		select {
		case e := <-h.rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func (h *harness) expectCondition(t jobsetapi.JobSetConditionType, status metav1.ConditionStatus, reason, message string) {
	h.t.Helper()
	c := findCond(h.jobSet(), t)
	if c == nil || c.Status != status || c.Reason != reason || c.Message != message {
		h.t.Errorf("condition %s = %+v, want %s %s %q", t, c, status, reason, message)
	}
}

func seedLeaderWorkers(name string) *jobSetBuilder {
	return makeJobSet(name).rjob("leader", 1, 2).rjob("workers", 1, 2)
}

func TestControllerCreatesJobsAndService(t *testing.T) {
	h := newHarness(t, seedLeaderWorkers("js").obj())
	h.reconcile()
	if got := h.jobNames(); !slices.Equal(got, []string{"js-leader-0", "js-workers-0"}) {
		t.Fatalf("jobs = %v", got)
	}
	svc, err := h.kube.CoreV1().Services("default").Get(h.ctx, "js", metav1.GetOptions{})
	if err != nil || svc.Spec.ClusterIP != "None" || metav1.GetControllerOf(svc).Name != "js" {
		t.Errorf("headless service = %+v, %v", svc, err)
	}
	for _, job := range h.jobs() {
		if metav1.GetControllerOf(&job).Kind != "JobSet" || job.Labels[restartsKey] != "0" || job.Spec.Template.Spec.Subdomain != "js" {
			t.Errorf("job %s: owner/labels/subdomain wrong: %v", job.Name, job.Labels)
		}
	}
	h.allJobsReady()
	h.reconcile()
	js := h.jobSet()
	for _, s := range js.Status.ReplicatedJobsStatus {
		if s.Ready != 1 || s.Active != 1 {
			t.Errorf("status %+v, want ready 1 active 1", s)
		}
	}
	if js.Status.ReplicatedJobsStatus[0].Name != "workers" {
		t.Errorf("replicatedJobsStatus not sorted by name descending: %+v", js.Status.ReplicatedJobsStatus)
	}
}

// Seed 004 RestartJobSet with maxRestarts 3: three restarts, then Failed
// with ReachedMaxRestarts.
func TestControllerRestartJobSetUntilMaxRestarts(t *testing.T) {
	js := seedLeaderWorkers("restartjobset-action-example").failurePolicy(3,
		jobsetapi.FailurePolicyRule{Action: jobsetapi.RestartJobSet, TargetReplicatedJobs: []string{"leader"}}).obj()
	h := newHarness(t, js)
	h.reconcile()
	var events []string
	for attempt := 1; attempt <= 3; attempt++ {
		h.allJobsReady()
		h.reconcile()
		h.failJob("restartjobset-action-example-leader-0", "BackoffLimitExceeded")
		h.reconcile() // failure policy: restarts++
		if got := h.jobSet().Status.Restarts; got != int32(attempt) {
			t.Fatalf("restarts = %d, want %d", got, attempt)
		}
		h.reconcile() // deletes previous-run jobs (foreground)
		if got := h.jobNames(); len(got) != 0 {
			t.Fatalf("attempt %d: jobs not deleted: %v", attempt, got)
		}
		h.reconcile() // recreates them
		for _, job := range h.jobs() {
			if job.Labels[restartsKey] != string(rune('0'+attempt)) {
				t.Errorf("job %s restart-attempt = %s, want %d", job.Name, job.Labels[restartsKey], attempt)
			}
		}
		h.allJobsReady()
		h.reconcile()
		events = append(events, h.events()...)
	}
	h.failJob("restartjobset-action-example-leader-0", "BackoffLimitExceeded")
	h.reconcile()
	h.reconcile()
	msg := "jobset failed due to reaching max number of restarts (first failed job: restartjobset-action-example-leader-0)"
	h.expectCondition(jobsetapi.JobSetFailed, metav1.ConditionTrue, "ReachedMaxRestarts", msg)
	h.expectCondition(jobsetapi.JobSetRestarting, metav1.ConditionFalse, "JobSetFailed", "jobset failed")
	final := h.jobSet()
	if final.Status.TerminalState != "Failed" || final.Status.Restarts != 3 || final.Status.RestartsCountTowardsMax != 3 {
		t.Errorf("final status = %+v", final.Status)
	}
	if got := h.jobNames(); !slices.Equal(got, []string{"restartjobset-action-example-leader-0"}) {
		t.Errorf("jobs after failure = %v, want only the failed leader kept", got)
	}
	restartMsg := "applying RestartJobSet failure policy action (first failed job: restartjobset-action-example-leader-0)"
	perRestart := []string{
		"Warning FailurePolicy_failurePolicyRule0 " + restartMsg,
		"Warning RestartJobSetFailurePolicyAction " + restartMsg,
		"Normal JobsReady all jobs are ready",
	}
	var want []string
	for range 3 {
		want = append(want, perRestart...)
	}
	if !slices.Equal(events, want) {
		t.Errorf("events =\n%q\nwant\n%q", events, want)
	}
	if got := h.events(); !slices.Equal(got, []string{"Warning ReachedMaxRestarts " + msg, "Normal JobSetFailed jobset failed"}) {
		t.Errorf("final events = %q", got)
	}
	if v := counterValue(h.c.metrics.failedTotal.WithLabelValues("restartjobset-action-example", "default")); v != 1 {
		t.Errorf("jobset_failed_total = %v, want 1", v)
	}
}

func TestControllerFailJobSet(t *testing.T) {
	js := seedLeaderWorkers("failjobset-action-example").failurePolicy(3,
		jobsetapi.FailurePolicyRule{Action: jobsetapi.FailJobSet, TargetReplicatedJobs: []string{"leader"}}).obj()
	h := newHarness(t, js)
	h.reconcile()
	h.allJobsReady()
	h.reconcile()
	h.failJob("failjobset-action-example-leader-0", "BackoffLimitExceeded")
	h.reconcile()
	h.reconcile()
	h.expectCondition(jobsetapi.JobSetFailed, metav1.ConditionTrue, "FailJobSetFailurePolicyAction",
		"applying FailJobSet failure policy action (first failed job: failjobset-action-example-leader-0)")
	if got := h.jobNames(); !slices.Equal(got, []string{"failjobset-action-example-leader-0"}) {
		t.Errorf("jobs = %v, want the failed leader kept and workers deleted", got)
	}
	if js := h.jobSet(); js.Status.Restarts != 0 || js.Status.TerminalState != "Failed" {
		t.Errorf("status = %+v", js.Status)
	}
}

func TestControllerNoFailurePolicy(t *testing.T) {
	h := newHarness(t, seedLeaderWorkers("js").obj())
	h.reconcile()
	h.failJob("js-leader-0", "BackoffLimitExceeded")
	h.reconcile()
	h.expectCondition(jobsetapi.JobSetFailed, metav1.ConditionTrue, "FailedJobs",
		"jobset failed due to one or more job failures (first failed job: js-leader-0)")
}

func TestControllerRestartJobSetAndIgnoreMaxRestartsOnPodFailurePolicy(t *testing.T) {
	js := seedLeaderWorkers("js").failurePolicy(0,
		jobsetapi.FailurePolicyRule{Action: jobsetapi.RestartJobSetAndIgnoreMaxRestarts, OnJobFailureReasons: []string{"PodFailurePolicy"}},
		jobsetapi.FailurePolicyRule{Action: jobsetapi.RestartJobSet, TargetReplicatedJobs: []string{"leader"}}).obj()
	h := newHarness(t, js)
	h.reconcile()
	for i := 0; i < 5; i++ {
		h.failJob("js-leader-0", "PodFailurePolicy")
		h.reconcile()
		h.reconcile()
		h.reconcile()
		h.allJobsReady()
		h.reconcile()
	}
	final := h.jobSet()
	if final.Status.Restarts != 5 || final.Status.RestartsCountTowardsMax != 0 || final.Status.TerminalState != "" {
		t.Errorf("status = %+v, want restarts 5, none counted", final.Status)
	}
	h.expectCondition(jobsetapi.JobSetRestarting, metav1.ConditionFalse, "JobsReady", "all jobs are ready")
	h.failJob("js-leader-0", "BackoffLimitExceeded")
	h.reconcile()
	h.expectCondition(jobsetapi.JobSetFailed, metav1.ConditionTrue, "ReachedMaxRestarts",
		"jobset failed due to reaching max number of restarts (first failed job: js-leader-0)")
}

// Seed 004's RecreateJob: only the failed workers-a Job is recreated.
func TestControllerRecreateJob(t *testing.T) {
	js := makeJobSet("test").rjob("workers-a", 2, 2).rjob("workers-b", 3, 2).failurePolicy(3,
		jobsetapi.FailurePolicyRule{Action: "RecreateJob", TargetReplicatedJobs: []string{"workers-a"}}).obj()
	h := newHarness(t, js)
	h.reconcile()
	if len(h.jobNames()) != 5 {
		t.Fatalf("jobs = %v", h.jobNames())
	}
	h.failJob("test-workers-a-1", "BackoffLimitExceeded")
	h.reconcile()
	got := h.jobSet()
	if got.Status.Restarts != 0 {
		t.Errorf("restarts = %d, want 0", got.Status.Restarts)
	}
	if s := findReplicatedJobStatus(got.Status.ReplicatedJobsStatus, "workers-a"); s == nil || !slices.Equal(s.JobRestarts, []int32{0, 1}) {
		t.Errorf("workers-a status = %+v", s)
	}
	if ev := h.events(); !slices.Contains(ev, "Warning RestartJobFailurePolicyAction applying RestartJob failure policy action (first failed job: test-workers-a-1)") {
		t.Errorf("events = %q", ev)
	}
	h.reconcile() // deletes the failed job only
	if names := h.jobNames(); len(names) != 4 || slices.Contains(names, "test-workers-a-1") {
		t.Errorf("jobs after delete = %v", names)
	}
	h.reconcile() // recreates it
	job, err := h.kube.BatchV1().Jobs("default").Get(h.ctx, "test-workers-a-1", metav1.GetOptions{})
	if err != nil || job.Labels[jobRestartAttemptKey] != "1" || job.Labels[restartsKey] != "0" {
		t.Fatalf("recreated job = %v, %v", job, err)
	}
	// A failure in workers-b takes the default RestartJobSet action.
	h.failJob("test-workers-b-2", "BackoffLimitExceeded")
	h.reconcile()
	h.expectCondition(jobsetapi.JobSetRestarting, metav1.ConditionTrue, "DefaultFailurePolicy",
		"applying RestartJobSet failure policy action (first failed job: test-workers-b-2)")
	if got := h.jobSet().Status; got.Restarts != 1 || got.RestartsCountTowardsMax != 1 {
		t.Errorf("restarts = %d/%d, want 1/1", got.Restarts, got.RestartsCountTowardsMax)
	}
}

func TestControllerSuccessPolicyAnyDeletesRemainingJobs(t *testing.T) {
	js := seedLeaderWorkers("js").successPolicy(jobsetapi.OperatorAny, "workers").obj()
	h := newHarness(t, js)
	h.reconcile()
	h.updateJob("js-workers-0", func(j *batchv1.Job) { completedJob(j) })
	h.reconcile()
	h.expectCondition(jobsetapi.JobSetCompleted, metav1.ConditionTrue, "AllJobsCompleted", "jobset completed successfully")
	h.reconcile()
	if got := h.jobNames(); !slices.Equal(got, []string{"js-workers-0"}) {
		t.Errorf("jobs = %v, want the running leader deleted", got)
	}
	if ev := h.events(); !slices.Equal(ev, []string{"Normal AllJobsCompleted jobset completed successfully"}) {
		t.Errorf("events = %q", ev)
	}
	if v := counterValue(h.c.metrics.completedTotal.WithLabelValues("js", "default")); v != 1 {
		t.Errorf("jobset_completed_total = %v, want 1", v)
	}
}

func TestControllerTTLAfterFinished(t *testing.T) {
	js := makeJobSet("js").rjob("leader", 1, 1).obj()
	js.Spec.TTLSecondsAfterFinished = ptr.To[int32](30)
	h := newHarness(t, js)
	h.reconcile()
	h.updateJob("js-leader-0", func(j *batchv1.Job) { completedJob(j) })
	h.reconcile()
	if after := h.reconcile(); after != 30*time.Second {
		t.Errorf("requeue after = %v, want 30s", after)
	}
	h.clock.Step(31 * time.Second)
	h.reconcile()
	if _, err := h.jobsets.JobsetV1alpha2().JobSets("default").Get(h.ctx, "js", metav1.GetOptions{}); err == nil {
		t.Errorf("jobset not deleted after ttl")
	}
}

func TestControllerSuspendPropagates(t *testing.T) {
	h := newHarness(t, seedLeaderWorkers("js").suspend(true).obj())
	h.reconcile()
	for _, job := range h.jobs() {
		if !ptr.Deref(job.Spec.Suspend, false) {
			t.Errorf("job %s created unsuspended", job.Name)
		}
	}
	h.expectCondition(jobsetapi.JobSetSuspended, metav1.ConditionTrue, "SuspendedJobs", "jobset is suspended")
}

func counterValue(c prometheus.Counter) float64 {
	m := &dto.Metric{}
	if err := c.Write(m); err != nil {
		return -1
	}
	return m.GetCounter().GetValue()
}

func TestControllerCreationFailuresRaiseEvents(t *testing.T) {
	h := newHarness(t, makeJobSet("js").rjob("leader", 1, 1).obj())
	h.kube.PrependReactor("create", "jobs", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("quota exceeded")
	})
	failServices := true
	h.kube.PrependReactor("create", "services", func(k8stesting.Action) (bool, runtime.Object, error) {
		return failServices, nil, errors.New("no services today")
	})
	h.refresh()
	if _, err := h.c.sync(h.ctx, h.key); err == nil {
		t.Fatalf("sync succeeded although service creation failed")
	}
	if ev := h.events(); !slices.Equal(ev, []string{"Warning HeadlessServiceCreationFailed no services today"}) {
		t.Errorf("events = %q", ev)
	}
	failServices = false
	if _, err := h.c.sync(h.ctx, h.key); err == nil {
		t.Fatalf("sync succeeded although job creation failed")
	}
	want := `Warning JobCreationFailed job "js-leader-0" creation failed with error: quota exceeded`
	if ev := h.events(); !slices.Equal(ev, []string{want}) {
		t.Errorf("events = %q, want %q", ev, want)
	}
	if js := h.jobSet(); len(js.Status.ReplicatedJobsStatus) != 0 {
		t.Errorf("status written although the reconcile failed: %+v", js.Status)
	}
}
