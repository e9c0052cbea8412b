package job

import (
	"slices"
	"testing"
	"time"

	batch "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestIndexSetText(t *testing.T) {
	cases := map[string]struct {
		in          string
		completions int
		add         []int
		want        string
	}{
		"runs of three collapse":     {add: []int{1, 3, 4, 5, 7}, completions: 10, want: "1,3-5,7"},
		"run of two stays apart":     {add: []int{0, 1}, completions: 10, want: "0,1"},
		"merge with existing":        {in: "0,3-7", add: []int{1, 2}, completions: 8, want: "0-7"},
		"clamp to completions":       {in: "2-9", completions: 5, want: "2-4"},
		"stop at out of range":       {in: "1,6,7", completions: 5, want: "1"},
		"corrupt fragments skipped":  {in: "a,2,3-x,5", completions: 10, want: "2,5"},
		"adjacent intervals merged":  {in: "1-2,3-4", completions: 10, want: "1-4"},
		"empty":                      {completions: 3, want: ""},
		"seed execute-all completed": {add: []int{0, 3, 4, 5, 6, 7}, completions: 8, want: "0,3-7"},
		"seed execute-all failed":    {add: []int{1, 2}, completions: 8, want: "1,2"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := parseIndexSet(tc.in, tc.completions).withIndexes(tc.add).String()
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestFirstPendingIndexes(t *testing.T) {
	busy := parseIndexSet("0,2-3,6", 10)
	if got := firstPendingIndexes(busy, 3, 10); !slices.Equal(got, []int{1, 4, 5}) {
		t.Errorf("got %v", got)
	}
	if got := firstPendingIndexes(busy, 10, 7); !slices.Equal(got, []int{1, 4, 5}) {
		t.Errorf("bounded by completions: got %v", got)
	}
}

func TestPodGenerateNameWithIndex(t *testing.T) {
	long := "a-very-long-job-name-that-goes-on-and-on-and-on-and-on-for-ever"
	if got := podGenerateNameWithIndex("pi", 3); got != "pi-3-" {
		t.Errorf("got %q", got)
	}
	got := podGenerateNameWithIndex(long, 12)
	if len(got) != 58 || got[len(got)-4:] != "-12-" {
		t.Errorf("got %q (%d)", got, len(got))
	}
}

func TestMatchPodFailurePolicy(t *testing.T) {
	exit := func(codes ...int32) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Status: v1.PodStatus{Phase: v1.PodFailed}}
		names := []string{"init", "main", "support"}
		for i, c := range codes {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, v1.ContainerStatus{Name: names[i], State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: c}}})
		}
		return p
	}
	onExit := func(action batch.PodFailurePolicyAction, op batch.PodFailurePolicyOnExitCodesOperator, vals ...int32) batch.PodFailurePolicyRule {
		return batch.PodFailurePolicyRule{Action: action, OnExitCodes: &batch.PodFailurePolicyOnExitCodesRequirement{Operator: op, Values: vals}}
	}
	onCond := func(action batch.PodFailurePolicyAction, s v1.ConditionStatus) batch.PodFailurePolicyRule {
		return batch.PodFailurePolicyRule{Action: action, OnPodConditions: []batch.PodFailurePolicyOnPodConditionsPattern{{Type: v1.DisruptionTarget, Status: s}}}
	}
	withCond := func(p *v1.Pod, s v1.ConditionStatus) *v1.Pod {
		p.Status.Conditions = []v1.PodCondition{{Type: v1.DisruptionTarget, Status: s}}
		return p
	}
	lost := func() *v1.Pod { return markLost(exit(137)) }
	cases := map[string]struct {
		rules      []batch.PodFailurePolicyRule
		pod        *v1.Pod
		wantMsg    string
		wantCount  bool
		wantAction string
	}{
		"no policy rules":                                    {pod: exit(1), wantCount: true},
		"ignore rule matched for exit codes":                 {rules: []batch.PodFailurePolicyRule{onExit("Ignore", "In", 1, 2)}, pod: exit(2), wantAction: "Ignore"},
		"FailJob rule matched for exit codes":                {rules: []batch.PodFailurePolicyRule{onExit("FailJob", "In", 42)}, pod: exit(0, 42), wantCount: true, wantAction: "FailJob", wantMsg: "Container main for pod ns/p failed with exit code 42 matching FailJob rule at index 0"},
		"successful containers are skipped by the rules":     {rules: []batch.PodFailurePolicyRule{onExit("FailJob", "NotIn", 111)}, pod: exit(0, 111, 0), wantCount: true},
		"unknown action skipped":                             {rules: []batch.PodFailurePolicyRule{onExit("Bogus", "In", 1), onExit("Count", "In", 1)}, pod: exit(1), wantCount: true, wantAction: "Count"},
		"unknown operator never matches":                     {rules: []batch.PodFailurePolicyRule{onExit("Ignore", "Bogus", 1)}, pod: exit(1), wantCount: true},
		"second jobfail rule matched":                        {rules: []batch.PodFailurePolicyRule{onExit("FailJob", "In", 1), onExit("FailJob", "In", 2)}, pod: exit(2), wantCount: true, wantAction: "FailJob", wantMsg: "Container init for pod ns/p failed with exit code 2 matching FailJob rule at index 1"},
		"ignore rule matched for pod conditions":             {rules: []batch.PodFailurePolicyRule{onCond("Ignore", "")}, pod: withCond(exit(1), v1.ConditionTrue), wantAction: "Ignore"},
		"ignore rule matches by status=False":                {rules: []batch.PodFailurePolicyRule{onCond("Ignore", v1.ConditionFalse)}, pod: withCond(exit(1), v1.ConditionFalse), wantAction: "Ignore"},
		"default - do not match condition with status=False": {rules: []batch.PodFailurePolicyRule{onCond("Ignore", "")}, pod: withCond(exit(1), v1.ConditionFalse), wantCount: true},
		"job fail rule matched for pod conditions":           {rules: []batch.PodFailurePolicyRule{onCond("FailJob", v1.ConditionTrue)}, pod: withCond(exit(1), v1.ConditionTrue), wantCount: true, wantAction: "FailJob", wantMsg: "Pod ns/p has condition DisruptionTarget matching FailJob rule at index 0"},
		"FailIndex counts":                                   {rules: []batch.PodFailurePolicyRule{onExit("FailIndex", "In", 3)}, pod: exit(3), wantCount: true, wantAction: "FailIndex"},
		"pod lost to the control plane does not count":       {pod: lost()},
		"lost pod, no rule matched: does not count":          {rules: []batch.PodFailurePolicyRule{onExit("FailJob", "In", 42)}, pod: lost()},
		"lost pod matched by a Count rule counts":            {rules: []batch.PodFailurePolicyRule{onCond("Count", "")}, pod: lost(), wantCount: true, wantAction: "Count"},
		"lost pod matched by a FailJob rule fails the job":   {rules: []batch.PodFailurePolicyRule{onCond("FailJob", "")}, pod: lost(), wantCount: true, wantAction: "FailJob", wantMsg: "Pod ns/p has condition DisruptionTarget matching FailJob rule at index 0"},
		"DisruptionTarget of another reason counts":          {pod: withCond(exit(137), v1.ConditionTrue), wantCount: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := matchPodFailurePolicy(&batch.PodFailurePolicy{Rules: tc.rules}, tc.pod)
			action := ""
			if r.action != nil {
				action = string(*r.action)
			}
			if r.failJobMessage != tc.wantMsg || r.count != tc.wantCount || action != tc.wantAction {
				t.Errorf("got (%q, %v, %q), want (%q, %v, %q)", r.failJobMessage, r.count, action, tc.wantMsg, tc.wantCount, tc.wantAction)
			}
		})
	}
}

