package jobset

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	jobsetapi "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

func TestUpdateCondition(t *testing.T) {
	earlier := metav1.NewTime(t0)
	now := t0.Add(time.Hour)
	suspended := metav1.Condition{Type: "Suspended", Status: metav1.ConditionTrue, Reason: reasonSuspended, Message: messageSuspended, LastTransitionTime: earlier}
	cases := map[string]struct {
		existing    []metav1.Condition
		cond        metav1.Condition
		wantChanged bool
		want        []metav1.Condition
	}{
		"no existing conditions, false condition not added": {
			cond: metav1.Condition{Type: "RestartingJobSet", Status: metav1.ConditionFalse, Reason: reasonJobsReady}, wantChanged: false},
		"no existing conditions, add a true condition": {
			cond: metav1.Condition{Type: "Suspended", Status: metav1.ConditionTrue, Reason: reasonSuspended, Message: messageSuspended}, wantChanged: true,
			want: []metav1.Condition{{Type: "Suspended", Status: metav1.ConditionTrue, Reason: reasonSuspended, Message: messageSuspended, LastTransitionTime: metav1.NewTime(now)}}},
		"resume updates the suspended condition in place": {existing: []metav1.Condition{suspended},
			cond: metav1.Condition{Type: "Suspended", Status: metav1.ConditionFalse, Reason: reasonResumed, Message: messageResumed}, wantChanged: true,
			want: []metav1.Condition{{Type: "Suspended", Status: metav1.ConditionFalse, Reason: reasonResumed, Message: messageResumed, LastTransitionTime: metav1.NewTime(now)}}},
		"duplicate is a no-op": {existing: []metav1.Condition{suspended}, cond: suspended, want: []metav1.Condition{suspended}},
		"reason change keeps the transition time": {existing: []metav1.Condition{suspended},
			cond: metav1.Condition{Type: "Suspended", Status: metav1.ConditionTrue, Reason: "Other", Message: "m"}, wantChanged: true,
			want: []metav1.Condition{{Type: "Suspended", Status: metav1.ConditionTrue, Reason: "Other", Message: "m", LastTransitionTime: earlier}}},
		"startup completed flips in progress to false": {
			existing:    []metav1.Condition{{Type: "StartupPolicyInProgress", Status: metav1.ConditionTrue, Reason: reasonInOrderInProgress, Message: messageInOrderInProgress, LastTransitionTime: earlier}},
			cond:        metav1.Condition{Type: "StartupPolicyCompleted", Status: metav1.ConditionTrue, Reason: reasonInOrderCompleted, Message: messageInOrderCompleted},
			wantChanged: true,
			want: []metav1.Condition{
				{Type: "StartupPolicyInProgress", Status: metav1.ConditionFalse, Reason: reasonInOrderInProgress, Message: messageInOrderInProgress, LastTransitionTime: earlier},
				{Type: "StartupPolicyCompleted", Status: metav1.ConditionTrue, Reason: reasonInOrderCompleted, Message: messageInOrderCompleted, LastTransitionTime: metav1.NewTime(now)}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			status := jobsetapi.JobSetStatus{Conditions: append([]metav1.Condition(nil), tc.existing...)}
			if got := updateCondition(&status, tc.cond, now); got != tc.wantChanged {
				t.Errorf("changed = %v, want %v", got, tc.wantChanged)
			}
			if len(status.Conditions) != len(tc.want) {
				t.Fatalf("conditions = %+v, want %+v", status.Conditions, tc.want)
			}
			for i := range tc.want {
				if !status.Conditions[i].LastTransitionTime.Equal(&tc.want[i].LastTransitionTime) {
					t.Errorf("condition %d time = %v, want %v", i, status.Conditions[i].LastTransitionTime, tc.want[i].LastTransitionTime)
				}
				status.Conditions[i].LastTransitionTime = tc.want[i].LastTransitionTime
				if status.Conditions[i] != tc.want[i] {
					t.Errorf("condition %d = %+v, want %+v", i, status.Conditions[i], tc.want[i])
				}
			}
		})
	}
}

func TestCalculateReplicatedJobStatuses(t *testing.T) {
	js := makeJobSet("js").rjob("leader", 1, 2).rjob("workers", 4, 2).obj()
	partial := childJob(js, "workers", 1)
	partial.Status.Ready = ptr.To[int32](1)
	partial.Status.Active = 2
	suspended := childJob(js, "workers", 2)
	suspended.Spec.Suspend = ptr.To(true)
	jobs := &childJobs{
		active:     []*batchv1.Job{readyJob(childJob(js, "leader", 0)), partial, suspended},
		successful: []*batchv1.Job{completedJob(childJob(js, "workers", 0))},
		failed:     []*batchv1.Job{failedJob(childJob(js, "workers", 3), "BackoffLimitExceeded", "", t0)},
	}
	got := calculateReplicatedJobStatuses(js, jobs, discardLogger())
	want := []jobsetapi.ReplicatedJobStatus{
		{Name: "workers", Ready: 0, Succeeded: 1, Failed: 1, Active: 1, Suspended: 1},
		{Name: "leader", Ready: 1, Active: 1},
	}
	if !replicatedJobStatusesEqual(got, want) || got[0].Name != "workers" {
		t.Errorf("statuses = %+v, want %+v (sorted by name, descending)", got, want)
	}
}

