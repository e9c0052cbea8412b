package job

import (
	"slices"
	"strings"
	"testing"
	"time"

	batch "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestScenarioPi(t *testing.T) {
	h := newHarness(t)
	job := h.createJob(newTestJob("pi", 1, 1))
	h.eventually("pod created", 10*time.Millisecond, func() bool { return len(h.pods("default")) == 1 })
	p := h.pods("default")[0]
	if !strings.HasPrefix(p.Name, "pi-") || !slices.Contains(p.Finalizers, batch.JobTrackingFinalizer) {
		t.Fatalf("pod %s finalizers %v", p.Name, p.Finalizers)
	}
	h.finishPods("default", func(*v1.Pod) (v1.PodPhase, int32) { return v1.PodSucceeded, 0 })
	h.eventually("job finished", 100*time.Millisecond, jobFinished(h, job))
	got := h.getJob(job)
	if got.Status.Succeeded != 1 || got.Status.Failed != 0 || got.Status.Active != 0 {
		t.Errorf("counters: %+v", got.Status)
	}
	want := []string{"SuccessCriteriaMet=True/CompletionsReached", "Complete=True/CompletionsReached"}
	if !slices.Equal(condTypes(got), want) {
		t.Errorf("conditions %v, want %v", condTypes(got), want)
	}
	if got.Status.CompletionTime == nil || got.Status.StartTime == nil {
		t.Errorf("times not set: %+v", got.Status)
	}
	if c := got.Status.Conditions[1]; c.Message != "Reached expected number of succeeded pods" {
		t.Errorf("message %q", c.Message)
	}
	h.eventually("finalizer removed", time.Millisecond, func() bool {
		return len(h.pods("default")[0].Finalizers) == 0
	})
	h.eventually("events", time.Millisecond, func() bool { return len(h.drainEvents()) >= 2 })
	ev := h.drainEvents()
	if !strings.HasPrefix(ev[0], "Normal SuccessfulCreate Created pod: pi-") || ev[1] != "Normal Completed Job completed" {
		t.Errorf("events %q", ev)
	}
}

func TestScenarioPodFailurePolicyExit42(t *testing.T) {
	h := newHarness(t)
	j := newTestJob("job-pod-failure-policy-example", 12, 3)
	j.Spec.PodReplacementPolicy = ptr.To(batch.Failed)
	j.Spec.BackoffLimit = ptr.To[int32](6)
	j.Spec.PodFailurePolicy = &batch.PodFailurePolicy{Rules: []batch.PodFailurePolicyRule{
		{Action: batch.PodFailurePolicyActionFailJob, OnExitCodes: &batch.PodFailurePolicyOnExitCodesRequirement{
			ContainerName: ptr.To("main"), Operator: batch.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}}},
		{Action: batch.PodFailurePolicyActionIgnore, OnPodConditions: []batch.PodFailurePolicyOnPodConditionsPattern{
			{Type: v1.DisruptionTarget}}},
	}}
	job := h.createJob(j)
	h.eventually("3 pods", 10*time.Millisecond, func() bool { return len(h.pods("default")) == 3 })
	h.finishPods("default", func(*v1.Pod) (v1.PodPhase, int32) { return v1.PodFailed, 42 })
	h.eventually("job finished", 100*time.Millisecond, jobFinished(h, job))
	got := h.getJob(job)
	if got.Status.Failed != 3 || got.Status.Succeeded != 0 {
		t.Errorf("counters failed=%d succeeded=%d", got.Status.Failed, got.Status.Succeeded)
	}
	want := []string{"FailureTarget=True/PodFailurePolicy", "Failed=True/PodFailurePolicy"}
	if !slices.Equal(condTypes(got), want) {
		t.Fatalf("conditions %v, want %v", condTypes(got), want)
	}
	msg := got.Status.Conditions[1].Message
	if !strings.HasPrefix(msg, "Container main for pod default/job-pod-failure-policy-example-") ||
		!strings.HasSuffix(msg, " failed with exit code 42 matching FailJob rule at index 0") {
		t.Errorf("message %q", msg)
	}
	h.eventually("events", time.Millisecond, func() bool { return len(h.drainEvents()) >= 4 })
	ev := h.drainEvents()
	if !strings.HasPrefix(ev[3], "Warning PodFailurePolicy Container main for pod") {
		t.Errorf("events %q", ev)
	}
}

func TestScenarioBackoffLimitPerIndexExecuteAll(t *testing.T) {
	h := newHarness(t)
	j := newTestJob("job-backoff-limit-per-index-execute-all", 8, 2)
	j.Spec.CompletionMode = ptr.To(batch.IndexedCompletion)
	j.Spec.BackoffLimitPerIndex = ptr.To[int32](1)
	j.Spec.BackoffLimit = ptr.To[int32](2147483647)
	job := h.createJob(j)
	outcome := func(p *v1.Pod) (v1.PodPhase, int32) {
		switch p.Annotations[batch.JobCompletionIndexAnnotation] {
		case "1", "2":
			return v1.PodFailed, 1
		}
		return v1.PodSucceeded, 0
	}
	h.eventually("job finished", 500*time.Millisecond, func() bool {
		h.finishPods("default", outcome)
		return IsJobFinished(h.getJob(job))
	})
	got := h.getJob(job)
	if got.Status.CompletedIndexes != "0,3-7" || ptr.Deref(got.Status.FailedIndexes, "<nil>") != "1,2" {
		t.Errorf("indexes completed=%q failed=%v", got.Status.CompletedIndexes, ptr.Deref(got.Status.FailedIndexes, "<nil>"))
	}
	if got.Status.Succeeded != 6 || got.Status.Failed != 4 {
		t.Errorf("succeeded=%d failed=%d", got.Status.Succeeded, got.Status.Failed)
	}
	want := []string{"FailureTarget=True/FailedIndexes", "Failed=True/FailedIndexes"}
	if !slices.Equal(condTypes(got), want) || got.Status.Conditions[1].Message != "Job has failed indexes" {
		t.Errorf("conditions %v", got.Status.Conditions)
	}
	h.eventually("events", time.Millisecond, func() bool { return len(h.drainEvents()) >= 11 })
	ev := h.drainEvents()
	creates := 0
	for _, e := range ev[:10] {
		if strings.HasPrefix(e, "Normal SuccessfulCreate") {
			creates++
		}
	}
	if creates != 10 || ev[10] != "Warning FailedIndexes Job has failed indexes" {
		t.Errorf("events %q", ev)
	}
}

func TestScenarioBackoffLimit(t *testing.T) {
	h := newHarness(t)
	j := newTestJob("backoff", 1, 1)
	j.Spec.BackoffLimit = ptr.To[int32](2)
	job := h.createJob(j)
	h.eventually("job finished", 500*time.Millisecond, func() bool {
		h.finishPods("default", func(*v1.Pod) (v1.PodPhase, int32) { return v1.PodFailed, 1 })
		return IsJobFinished(h.getJob(job))
	})
	got := h.getJob(job)
	want := []string{"FailureTarget=True/BackoffLimitExceeded", "Failed=True/BackoffLimitExceeded"}
	if got.Status.Failed != 3 || !slices.Equal(condTypes(got), want) {
		t.Errorf("failed=%d conditions %v", got.Status.Failed, condTypes(got))
	}
	if got.Status.Conditions[1].Message != "Job has reached the specified backoff limit" {
		t.Errorf("message %q", got.Status.Conditions[1].Message)
	}
}
