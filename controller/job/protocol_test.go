package job

import (
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	batch "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
)

func TestTrackingStepNext(t *testing.T) {
	boom := errors.New("boom")
	cases := []struct {
		step trackingStep
		err  error
		want trackingStep
	}{
		{stepRecord, nil, stepRelease},
		{stepRecord, boom, stepDone},
		{stepRelease, nil, stepCount},
		{stepRelease, boom, stepCount},
		{stepCount, nil, stepDone},
		{stepCount, boom, stepDone},
	}
	for _, tc := range cases {
		if got := tc.step.next(tc.err); got != tc.want {
			t.Errorf("%v.next(%v) = %v, want %v", tc.step, tc.err, got, tc.want)
		}
	}
}

// scriptedEffects plays the API: writes and finalizer patches succeed
// unless the script says otherwise.
type scriptedEffects struct {
	failWrite   int             // the 1-based write that fails; 0: none
	failRelease map[string]bool // pods whose patch fails
	writes      []batch.JobStatus
	released    []string
}

func (e *scriptedEffects) writeStatus(st *syncState, _ *batch.JobStatus) error {
	if len(e.writes)+1 == e.failWrite {
		e.failWrite = -1
		return errors.New("conflict")
	}
	e.writes = append(e.writes, *st.job.Status.DeepCopy())
	return nil
}

func (e *scriptedEffects) removeFinalizers(pods []*v1.Pod) (sets.Set[types.UID], error) {
	removed := sets.New[types.UID]()
	var err error
	for _, p := range pods {
		if e.failRelease[p.Name] {
			err = errors.New("patch refused")
			continue
		}
		removed.Insert(p.UID)
		e.released = append(e.released, p.Name)
	}
	return removed, err
}

// summary is one status write as the table spells it.
func summary(s batch.JobStatus) string {
	out := ""
	if s.UncountedTerminatedPods != nil {
		out = "uncounted=" + uidList(s.UncountedTerminatedPods.Succeeded) + "/" + uidList(s.UncountedTerminatedPods.Failed)
	}
	out += " succeeded=" + strconv.Itoa(int(s.Succeeded)) + " failed=" + strconv.Itoa(int(s.Failed))
	for _, c := range s.Conditions {
		out += " " + string(c.Type)
	}
	return out
}

func uidList(uids []types.UID) string {
	out := ""
	for i, u := range uids {
		if i > 0 {
			out += ","
		}
		out += string(u)
	}
	return out
}