func TestBackoffRemaining(t *testing.T) {
	at := func(d time.Duration) *time.Time { return ptr.To(now.Add(-d)) }
	cases := map[string]struct {
		rec  backoffRecord
		want time.Duration
	}{
		"no failures":          {rec: backoffRecord{}, want: 0},
		"1 failure 3s ago":     {rec: backoffRecord{1, at(3 * time.Second)}, want: 7 * time.Second},
		"2 failures now":       {rec: backoffRecord{2, at(0)}, want: 20 * time.Second},
		"3 failures 1s ago":    {rec: backoffRecord{3, at(time.Second)}, want: 39 * time.Second},
		"capped at 10 minutes": {rec: backoffRecord{20, at(0)}, want: 10 * time.Minute},
		"expired long ago":     {rec: backoffRecord{1, at(time.Hour)}, want: 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := tc.rec.remaining(now, DefaultJobPodFailureBackOff, MaxJobPodFailureBackOff); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNextBackoffRecordResetsOnSuccess(t *testing.T) {
	pods := mkPods(podSpec{phase: v1.PodFailed, index: -1, exit: 1}, podSpec{phase: v1.PodSucceeded, index: -1})
	pods[0].Status.ContainerStatuses[0].State.Terminated.FinishedAt = metav1.NewTime(now.Add(-time.Minute))
	rec := nextBackoffRecord(backoffRecord{failuresAfterLastSuccess: 4, lastFailureTime: ptr.To(now)}, pods[1:], pods[:1])
	if rec.failuresAfterLastSuccess != 0 || rec.lastFailureTime != nil {
		t.Errorf("failure before success should not count: %+v", rec)
	}
}

// TestNextBackoffRecordSkipsPodsLostToTheControlPlane: pods the node agent
// lost (DisruptionTarget TerminationByKubelet, ContainerStatusUnknown) start
// no backoff; a real failure does, and so does ContainerStatusUnknown alone.
func TestNextBackoffRecordSkipsPodsLostToTheControlPlane(t *testing.T) {
	pods := mkPods(podSpec{phase: v1.PodFailed, index: -1, exit: 137}, podSpec{phase: v1.PodFailed, index: -1, exit: 137},
		podSpec{phase: v1.PodFailed, index: -1, exit: 1}, podSpec{phase: v1.PodFailed, index: -1, exit: 137})
	for _, p := range pods[:2] {
		markLost(p)
	}
	pods[3].Status.ContainerStatuses[0].State.Terminated.Reason = "ContainerStatusUnknown"
	if rec := nextBackoffRecord(backoffRecord{}, nil, pods[:2]); rec.failuresAfterLastSuccess != 0 || rec.lastFailureTime != nil {
		t.Errorf("lost pods started a backoff: %+v", rec)
	}
	if rec := nextBackoffRecord(backoffRecord{}, nil, pods); rec.failuresAfterLastSuccess != 2 {
		t.Errorf("failuresAfterLastSuccess = %d, want 2 (the real failures only)", rec.failuresAfterLastSuccess)
	}
	if d := remainingPerIndex(now, time.Second, time.Minute, pods[0]); d != 0 {
		t.Errorf("per-index delay after a lost pod = %v, want 0", d)
	}
}

// markLost makes p a pod the node agent lost when it restarted.
func markLost(p *v1.Pod) *v1.Pod {
	for i := range p.Status.ContainerStatuses {
		p.Status.ContainerStatuses[i].State.Terminated.Reason = "ContainerStatusUnknown"
	}
	p.Status.Conditions = append(p.Status.Conditions, v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue,
		Reason: v1.PodReasonTerminationByKubelet, Message: "Pod was terminated because its containers were lost when the node agent restarted."})
	return p
}

// TestDecideLostPodsAreNotFailures: with backoffLimit 0, a pod lost to the
// control plane is replaced at once and neither fails the Job nor shows in
// status.failed; a real failure still fails it.
func TestDecideLostPodsAreNotFailures(t *testing.T) {
	job := baseJob(ptr.To[int32](2), 2)
	job.Spec.BackoffLimit = ptr.To[int32](0)
	pods := mkPods(podSpec{phase: v1.PodFailed, index: -1, exit: 137}, podSpec{phase: v1.PodRunning, index: -1})
	markLost(pods[0])
	out := runPure(job, pods)
	if out.finished || out.st.finishedCond != nil || out.st.job.Status.Failed != 0 {
		t.Fatalf("finished %v cond %+v failed %d, want a running Job with no failure", out.finished, out.st.finishedCond, out.st.job.Status.Failed)
	}
	if len(out.st.creates) != 1 || out.st.requeueAfter != 0 {
		t.Fatalf("creates %d requeueAfter %v, want one replacement at once", len(out.st.creates), out.st.requeueAfter)
	}
	if !slices.Equal(out.rmFinal, []string{"p0"}) {
		t.Fatalf("finalizers removed from %v, want p0", out.rmFinal)
	}
	pods = mkPods(podSpec{phase: v1.PodFailed, index: -1, exit: 1}, podSpec{phase: v1.PodRunning, index: -1})
	// Failed 2: the failure and the running pod the failing Job deletes.
	if out := runPure(job, pods); out.st.job.Status.Failed != 2 || !slices.Contains(conds(out.st.job), "FailureTarget=True/BackoffLimitExceeded") {
		t.Fatalf("real failure: failed %d conditions %v", out.st.job.Status.Failed, conds(out.st.job))
	}
}

func indexedJob(completions, parallelism int32) *batch.Job {
	j := baseJob(ptr.To(completions), parallelism)
	j.Spec.CompletionMode = ptr.To(batch.IndexedCompletion)
	return j
}

func TestDecideIndexed(t *testing.T) {
	t.Run("indexed job start", func(t *testing.T) {
		out := runPure(indexedJob(3, 2), nil)
		if len(out.st.creates) != 2 {
			t.Fatalf("creates %d", len(out.st.creates))
		}
		p := out.st.creates[1].pod
		if p.GenerateName != "job-1-" || p.Spec.Hostname != "job-1" || p.Labels[batch.JobCompletionIndexAnnotation] != "1" || p.Annotations[batch.JobCompletionIndexAnnotation] != "1" {
			t.Errorf("pod meta %+v hostname %q", p.ObjectMeta, p.Spec.Hostname)
		}
		env := p.Spec.Containers[0].Env
		if len(env) != 1 || env[0].Name != "JOB_COMPLETION_INDEX" || env[0].ValueFrom.FieldRef.FieldPath != "metadata.labels['batch.kubernetes.io/job-completion-index']" {
			t.Errorf("env %+v", env)
		}
		if !slices.Contains(p.Finalizers, batch.JobTrackingFinalizer) || p.OwnerReferences[0].Kind != "Job" || !*p.OwnerReferences[0].Controller {
			t.Errorf("finalizers %v owner %+v", p.Finalizers, p.OwnerReferences)
		}
	})
	t.Run("indexed job repeated completed index", func(t *testing.T) {
		out := runPure(indexedJob(3, 3), mkPods(podSpec{phase: v1.PodSucceeded, index: 0}, podSpec{phase: v1.PodSucceeded, index: 1}, podSpec{phase: v1.PodSucceeded, index: 1}))
		if len(out.st.creates) != 1 || out.st.creates[0].index != 2 {
			t.Errorf("creates %+v", out.st.creates)
		}
		if s := out.st.job.Status; s.CompletedIndexes != "0,1" || s.Succeeded != 2 {
			t.Errorf("completed %q succeeded %d", s.CompletedIndexes, s.Succeeded)
		}
	})
	t.Run("indexed job repeated indexes and pods without index", func(t *testing.T) {
		out := runPure(indexedJob(5, 5), mkPods(podSpec{phase: v1.PodRunning, index: 0}, podSpec{phase: v1.PodRunning, index: 0},
			podSpec{phase: v1.PodRunning, index: -1}, podSpec{phase: v1.PodRunning, index: 7}))
		if len(out.st.deleteJobPods) != 3 || len(out.st.creates) != 0 {
			t.Errorf("deletes %d creates %d", len(out.st.deleteJobPods), len(out.st.creates))
		}
	})
	t.Run("indexed job completed", func(t *testing.T) {
		out := runPure(indexedJob(3, 3), mkPods(podSpec{phase: v1.PodSucceeded, index: 0}, podSpec{phase: v1.PodSucceeded, index: 1}, podSpec{phase: v1.PodSucceeded, index: 2}))
		if out.st.job.Status.CompletedIndexes != "0-2" || !out.finished {
			t.Errorf("completed %q finished %v", out.st.job.Status.CompletedIndexes, out.finished)
		}
	})
}

func TestDecideBackoffLimitPerIndex(t *testing.T) {
	blpi := func(limit int32) *batch.Job {
		j := indexedJob(2, 2)
		j.Spec.BackoffLimitPerIndex = ptr.To(limit)
		j.Spec.BackoffLimit = ptr.To[int32](2147483647)
		return j
	}
	t.Run("single failed pod, not counted as the replacement pod creation is delayed", func(t *testing.T) {
		out := runPure(blpi(1), mkPods(podSpec{phase: v1.PodFailed, index: 0, exit: 1}, podSpec{phase: v1.PodRunning, index: 1}))
		s := out.st.job.Status
		if s.Failed != 0 || len(out.st.creates) != 0 || len(out.rmFinal) != 0 || out.st.requeueAfter != 8*time.Second {
			t.Errorf("failed %d creates %d rm %v requeue %v", s.Failed, len(out.st.creates), out.rmFinal, out.st.requeueAfter)
		}
		if ptr.Deref(s.FailedIndexes, "<nil>") != "" {
			t.Errorf("failedIndexes %v", s.FailedIndexes)
		}
	})
	t.Run("replacement created after backoff with failure count", func(t *testing.T) {
		out := runPure(blpi(1), mkPods(podSpec{phase: v1.PodFailed, index: 0, exit: 1}, podSpec{phase: v1.PodRunning, index: 1}),
			func(in *syncInput) { in.now = now.Add(time.Minute) })
		if len(out.st.creates) != 1 || out.st.creates[0].pod.Annotations[batch.JobIndexFailureCountAnnotation] != "1" {
			t.Fatalf("creates %+v", out.st.creates)
		}
	})
	t.Run("single failed pod replaced already", func(t *testing.T) {
		out := runPure(blpi(1), mkPods(podSpec{phase: v1.PodFailed, index: 0, exit: 1}, podSpec{phase: v1.PodRunning, index: 0, annos: map[string]string{batch.JobIndexFailureCountAnnotation: "1"}}, podSpec{phase: v1.PodRunning, index: 1}))
		if out.st.job.Status.Failed != 1 || len(out.rmFinal) != 1 {
			t.Errorf("failed %d rm %v", out.st.job.Status.Failed, out.rmFinal)
		}
	})
	t.Run("job failed due to failed indexes", func(t *testing.T) {
		out := runPure(blpi(0), mkPods(podSpec{phase: v1.PodFailed, index: 0, exit: 1}, podSpec{phase: v1.PodSucceeded, index: 1}))
		s := out.st.job.Status
		if !slices.Equal(conds(out.st.job), []string{"FailureTarget=True/FailedIndexes", "Failed=True/FailedIndexes"}) ||
			*s.FailedIndexes != "0" || s.CompletedIndexes != "1" || s.Failed != 1 || s.Succeeded != 1 {
			t.Errorf("status %+v conds %v", s, conds(out.st.job))
		}
	})
	t.Run("job failed due to exceeding max failed indexes", func(t *testing.T) {
		j := blpi(0)
		j.Spec.Completions, j.Spec.Parallelism = ptr.To[int32](3), ptr.To[int32](3)
		j.Spec.MaxFailedIndexes = ptr.To[int32](0)
		out := runPure(j, mkPods(podSpec{phase: v1.PodFailed, index: 0, exit: 1}, podSpec{phase: v1.PodRunning, index: 1}))
		s := out.st.job.Status
		if !slices.Equal(conds(out.st.job), []string{"FailureTarget=True/MaxFailedIndexesExceeded"}) || *s.FailedIndexes != "0" || s.Failed != 2 || *s.Terminating != 1 {
			t.Errorf("status %+v conds %v", s, conds(out.st.job))
		}
	})
}

func TestDecideSuccessPolicyAndSuspend(t *testing.T) {
	t.Run("success policy met while a pod still runs", func(t *testing.T) {
		j := indexedJob(3, 3)
		j.Spec.SuccessPolicy = &batch.SuccessPolicy{Rules: []batch.SuccessPolicyRule{{SucceededIndexes: ptr.To("0")}}}
		out := runPure(j, mkPods(podSpec{phase: v1.PodSucceeded, index: 0}, podSpec{phase: v1.PodRunning, index: 1}))
		s := out.st.job.Status
		if !slices.Equal(conds(out.st.job), []string{"SuccessCriteriaMet=True/SuccessPolicy"}) || s.Failed != 0 || len(out.st.deleteActive) != 1 || out.finished {
			t.Errorf("conds %v failed %d deletes %d", conds(out.st.job), s.Failed, len(out.st.deleteActive))
		}
		if s.Conditions[0].Message != "Matched rules at index 0" {
			t.Errorf("message %q", s.Conditions[0].Message)
		}
	})
	t.Run("suspending a job", func(t *testing.T) {
		j := baseJob(ptr.To[int32](4), 2)
		j.Spec.Suspend = ptr.To(true)
		out := runPure(j, mkPods(podSpec{phase: v1.PodRunning, index: -1, ready: true}, podSpec{phase: v1.PodRunning, index: -1}))
		s := out.st.job.Status
		if len(out.st.deleteJobPods) != 2 || s.Active != 0 || *s.Ready != 0 || s.Failed != 0 || *s.Terminating != 2 {
			t.Errorf("status %+v", s)
		}
		if !slices.Equal(conds(out.st.job), []string{"Suspended=True/JobSuspended"}) || out.st.events[0].reason != "Suspended" {
			t.Errorf("conds %v events %v", conds(out.st.job), out.st.events)
		}
	})
	t.Run("created suspended: no startTime", func(t *testing.T) {
		j := baseJob(ptr.To[int32](4), 2)
		j.Spec.Suspend = ptr.To(true)
		out := runPure(j, nil)
		if out.st.job.Status.StartTime != nil || len(out.st.creates) != 0 {
			t.Errorf("startTime %v creates %d", out.st.job.Status.StartTime, len(out.st.creates))
		}
	})
	t.Run("resuming a suspended job", func(t *testing.T) {
		j := withCond(baseJob(ptr.To[int32](4), 2), batch.JobSuspended, v1.ConditionTrue)
		j.Status.StartTime = ptr.To(metav1.NewTime(now.Add(-time.Hour)))
		out := runPure(j, nil)
		s := out.st.job.Status
		if !slices.Equal(conds(out.st.job), []string{"Suspended=False/JobResumed"}) || !s.StartTime.Time.Equal(now) || len(out.st.creates) != 2 {
			t.Errorf("conds %v startTime %v creates %d", conds(out.st.job), s.StartTime, len(out.st.creates))
		}
		if out.st.events[0].reason != "Resumed" || s.Conditions[0].Message != "Job resumed" {
			t.Errorf("events %v", out.st.events)
		}
	})
	t.Run("too many finished: capped uncounted", func(t *testing.T) {
		j := baseJob(ptr.To[int32](4), 4)
		out := runPure(j, mkPods(podSpec{phase: v1.PodSucceeded, index: -1}, podSpec{phase: v1.PodSucceeded, index: -1}, podSpec{phase: v1.PodSucceeded, index: -1}),
			func(in *syncInput) { in.tun.maxUncountedPods = 2 })
		if out.st.job.Status.Succeeded != 2 || len(out.rmFinal) != 2 {
			t.Errorf("succeeded %d rm %v", out.st.job.Status.Succeeded, out.rmFinal)
		}
	})
}
