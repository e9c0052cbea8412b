package jobset

import (
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	jobsetapi "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

func mustDecide(t *testing.T, js *jobsetapi.JobSet, jobs []*batchv1.Job, serviceExists bool) *plan {
	t.Helper()
	p, err := decide(observed{js: js, jobs: jobs, serviceExists: serviceExists}, t0, discardLogger())
	if err != nil {
		t.Fatalf("decide: %v", err)
	}
	return p
}

func TestDecideCreatesJobsAndService(t *testing.T) {
	js := makeJobSet("js").rjob("leader", 1, 2).rjob("workers", 2, 2).obj()
	p := mustDecide(t, js, nil, false)
	want := []string{"js-leader-0", "js-workers-0", "js-workers-1"}
	if got := jobNames(p.createJobs); !slices.Equal(got, want) {
		t.Errorf("created %v, want %v", got, want)
	}
	svc := p.createService
	if svc == nil || svc.Name != "js" || svc.Spec.ClusterIP != "None" || !svc.Spec.PublishNotReadyAddresses ||
		svc.Spec.Selector[jobsetapi.JobSetNameKey] != "js" {
		t.Errorf("headless service = %+v", svc)
	}
	if p2 := mustDecide(t, js, nil, true); p2.createService != nil {
		t.Errorf("service created although it exists")
	}
	if len(p.js.Status.ReplicatedJobsStatus) != 2 || !p.updateStatus {
		t.Errorf("replicatedJobsStatus = %+v, update %v", p.js.Status.ReplicatedJobsStatus, p.updateStatus)
	}
}

func TestDecideInOrderStartup(t *testing.T) {
	js := makeJobSet("js").rjob("leader", 1, 2).rjob("workers", 1, 2).inOrder().obj()
	p := mustDecide(t, js, nil, true)
	if got := jobNames(p.createJobs); !slices.Equal(got, []string{"js-leader-0"}) {
		t.Errorf("first pass created %v, want only the leader", got)
	}
	if c := findCond(p.js, jobsetapi.JobSetStartupPolicyInProgress); c == nil || c.Status != metav1.ConditionTrue || c.Reason != reasonInOrderInProgress {
		t.Errorf("StartupPolicyInProgress = %+v", c)
	}
	leader := childJob(js, "leader", 0)
	p = mustDecide(t, p.js, []*batchv1.Job{leader}, true)
	if len(p.createJobs) != 0 {
		t.Errorf("workers created before the leader is ready: %v", jobNames(p.createJobs))
	}
	p = mustDecide(t, p.js, []*batchv1.Job{readyJob(leader)}, true)
	if got := jobNames(p.createJobs); !slices.Equal(got, []string{"js-workers-0"}) {
		t.Errorf("after leader ready created %v, want workers", got)
	}
	p = mustDecide(t, p.js, []*batchv1.Job{leader, readyJob(childJob(js, "workers", 0))}, true)
	inProgress := findCond(p.js, jobsetapi.JobSetStartupPolicyInProgress)
	completed := findCond(p.js, jobsetapi.JobSetStartupPolicyCompleted)
	if inProgress == nil || inProgress.Status != metav1.ConditionFalse || completed == nil || completed.Status != metav1.ConditionTrue || completed.Reason != reasonInOrderCompleted {
		t.Errorf("startup conditions: in progress %+v, completed %+v", inProgress, completed)
	}
}

func TestDecideRestartDeletesPreviousJobs(t *testing.T) {
	js := makeJobSet("js").rjob("leader", 1, 1).rjob("workers", 1, 1).failurePolicy(3).obj()
	oldLeader := childJob(js, "leader", 0)
	oldWorkers := childJob(js, "workers", 0)
	js.Status.Restarts = 1
	p := mustDecide(t, js, []*batchv1.Job{oldLeader, oldWorkers}, true)
	if got := jobNames(p.deleteJobs); !slices.Equal(got, []string{"js-leader-0", "js-workers-0"}) {
		t.Errorf("deleted %v, want both previous jobs", got)
	}
	if len(p.createJobs) != 0 {
		t.Errorf("created %v while old jobs exist", jobNames(p.createJobs))
	}
	p = mustDecide(t, js, nil, true)
	for _, job := range p.createJobs {
		if job.Labels[restartsKey] != "1" {
			t.Errorf("%s restart-attempt = %q, want 1", job.Name, job.Labels[restartsKey])
		}
	}
	if len(p.createJobs) != 2 {
		t.Errorf("recreated %v, want 2 jobs", jobNames(p.createJobs))
	}
}

func TestDecideRestartingFalseWhenJobsReady(t *testing.T) {
	js := makeJobSet("js").rjob("leader", 1, 1).failurePolicy(3).restarts(1).obj()
	js.Status.Conditions = []metav1.Condition{{Type: "RestartingJobSet", Status: metav1.ConditionTrue, Reason: reasonDefaultFailurePolicy, LastTransitionTime: metav1.NewTime(t0)}}
	p := mustDecide(t, js, []*batchv1.Job{readyJob(childJob(js, "leader", 0))}, true)
	c := findCond(p.js, jobsetapi.JobSetRestarting)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != reasonJobsReady || c.Message != messageJobsReady {
		t.Errorf("RestartingJobSet = %+v, want False JobsReady", c)
	}
	if got := eventStrings(p.events); !slices.Equal(got, []string{"Normal JobsReady all jobs are ready"}) {
		t.Errorf("events = %q", got)
	}
}

func TestDecideFinishedJobSet(t *testing.T) {
	js := makeJobSet("js").rjob("leader", 1, 1).rjob("workers", 1, 1).successPolicy(jobsetapi.OperatorAny, "workers").obj()
	leader := readyJob(childJob(js, "leader", 0))
	workers := completedJob(childJob(js, "workers", 0))
	p := mustDecide(t, js, []*batchv1.Job{leader, workers}, true)
	c := findCond(p.js, jobsetapi.JobSetCompleted)
	if c == nil || c.Reason != reasonAllJobsCompleted || c.Message != messageAllJobsCompleted || p.js.Status.TerminalState != "Completed" || !p.completed {
		t.Fatalf("Completed = %+v, terminalState %q", c, p.js.Status.TerminalState)
	}
	p = mustDecide(t, p.js, []*batchv1.Job{leader, workers}, true)
	if got := jobNames(p.deleteJobs); !slices.Equal(got, []string{"js-leader-0"}) {
		t.Errorf("deleted %v, want the still-active leader", got)
	}
	if len(p.createJobs) != 0 || p.createService != nil || len(p.events) != 0 {
		t.Errorf("finished jobset plans more work: %+v", p)
	}
}

func TestDecideSuspendAndResume(t *testing.T) {
	js := makeJobSet("js").rjob("leader", 1, 1).suspend(true).obj()
	running := childJob(js, "leader", 0)
	running.Spec.Suspend = ptr.To(false)
	p := mustDecide(t, js, []*batchv1.Job{running}, true)
	if len(p.jobsToSuspend) != 1 || !ptr.Deref(p.jobsToSuspend[0].Spec.Suspend, false) {
		t.Errorf("jobs to suspend = %v", p.jobsToSuspend)
	}
	if c := findCond(p.js, jobsetapi.JobSetSuspended); c == nil || c.Status != metav1.ConditionTrue || c.Reason != reasonSuspended {
		t.Errorf("Suspended = %+v", c)
	}
	resumed := p.js.DeepCopy()
	resumed.Spec.Suspend = ptr.To(false)
	resumed.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.NodeSelector = map[string]string{"zone": "a"}
	suspendedJob := childJob(js, "leader", 0)
	startTime := metav1.NewTime(t0.Add(-time.Minute))
	suspendedJob.Status.StartTime = &startTime
	p = mustDecide(t, resumed, []*batchv1.Job{suspendedJob}, true)
	if len(p.jobsToResume) != 1 || ptr.Deref(p.jobsToResume[0].Spec.Suspend, true) || p.jobsToResume[0].Spec.Template.Spec.NodeSelector["zone"] != "a" {
		t.Fatalf("jobs to resume = %+v", p.jobsToResume)
	}
	if c := findCond(p.js, jobsetapi.JobSetSuspended); c == nil || c.Status != metav1.ConditionFalse || c.Reason != reasonResumed || c.Message != messageResumed {
		t.Errorf("Suspended = %+v, want False ResumeJobs", c)
	}
}

func TestDecideIgnoresForeignAndPreviousRestartJob(t *testing.T) {
	js := makeJobSet("js").rjob("workers", 2, 1).failurePolicy(3, jobsetapi.FailurePolicyRule{Action: jobsetapi.RestartJob}).obj()
	js.Status.ReplicatedJobsStatus = []jobsetapi.ReplicatedJobStatus{{Name: "workers", JobRestarts: []int32{0, 1}, JobRestartsCountTowardsMax: []int32{0, 1}}}
	stale := failedJob(childJob(makeJobSet("js").rjob("workers", 2, 1).obj(), "workers", 1), "BackoffLimitExceeded", "", t0)
	p := mustDecide(t, js, []*batchv1.Job{readyJob(childJob(js, "workers", 0)), stale}, true)
	if got := jobNames(p.deleteJobs); !slices.Equal(got, []string{"js-workers-1"}) {
		t.Errorf("deleted %v, want the restarted job", got)
	}
	if findCond(p.js, jobsetapi.JobSetFailed) != nil || len(p.createJobs) != 0 {
		t.Errorf("stale failed job must not trigger the failure policy nor be recreated yet")
	}
	p = mustDecide(t, js, []*batchv1.Job{readyJob(childJob(js, "workers", 0))}, true)
	if len(p.createJobs) != 1 || p.createJobs[0].Labels[jobRestartAttemptKey] != "1" {
		t.Errorf("recreated %v", p.createJobs)
	}
}

func TestDecideDependsOnReady(t *testing.T) {
	js := makeJobSet("js").rjob("initializer", 1, 1).rjob("trainer", 2, 1).obj()
	js.Spec.ReplicatedJobs[1].DependsOn = []jobsetapi.DependsOn{{Name: "initializer", Status: jobsetapi.DependencyReady}}
	p := mustDecide(t, js, nil, true)
	if got := jobNames(p.createJobs); !slices.Equal(got, []string{"js-initializer-0"}) {
		t.Errorf("created %v, want only the initializer", got)
	}
	init := childJob(js, "initializer", 0)
	p = mustDecide(t, p.js, []*batchv1.Job{init}, true)
	if len(p.createJobs) != 0 {
		t.Errorf("trainer created before its dependency is ready: %v", jobNames(p.createJobs))
	}
	p = mustDecide(t, p.js, []*batchv1.Job{readyJob(init)}, true)
	if got := jobNames(p.createJobs); !slices.Equal(got, []string{"js-trainer-0", "js-trainer-1"}) {
		t.Errorf("created %v, want the trainers", got)
	}
}