// TestRunTracking walks the protocol's steps with scripted API outcomes and
// an injected clock: what is written at each step, which error ends the
// sync, and when the final condition (stamped with the clock) appears.
func TestRunTracking(t *testing.T) {
	at := time.Date(2026, 5, 4, 3, 2, 1, 0, time.UTC)
	succeeded := func(n int) []podSpec {
		out := make([]podSpec, n)
		for i := range out {
			out[i] = podSpec{phase: v1.PodSucceeded, index: -1}
		}
		return out
	}
	cases := map[string]struct {
		completions int32
		pods        []podSpec
		uncounted   []types.UID // already recorded by an earlier sync
		eff         *scriptedEffects
		wantSteps   []trackingStep
		wantWrites  []string
		wantErr     string
		wantDone    bool
	}{
		"a success completes the Job": {
			completions: 1, pods: succeeded(1), eff: &scriptedEffects{},
			wantSteps:  []trackingStep{stepRecord, stepRelease, stepCount},
			wantWrites: []string{"uncounted=uid-0/ succeeded=0 failed=0 SuccessCriteriaMet", "uncounted=/ succeeded=1 failed=0 SuccessCriteriaMet Complete"},
			wantDone:   true,
		},
		"the record write fails: nothing is released": {
			completions: 1, pods: succeeded(1), eff: &scriptedEffects{failWrite: 1},
			wantSteps: []trackingStep{stepRecord},
			wantErr:   "adding uncounted pods to status: conflict",
		},
		"a refused patch: the released pod is counted, the other stays uncounted": {
			completions: 3, pods: succeeded(2), eff: &scriptedEffects{failRelease: map[string]bool{"p1": true}},
			wantSteps:  []trackingStep{stepRecord, stepRelease, stepCount},
			wantWrites: []string{"uncounted=uid-0,uid-1/ succeeded=0 failed=0", "uncounted=uid-1/ succeeded=1 failed=0"},
			wantErr:    "patch refused",
		},
		"a refused patch of the last pod: no final condition yet": {
			completions: 1, pods: succeeded(1), eff: &scriptedEffects{failRelease: map[string]bool{"p0": true}},
			wantSteps:  []trackingStep{stepRecord, stepRelease, stepCount},
			wantWrites: []string{"uncounted=uid-0/ succeeded=0 failed=0 SuccessCriteriaMet"},
			wantErr:    "patch refused",
		},
		"the count write fails after the release": {
			completions: 1, pods: succeeded(1), eff: &scriptedEffects{failWrite: 2},
			wantSteps:  []trackingStep{stepRecord, stepRelease, stepCount},
			wantWrites: []string{"uncounted=uid-0/ succeeded=0 failed=0 SuccessCriteriaMet"},
			wantErr:    "removing uncounted pods from status: conflict",
		},
		"a crash after the release: the next sync counts the released pod": {
			completions: 1, pods: []podSpec{{phase: v1.PodSucceeded, index: -1, noFinal: true}}, uncounted: []types.UID{"uid-0"},
			eff:        &scriptedEffects{},
			wantSteps:  []trackingStep{stepRecord, stepRelease, stepCount},
			wantWrites: []string{"uncounted=/ succeeded=1 failed=0 SuccessCriteriaMet", "uncounted=/ succeeded=1 failed=0 SuccessCriteriaMet Complete"},
			wantDone:   true,
		},
		"nothing finished: no write": {
			completions: 1, pods: running(1), eff: &scriptedEffects{},
			wantSteps: []trackingStep{stepRecord, stepRelease, stepCount},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			job := baseJob(ptr.To(tc.completions), 1)
			job.Status.StartTime = ptr.To(metav1.NewTime(at.Add(-time.Minute)))
			job.Status.Ready, job.Status.Terminating = ptr.To[int32](0), ptr.To[int32](0)
			job.Status.Active = int32(len(slices.DeleteFunc(slices.Clone(tc.pods), func(p podSpec) bool { return p.phase != v1.PodRunning })))
			job.Status.UncountedTerminatedPods = &batch.UncountedTerminatedPods{Succeeded: tc.uncounted}
			observed := job.Status.DeepCopy()
			st := decide(syncInput{job: job, pods: mkPods(tc.pods...), satisfiedExpectations: true, now: at, tun: defaultTunables()})
			st.afterPodOps(podOpsResult{})
			res, err := runTracking(st, observed, tc.eff)
			if got := errString(err); got != tc.wantErr {
				t.Fatalf("error %q, want %q", got, tc.wantErr)
			}
			if !slices.Equal(res.steps, tc.wantSteps) {
				t.Fatalf("steps %v, want %v", res.steps, tc.wantSteps)
			}
			var writes []string
			for _, w := range tc.eff.writes {
				writes = append(writes, summary(w))
			}
			if !slices.Equal(writes, tc.wantWrites) {
				t.Fatalf("writes\n%q\nwant\n%q", writes, tc.wantWrites)
			}
			if res.finished != tc.wantDone || res.wroteStatus != (len(writes) > 0) {
				t.Fatalf("finished %v wroteStatus %v, want %v %v", res.finished, res.wroteStatus, tc.wantDone, len(writes) > 0)
			}
			if tc.wantDone {
				last := tc.eff.writes[len(tc.eff.writes)-1]
				c := findCondition(last.Conditions, batch.JobComplete)
				if !c.LastTransitionTime.Time.Equal(at) || last.CompletionTime == nil || !last.CompletionTime.Time.Equal(at) {
					t.Fatalf("Complete at %v, completionTime %v, want the injected %v", c.LastTransitionTime, last.CompletionTime, at)
				}
			}
			// The plan carries the Job's events; the controller emits
			// them after the write.
			completed := slices.Contains(st.events, event{kind: v1.EventTypeNormal, reason: "Completed", message: "Job completed"})
			if completed != tc.wantDone {
				t.Fatalf("events %+v: Completed event %v, want %v", st.events, completed, tc.wantDone)
			}
		})
	}
}
