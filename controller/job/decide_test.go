package job

import (
	"fmt"
	"slices"
	"testing"
	"time"

	batch "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// outcome is what one whole pure sync (every API call succeeding) decided.
type outcome struct {
	st       *syncState
	finished bool
	rmFinal  []string
}

// runPure runs decide → afterPodOps → track → countReleased as if every
// pod operation and patch succeeded.
func runPure(job *batch.Job, pods []*v1.Pod, mods ...func(*syncInput)) outcome {
	in := syncInput{job: job.DeepCopy(), pods: pods, satisfiedExpectations: true, now: now, tun: defaultTunables()}
	for _, m := range mods {
		m(&in)
	}
	st := decide(in)
	res := podOpsResult{}
	for _, p := range append(st.deleteActive, st.deleteJobPods...) {
		res.deleted++
		if isPodReady(p) {
			res.deletedReady++
		}
	}
	st.afterPodOps(res)
	tp := st.track()
	removed := sets.New[types.UID]()
	var names []string
	for _, p := range tp.removeFinalizers {
		removed.Insert(p.UID)
		names = append(names, p.Name)
	}
	finished := st.countReleased(tp, removed, true)
	return outcome{st: st, finished: finished, rmFinal: names}
}

type podSpec struct {
	phase    v1.PodPhase
	index    int
	ready    bool
	deleting bool
	noFinal  bool
	exit     int32
	conds    []v1.PodCondition
	restarts int32
	annos    map[string]string
}

func mkPods(specs ...podSpec) []*v1.Pod {
	var out []*v1.Pod
	for i, s := range specs {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("p%d", i), Namespace: "ns", UID: types.UID(fmt.Sprintf("uid-%d", i)),
			Annotations:       map[string]string{},
			CreationTimestamp: metav1.NewTime(now.Add(-time.Hour)),
		}}
		if !s.noFinal {
			p.Finalizers = []string{batch.JobTrackingFinalizer}
		}
		for k, v := range s.annos {
			p.Annotations[k] = v
		}
		if s.index >= 0 {
			p.Annotations[batch.JobCompletionIndexAnnotation] = fmt.Sprint(s.index)
		}
		p.Status.Phase = s.phase
		if s.ready {
			p.Status.Conditions = append(p.Status.Conditions, v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionTrue})
		}
		p.Status.Conditions = append(p.Status.Conditions, s.conds...)
		if s.deleting {
			p.DeletionTimestamp = ptr.To(metav1.NewTime(now.Add(-time.Second)))
		}
		if s.phase == v1.PodFailed || s.phase == v1.PodSucceeded {
			p.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "main", State: v1.ContainerState{
				Terminated: &v1.ContainerStateTerminated{ExitCode: s.exit, FinishedAt: metav1.NewTime(now.Add(-2 * time.Second))}}}}
		} else if s.restarts > 0 {
			p.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "main", RestartCount: s.restarts}}
		}
		out = append(out, p)
	}
	return out
}

func running(n int) []podSpec {
	out := make([]podSpec, n)
	for i := range out {
		out[i] = podSpec{phase: v1.PodRunning, index: -1}
	}
	return out
}

func baseJob(completions *int32, parallelism int32) *batch.Job {
	j := newTestJob("job", 0, parallelism)
	j.Namespace = "ns"
	j.UID = "job-uid"
	j.Spec.Completions = completions
	return j
}

func conds(job *batch.Job) []string { return condTypes(job) }

