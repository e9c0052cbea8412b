package job

import (
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	batch "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

func TestScenarioSuspendResume(t *testing.T) {
	h := newHarness(t)
	j := newTestJob("susp", 4, 2)
	j.Spec.Suspend = ptr.To(true)
	job := h.createJob(j)
	h.eventually("suspended condition", 10*time.Millisecond, func() bool {
		return slices.Equal(condTypes(h.getJob(job)), []string{"Suspended=True/JobSuspended"})
	})
	if got := h.getJob(job); got.Status.StartTime != nil || len(h.pods("default")) != 0 {
		t.Fatalf("suspended job started: %+v", got.Status)
	}
	cur := h.getJob(job)
	cur.Spec.Suspend = ptr.To(false)
	cur.Generation++
	if _, err := h.client.BatchV1().Jobs("default").Update(h.ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.eventually("job finished", 100*time.Millisecond, func() bool {
		h.finishPods("default", func(*v1.Pod) (v1.PodPhase, int32) { return v1.PodSucceeded, 0 })
		return IsJobFinished(h.getJob(job))
	})
	got := h.getJob(job)
	want := []string{"Suspended=False/JobResumed", "SuccessCriteriaMet=True/CompletionsReached", "Complete=True/CompletionsReached"}
	if got.Status.Succeeded != 4 || !slices.Equal(condTypes(got), want) {
		t.Errorf("succeeded %d conditions %v", got.Status.Succeeded, condTypes(got))
	}
	h.eventually("events", time.Millisecond, func() bool { return len(h.drainEvents()) >= 7 })
	var reasons []string
	for _, e := range h.drainEvents() {
		reasons = append(reasons, strings.Fields(e)[1])
	}
	wantEv := []string{"Suspended", "SuccessfulCreate", "SuccessfulCreate", "Resumed", "SuccessfulCreate", "SuccessfulCreate", "Completed"}
	if !slices.Equal(reasons, wantEv) {
		t.Errorf("events %v, want %v", reasons, wantEv)
	}
}

// TestScenarioResumeEventFollowsTheStatusWrite: a resume whose status
// write conflicts is retried; the Resumed event is recorded once, by the
// try whose write went through, not once per try.
func TestScenarioResumeEventFollowsTheStatusWrite(t *testing.T) {
	h := newHarness(t)
	j := newTestJob("resume-conflict", 1, 1)
	j.Spec.Suspend = ptr.To(true)
	job := h.createJob(j)
	h.eventually("suspended condition", 10*time.Millisecond, func() bool {
		return slices.Equal(condTypes(h.getJob(job)), []string{"Suspended=True/JobSuspended"})
	})
	var conflicts atomic.Int32
	h.client.PrependReactor("update", "jobs", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() == "status" && conflicts.Add(1) == 1 {
			return true, nil, apierrors.NewConflict(batch.Resource("jobs"), job.Name, errors.New("the object has been modified"))
		}
		return false, nil, nil
	})
	cur := h.getJob(job)
	cur.Spec.Suspend = ptr.To(false)
	if _, err := h.client.BatchV1().Jobs("default").Update(h.ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.eventually("resumed condition", 10*time.Millisecond, func() bool {
		return slices.Equal(condTypes(h.getJob(job)), []string{"Suspended=False/JobResumed"})
	})
	h.eventually("job finished", 100*time.Millisecond, func() bool {
		h.finishPods("default", func(*v1.Pod) (v1.PodPhase, int32) { return v1.PodSucceeded, 0 })
		return IsJobFinished(h.getJob(job))
	})
	if conflicts.Load() < 2 {
		t.Fatalf("status writes after resume = %d, want the conflicting one and a retry", conflicts.Load())
	}
	h.eventually("Completed event", time.Millisecond, func() bool {
		return slices.ContainsFunc(h.drainEvents(), func(e string) bool { return strings.Contains(e, "Completed") })
	})
	resumed := 0
	for _, e := range h.drainEvents() {
		if strings.Fields(e)[1] == "Resumed" {
			resumed++
		}
	}
	if resumed != 1 {
		t.Errorf("Resumed events = %d, want 1: %v", resumed, h.drainEvents())
	}
}

func TestScenarioManagedByExternalIsSkipped(t *testing.T) {
	h := newHarness(t)
	j := newTestJob("ext", 1, 1)
	j.Spec.ManagedBy = ptr.To("example.com/other")
	job := h.createJob(j)
	if err := h.ctrl.SyncJob(h.ctx, "default/ext"); err != nil {
		t.Fatal(err)
	}
	if got := h.getJob(job); got.Status.StartTime != nil || len(h.pods("default")) != 0 {
		t.Errorf("external job touched: %+v", got.Status)
	}
}

func TestScenarioDeadline(t *testing.T) {
	h := newHarness(t)
	j := newTestJob("deadline", 1, 1)
	j.Spec.ActiveDeadlineSeconds = ptr.To[int64](3)
	job := h.createJob(j)
	h.eventually("job finished", 200*time.Millisecond, jobFinished(h, job))
	got := h.getJob(job)
	want := []string{"FailureTarget=True/DeadlineExceeded", "Failed=True/DeadlineExceeded"}
	if !slices.Equal(condTypes(got), want) || got.Status.Failed != 1 || got.Status.Conditions[1].Message != "Job was active longer than specified deadline" {
		t.Errorf("failed %d conditions %v", got.Status.Failed, got.Status.Conditions)
	}
	_ = batch.JobFailed
}

// TestSettledPodReleasedAfterLabelChange: a counted pod (Succeeded, tracking
// finalizer gone) is no longer walked by every sync, but when its labels
// stop matching the selector the Job still releases it, as upstream does.
func TestSettledPodReleasedAfterLabelChange(t *testing.T) {
	h := newHarness(t)
	job := h.createJob(newTestJob("settled", 3, 1))
	h.eventually("first pod", 10*time.Millisecond, func() bool { return len(h.pods("default")) == 1 })
	h.finishPods("default", func(*v1.Pod) (v1.PodPhase, int32) { return v1.PodSucceeded, 0 })
	var first v1.Pod
	h.eventually("first pod counted", 10*time.Millisecond, func() bool {
		for _, p := range h.pods("default") {
			if p.Status.Phase == v1.PodSucceeded && len(p.Finalizers) == 0 {
				first = p
			}
		}
		return first.Name != "" && h.getJob(job).Status.Succeeded == 1
	})
	first.Labels = map[string]string{"moved": "away"}
	if _, err := h.client.CoreV1().Pods("default").Update(h.ctx, &first, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("relabel pod: %v", err)
	}
	h.eventually("settled pod released", 10*time.Millisecond, func() bool {
		p, err := h.client.CoreV1().Pods("default").Get(h.ctx, first.Name, metav1.GetOptions{})
		return err == nil && len(p.OwnerReferences) == 0
	})
	if got := h.getJob(job); got.Status.Succeeded != 1 {
		t.Errorf("succeeded=%d after release, want 1", got.Status.Succeeded)
	}
}

// TestSyncSkipsACacheBehindItsOwnStatusUpdate: a Job whose cached copy is
// one the controller's own status update replaced is not acted on (its
// pods may already show what that copy's status does not: finalizers
// removed, counts not yet moved), so no replacement pod is created from
// it; once the cache shows a later copy the Job is synced again.
func TestSyncSkipsACacheBehindItsOwnStatusUpdate(t *testing.T) {
	h := newHarness(t)
	job := h.createJob(newTestJob("behind", 2, 1))
	h.eventually("first pod", 10*time.Millisecond, func() bool { return len(h.pods("default")) == 1 })
	key := "default/behind"
	h.eventually("job in cache", time.Millisecond, func() bool {
		cached, err := h.ctrl.jobLister.Jobs("default").Get("behind")
		if err != nil {
			return false
		}
		job = cached
		return cached.Status.StartTime != nil
	})
	h.ctrl.ownWrites.Wrote(key, job.ResourceVersion, "written-by-the-controller")
	pod := h.pods("default")[0]
	if err := h.client.CoreV1().Pods("default").Delete(h.ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.eventually("pod gone from the cache", time.Millisecond, func() bool {
		pods, _ := h.ctrl.podLister.Pods("default").List(labels.Everything())
		return len(pods) == 0
	})
	if err := h.ctrl.syncJob(h.ctx, key); err != nil {
		t.Fatal(err)
	}
	if n := len(h.pods("default")); n != 0 {
		t.Fatalf("a sync on the replaced copy created %d pods", n)
	}

	cur := h.getJob(job)
	cur.Annotations = map[string]string{"moved": "on"}
	if _, err := h.client.BatchV1().Jobs("default").Update(h.ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.eventually("replacement pod once the cache moved on", 10*time.Millisecond, func() bool { return len(h.pods("default")) == 1 })
}

// TestModeManages: which Jobs, by spec.managedBy, each mode acts on.
func TestModeManages(t *testing.T) {
	for _, tc := range []struct {
		mode      Mode
		managedBy string
		want      bool
	}{
		{ModeReplace, "", true},
		{ModeReplace, batch.JobControllerName, true},
		{ModeReplace, BatchletControllerName, true},
		{ModeReplace, "example.com/other", false},
		{"", "", true}, // the zero value is replace
		{ModeAlongside, "", false},
		{ModeAlongside, batch.JobControllerName, false},
		{ModeAlongside, BatchletControllerName, true},
		{ModeAlongside, "example.com/other", false},
	} {
		if got := tc.mode.manages(tc.managedBy); got != tc.want {
			t.Errorf("Mode(%q).manages(%q) = %v, want %v", tc.mode, tc.managedBy, got, tc.want)
		}
	}
	if _, err := ParseMode("sideways"); err == nil || err.Error() != `job controller mode "sideways": want "replace" or "alongside"` {
		t.Errorf("ParseMode(sideways) error = %v", err)
	}
}

// TestScenarioAlongsideLeavesKCMJobs: in alongside mode a Job without
// managedBy is kube-controller-manager's and is not touched; one with
// batchlet's managedBy runs to completion.
func TestScenarioAlongsideLeavesKCMJobs(t *testing.T) {
	h := newHarness(t, Options{Mode: ModeAlongside})
	kcm := h.createJob(newTestJob("kcm", 1, 1))
	ours := newTestJob("ours", 1, 1)
	ours.Spec.ManagedBy = ptr.To(BatchletControllerName)
	mine := h.createJob(ours)
	h.eventually("batchlet's job finished", 100*time.Millisecond, func() bool {
		h.finishPods("default", func(*v1.Pod) (v1.PodPhase, int32) { return v1.PodSucceeded, 0 })
		return IsJobFinished(h.getJob(mine))
	})
	if err := h.ctrl.SyncJob(h.ctx, "default/kcm"); err != nil {
		t.Fatal(err)
	}
	if got := h.getJob(kcm); got.Status.StartTime != nil {
		t.Errorf("kube-controller-manager's job touched: %+v", got.Status)
	}
	for _, p := range h.pods("default") {
		if p.Labels["batch.kubernetes.io/job-name"] == "kcm" {
			t.Errorf("pod %s created for kube-controller-manager's job", p.Name)
		}
	}
}
