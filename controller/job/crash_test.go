package job

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	batch "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// A controller killed after the first status write (uncounted UIDs saved)
// and before or after the finalizer patches must count each pod once.
func TestRestartAfterUncountedWrite(t *testing.T) {
	cases := map[string]struct {
		podHasFinalizer bool
	}{
		"killed before the finalizer patch": {podHasFinalizer: true},
		"killed after the finalizer patch":  {podHasFinalizer: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			j := withBackoffLimit(baseJob(ptr.To[int32](2), 1), 6)
			pods := mkPods(podSpec{phase: v1.PodFailed, index: -1, exit: 1, noFinal: !tc.podHasFinalizer}, podSpec{phase: v1.PodSucceeded, index: -1, noFinal: !tc.podHasFinalizer})
			j.Status.UncountedTerminatedPods = &batch.UncountedTerminatedPods{Failed: []types.UID{pods[0].UID}, Succeeded: []types.UID{pods[1].UID}}
			out := runPure(j, pods, func(in *syncInput) { in.now = now.Add(time.Hour) })
			s := out.st.job.Status
			if s.Failed != 1 || s.Succeeded != 1 || len(s.UncountedTerminatedPods.Failed)+len(s.UncountedTerminatedPods.Succeeded) != 0 {
				t.Errorf("failed=%d succeeded=%d uncounted=%+v", s.Failed, s.Succeeded, s.UncountedTerminatedPods)
			}
			// A second sync over the same (now finalizer-less) pods changes nothing.
			for _, p := range pods {
				p.Finalizers = nil
			}
			again := runPure(out.st.job, pods, func(in *syncInput) { in.now = now.Add(time.Hour) })
			if again.st.job.Status.Failed != 1 || again.st.job.Status.Succeeded != 1 {
				t.Errorf("recounted: %+v", again.st.job.Status)
			}
		})
	}
}

// Pods whose finalizer removal is in flight are not counted again.
func TestExpectedFinalizerRemovalNotRecounted(t *testing.T) {
	j := baseJob(ptr.To[int32](2), 1)
	j.Status.Succeeded = 1
	pods := mkPods(podSpec{phase: v1.PodSucceeded, index: -1})
	out := runPure(j, pods, func(in *syncInput) {
		in.expectedRmFinalizers = sets.New(pods[0].UID)
	})
	if out.st.job.Status.Succeeded != 1 || len(out.rmFinal) != 0 {
		t.Errorf("succeeded %d rm %v", out.st.job.Status.Succeeded, out.rmFinal)
	}
}

// A pod in uncounted.failed that later reports Succeeded stays failed.
func TestPodFlipsFromFailedToSucceeded(t *testing.T) {
	j := baseJob(ptr.To[int32](2), 1)
	pods := mkPods(podSpec{phase: v1.PodSucceeded, index: -1})
	j.Status.UncountedTerminatedPods = &batch.UncountedTerminatedPods{Failed: []types.UID{pods[0].UID}}
	out := runPure(j, pods, func(in *syncInput) { in.now = now.Add(time.Hour) })
	if s := out.st.job.Status; s.Failed != 1 || s.Succeeded != 0 {
		t.Errorf("failed %d succeeded %d", s.Failed, s.Succeeded)
	}
}

// The FailJob interim condition survives a restart even when the pod that
// triggered it is gone: the next sync turns it into Failed.
func TestFailureTargetFinishedAfterRestart(t *testing.T) {
	j := baseJob(ptr.To[int32](2), 1)
	j.Status.StartTime = ptr.To(metav1.NewTime(now))
	j.Status.Conditions = []batch.JobCondition{{Type: batch.JobFailureTarget, Status: v1.ConditionTrue, Reason: "PodFailurePolicy", Message: "m"}}
	out := runPure(j, nil)
	if !out.finished || conds(out.st.job)[1] != "Failed=True/PodFailurePolicy" || out.st.job.Status.Conditions[1].Message != "m" {
		t.Errorf("conds %v", out.st.job.Status.Conditions)
	}
}