func TestDecideBasic(t *testing.T) {
	cases := map[string]struct {
		job         *batch.Job
		pods        []podSpec
		mods        []func(*syncInput)
		wantCreates int
		wantDeletes int
		wantActive  int32
		wantSucc    int32
		wantFailed  int32
		wantTerm    int32
		wantReady   int32
		wantConds   []string
		wantFinish  bool
	}{
		"job start":    {job: baseJob(ptr.To[int32](5), 2), wantCreates: 2, wantActive: 2},
		"WQ job start": {job: baseJob(nil, 3), wantCreates: 3, wantActive: 3},
		"pending pods": {job: baseJob(ptr.To[int32](5), 2),
			pods: []podSpec{{phase: v1.PodPending, index: -1}, {phase: v1.PodRunning, index: -1, ready: true}}, wantActive: 2, wantReady: 1},
		"too many active pods": {job: baseJob(ptr.To[int32](5), 2), pods: running(3), wantDeletes: 1, wantActive: 2, wantTerm: 1},
		"count ready pods when too many active pods": {job: baseJob(ptr.To[int32](5), 1),
			pods:        []podSpec{{phase: v1.PodRunning, index: -1, ready: true}, {phase: v1.PodRunning, index: -1, ready: true}},
			wantDeletes: 1, wantActive: 1, wantReady: 1, wantTerm: 1},
		"too few active pods": {job: baseJob(ptr.To[int32](5), 3),
			pods: []podSpec{{phase: v1.PodSucceeded, index: -1}, {phase: v1.PodRunning, index: -1}}, wantCreates: 2, wantActive: 3, wantSucc: 1},
		"job finish": {job: baseJob(ptr.To[int32](1), 1), pods: []podSpec{{phase: v1.PodSucceeded, index: -1}},
			wantSucc: 1, wantConds: []string{"SuccessCriteriaMet=True/CompletionsReached", "Complete=True/CompletionsReached"}, wantFinish: true},
		"WQ job all finished despite one failure": {job: baseJob(nil, 2),
			pods:     []podSpec{{phase: v1.PodSucceeded, index: -1}, {phase: v1.PodFailed, index: -1, exit: 1}},
			wantSucc: 1, wantFailed: 1, wantConds: []string{"SuccessCriteriaMet=True/CompletionsReached", "Complete=True/CompletionsReached"}, wantFinish: true},
		"WQ job: no new pods after first success": {job: baseJob(nil, 3),
			pods: []podSpec{{phase: v1.PodSucceeded, index: -1}, {phase: v1.PodRunning, index: -1}}, wantActive: 1, wantSucc: 1},
		"too many job failures": {job: withBackoffLimit(baseJob(ptr.To[int32](1), 1), 0), pods: []podSpec{{phase: v1.PodFailed, index: -1, exit: 1}},
			wantFailed: 1, wantConds: []string{"FailureTarget=True/BackoffLimitExceeded", "Failed=True/BackoffLimitExceeded"}, wantFinish: true},
		"job failures, unsatisfied expectations": {job: withBackoffLimit(baseJob(ptr.To[int32](2), 2), 0),
			pods:       []podSpec{{phase: v1.PodFailed, index: -1, exit: 1}, {phase: v1.PodRunning, index: -1}},
			mods:       []func(*syncInput){func(in *syncInput) { in.satisfiedExpectations = false }},
			wantFailed: 1, wantTerm: 1, wantDeletes: 1},
		"deleting job: running pod not counted": {job: deleting(baseJob(ptr.To[int32](2), 2)),
			pods: []podSpec{{phase: v1.PodRunning, index: -1}, {phase: v1.PodRunning, index: -1}}, wantActive: 2},
		"WQ job: terminating pod counts as failed, replaced after the backoff": {job: baseJob(nil, 1),
			pods: []podSpec{{phase: v1.PodRunning, index: -1, deleting: true}}, wantFailed: 1, wantTerm: 1},
		"WQ job: recreate pods when terminating or failed, backoff expired": {job: baseJob(nil, 1),
			pods:        []podSpec{{phase: v1.PodRunning, index: -1, deleting: true}},
			mods:        []func(*syncInput){func(in *syncInput) { in.now = now.Add(time.Minute) }},
			wantCreates: 1, wantActive: 1, wantFailed: 1, wantTerm: 1},
		"WQ job: recreate pods when failed (policy Failed)": {job: withPolicy(baseJob(nil, 1), batch.Failed),
			pods: []podSpec{{phase: v1.PodRunning, index: -1, deleting: true}}, wantTerm: 1},
		"more terminating pods than parallelism": {job: withPolicy(baseJob(ptr.To[int32](5), 1), batch.Failed),
			pods: []podSpec{{phase: v1.PodRunning, index: -1, deleting: true}, {phase: v1.PodRunning, index: -1, deleting: true}}, wantTerm: 2},
		"activeDeadlineSeconds exceeded": {job: withDeadline(baseJob(ptr.To[int32](1), 1), 10, 20*time.Second),
			pods: running(1), wantDeletes: 1, wantFailed: 1, wantTerm: 1, wantConds: []string{"FailureTarget=True/DeadlineExceeded"}},
		"activeDeadlineSeconds with backofflimit reach": {job: withBackoffLimit(withDeadline(baseJob(ptr.To[int32](1), 1), 10, 20*time.Second), 0),
			pods: []podSpec{{phase: v1.PodFailed, index: -1, exit: 1}}, wantFailed: 1,
			wantConds: []string{"FailureTarget=True/BackoffLimitExceeded", "Failed=True/BackoffLimitExceeded"}, wantFinish: true},
		"too few active pods and active back-off": {job: baseJob(ptr.To[int32](1), 1),
			mods: []func(*syncInput){func(in *syncInput) {
				in.backoff = backoffRecord{failuresAfterLastSuccess: 1, lastFailureTime: ptr.To(now.Add(-5 * time.Second))}
			}}},
		"backoffLimit 1 with restartCount 1 and podRunning": {job: withRestartOnFailure(withBackoffLimit(baseJob(ptr.To[int32](1), 1), 1)),
			pods: []podSpec{{phase: v1.PodRunning, index: -1, restarts: 1}}, wantDeletes: 1, wantFailed: 1, wantTerm: 1,
			wantConds: []string{"FailureTarget=True/BackoffLimitExceeded"}},
		"FailureTarget=False condition added manually is ignored": {job: withCond(baseJob(ptr.To[int32](1), 1), batch.JobFailureTarget, v1.ConditionFalse),
			pods: running(1), wantActive: 1, wantConds: []string{"FailureTarget=False/"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out := runPure(tc.job, mkPods(tc.pods...), tc.mods...)
			st := out.st
			s := st.job.Status
			if len(st.creates) != tc.wantCreates || len(st.deleteActive)+len(st.deleteJobPods) != tc.wantDeletes {
				t.Errorf("creates=%d deletes=%d, want %d/%d", len(st.creates), len(st.deleteActive)+len(st.deleteJobPods), tc.wantCreates, tc.wantDeletes)
			}
			if s.Active != tc.wantActive || s.Succeeded != tc.wantSucc || s.Failed != tc.wantFailed || *s.Terminating != tc.wantTerm || *s.Ready != tc.wantReady {
				t.Errorf("active=%d succeeded=%d failed=%d terminating=%d ready=%d, want %d/%d/%d/%d/%d",
					s.Active, s.Succeeded, s.Failed, *s.Terminating, *s.Ready, tc.wantActive, tc.wantSucc, tc.wantFailed, tc.wantTerm, tc.wantReady)
			}
			if !slices.Equal(conds(st.job), tc.wantConds) {
				t.Errorf("conditions %v, want %v", conds(st.job), tc.wantConds)
			}
			if out.finished != tc.wantFinish {
				t.Errorf("finished=%v", out.finished)
			}
			if s.StartTime == nil {
				t.Errorf("startTime not set")
			}
			if len(s.UncountedTerminatedPods.Succeeded)+len(s.UncountedTerminatedPods.Failed) != 0 {
				t.Errorf("uncounted left: %+v", s.UncountedTerminatedPods)
			}
		})
	}
}

func withBackoffLimit(j *batch.Job, n int32) *batch.Job { j.Spec.BackoffLimit = &n; return j }
func withPolicy(j *batch.Job, p batch.PodReplacementPolicy) *batch.Job {
	j.Spec.PodReplacementPolicy = &p
	return j
}
func deleting(j *batch.Job) *batch.Job { j.DeletionTimestamp = ptr.To(metav1.NewTime(now)); return j }
func withDeadline(j *batch.Job, ads int64, age time.Duration) *batch.Job {
	j.Spec.ActiveDeadlineSeconds = &ads
	j.Status.StartTime = ptr.To(metav1.NewTime(now.Add(-age)))
	return j
}
func withRestartOnFailure(j *batch.Job) *batch.Job {
	j.Spec.Template.Spec.RestartPolicy = v1.RestartPolicyOnFailure
	return j
}
func withCond(j *batch.Job, t batch.JobConditionType, s v1.ConditionStatus) *batch.Job {
	j.Status.Conditions = append(j.Status.Conditions, batch.JobCondition{Type: t, Status: s})
	return j
}