func TestSuccessPolicy(t *testing.T) {
	base := func() *jobSetBuilder { return makeJobSet("js").rjob("leader", 1, 1).rjob("workers", 2, 1) }
	cases := map[string]struct {
		js        *jobsetapi.JobSet
		succeeded []string // "rjob/idx"
		want      bool
	}{
		"All, empty targets, not all done":  {js: base().obj(), succeeded: []string{"workers/0", "workers/1"}, want: false},
		"All, empty targets, all done":      {js: base().obj(), succeeded: []string{"leader/0", "workers/0", "workers/1"}, want: true},
		"All, targets workers":              {js: base().successPolicy(jobsetapi.OperatorAll, "workers").obj(), succeeded: []string{"workers/0", "workers/1"}, want: true},
		"Any, targets workers, leader done": {js: base().successPolicy(jobsetapi.OperatorAny, "workers").obj(), succeeded: []string{"leader/0"}, want: false},
		"Any, targets workers, one worker":  {js: base().successPolicy(jobsetapi.OperatorAny, "workers").obj(), succeeded: []string{"workers/1"}, want: true},
		"Any, no targets":                   {js: base().successPolicy(jobsetapi.OperatorAny).obj(), succeeded: []string{"leader/0"}, want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var jobs []*batchv1.Job
			for _, s := range tc.succeeded {
				idx := int(s[len(s)-1] - '0')
				jobs = append(jobs, completedJob(childJob(tc.js, s[:len(s)-2], idx)))
			}
			if got := successPolicyMet(tc.js, jobs); got != tc.want {
				t.Errorf("successPolicyMet = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDependencyReachedStatus(t *testing.T) {
	rjob := jobsetapi.ReplicatedJob{Name: "b", DependsOn: []jobsetapi.DependsOn{{Name: "a", Status: jobsetapi.DependencyReady}}}
	complete := jobsetapi.ReplicatedJob{Name: "b", DependsOn: []jobsetapi.DependsOn{{Name: "a", Status: jobsetapi.DependencyComplete}}}
	replicas := map[string]int32{"a": 2}
	cases := map[string]struct {
		rjob     jobsetapi.ReplicatedJob
		statuses []jobsetapi.ReplicatedJobStatus
		want     bool
	}{
		"no status yet":        {rjob: rjob, want: false},
		"ready reached":        {rjob: rjob, statuses: []jobsetapi.ReplicatedJobStatus{{Name: "a", Ready: 1, Succeeded: 1}}, want: true},
		"ready not reached":    {rjob: rjob, statuses: []jobsetapi.ReplicatedJobStatus{{Name: "a", Ready: 1}}, want: false},
		"complete not reached": {rjob: complete, statuses: []jobsetapi.ReplicatedJobStatus{{Name: "a", Ready: 2}}, want: false},
		"complete reached":     {rjob: complete, statuses: []jobsetapi.ReplicatedJobStatus{{Name: "a", Succeeded: 2}}, want: true},
		"no dependencies":      {rjob: jobsetapi.ReplicatedJob{Name: "a"}, want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := dependencyReachedStatus(tc.rjob, replicas, tc.statuses); got != tc.want {
				t.Errorf("dependencyReachedStatus = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDecideTTL(t *testing.T) {
	finished := func(ttl int32, at time.Time) *jobsetapi.JobSet {
		js := makeJobSet("js").obj()
		js.Spec.TTLSecondsAfterFinished = ptr.To(ttl)
		js.Status.Conditions = []metav1.Condition{{Type: "Completed", Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(at)}}
		return js
	}
	got, err := decideTTL(finished(10, t0), t0.Add(4*time.Second))
	if err != nil || got.expired || got.requeueAfter != 6*time.Second {
		t.Errorf("not expired: got %+v, %v; want requeue after 6s", got, err)
	}
	got, err = decideTTL(finished(10, t0), t0.Add(10*time.Second))
	if err != nil || !got.expired {
		t.Errorf("expired: got %+v, %v", got, err)
	}
	if _, err := decideTTL(finished(10, time.Time{}), t0); err == nil {
		t.Errorf("zero finish time: want error")
	}
}
