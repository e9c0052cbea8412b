package job

import (
	"fmt"

	batch "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
)

// The finalizer protocol of KEP-2307 ends every sync. A finished pod that
// holds the batch.kubernetes.io/job-tracking finalizer moves through three
// steps, each of which is safe to crash after:
//
//	stepRecord:  its UID goes into status.uncountedTerminatedPods (Indexed:
//	             its index into completedIndexes), with the Job's interim
//	             condition (FailureTarget, SuccessCriteriaMet); status written
//	stepRelease: its finalizer is patched off
//	stepCount:   the released UIDs move into status.succeeded/failed and,
//	             once nothing is uncounted or terminating, the final
//	             condition (Failed, Complete) replaces the interim one;
//	             status written
//
// A crash after stepRecord leaves UIDs the next sync releases; after
// stepRelease, uncounted UIDs without a finalizer, which the next sync
// counts (cleanUncounted). No pod is lost or counted twice.
type trackingStep int

const (
	stepRecord trackingStep = iota
	stepRelease
	stepCount
	stepDone
)

func (s trackingStep) String() string {
	return [...]string{"record", "release", "count", "done"}[s]
}

// next is the transition function: a failed status write ends the
// protocol (the sync is retried from what was stored); a failed release
// still counts the pods that were released, but sets no final condition.
func (s trackingStep) next(err error) trackingStep {
	switch s {
	case stepRecord:
		if err != nil {
			return stepDone
		}
		return stepRelease
	case stepRelease:
		return stepCount
	}
	return stepDone
}

// trackingEffects are the API writes of the protocol; the controller's go
// through client-go, the tests' are scripted.
type trackingEffects interface {
	// writeStatus writes st.job's status; before is what was stored.
	writeStatus(st *syncState, before *batch.JobStatus) error
	// removeFinalizers patches the finalizer off and returns the UIDs
	// that no longer hold it.
	removeFinalizers(pods []*v1.Pod) (sets.Set[types.UID], error)
}

// trackingResult is what the protocol did.
type trackingResult struct {
	plan        *trackPlan
	steps       []trackingStep // the steps run, in order
	wroteStatus bool           // some status write succeeded
	finished    bool           // the final condition was written
}

// runTracking drives the protocol for the sync st from the stored status
// observed, and returns the first error that ended or marred it.
func runTracking(st *syncState, observed *batch.JobStatus, eff trackingEffects) (trackingResult, error) {
	res := trackingResult{plan: st.track()}
	var removed sets.Set[types.UID]
	var releaseErr error
	for step := stepRecord; step != stepDone; {
		res.steps = append(res.steps, step)
		var err error
		switch step {
		case stepRecord:
			err = res.write(st, observed, eff)
			if err != nil {
				return res, fmt.Errorf("adding uncounted pods to status: %w", err)
			}
		case stepRelease:
			removed, releaseErr = eff.removeFinalizers(res.plan.removeFinalizers)
			err = releaseErr
		case stepCount:
			before, nEvents := st.job.Status.DeepCopy(), len(st.events)
			finished := st.countReleased(res.plan, removed, releaseErr == nil)
			if err = res.write(st, before, eff); err != nil {
				st.events = st.events[:nEvents] // the final condition is not written
				return res, fmt.Errorf("removing uncounted pods from status: %w", err)
			}
			res.finished = finished
		}
		step = step.next(err)
	}
	return res, releaseErr
}

// write writes st's status when it differs from before.
func (r *trackingResult) write(st *syncState, before *batch.JobStatus, eff trackingEffects) error {
	if equality.Semantic.DeepEqual(*before, st.job.Status) {
		return nil
	}
	if err := eff.writeStatus(st, before); err != nil {
		return err
	}
	r.wroteStatus = true
	return nil
}

// countReleased moves the released pods into the counters and, when
// releaseOK and nothing is left uncounted or terminating, sets the final
// condition. It reports whether the Job finished.
func (st *syncState) countReleased(tp *trackPlan, removed sets.Set[types.UID], releaseOK bool) bool {
	cleanUncounted(&st.job.Status, uncountedHolding(st.job.Status.UncountedTerminatedPods, tp.tracked, removed))
	if !releaseOK || tp.reachedMax || st.finishedCond == nil {
		return false
	}
	u := st.job.Status.UncountedTerminatedPods
	if len(u.Succeeded)+len(u.Failed) > 0 || st.terminating > 0 {
		return false
	}
	c := st.finishedCond
	st.job.Status.Conditions, _ = ensureConditionStatus(st.job.Status.Conditions, c.Type, c.Status, c.Reason, c.Message, st.now)
	st.events = append(st.events, finishedEvents(st.job, c)...)
	if c.Type == batch.JobComplete {
		t := c.LastTransitionTime
		st.job.Status.CompletionTime = &t
	}
	return true
}

// finishedEvents are the events of a Job reaching its final condition c.
func finishedEvents(job *batch.Job, c *batch.JobCondition) []event {
	if c.Type != batch.JobComplete {
		return []event{{kind: v1.EventTypeWarning, reason: c.Reason, message: c.Message}}
	}
	var out []event
	if job.Spec.Completions != nil && job.Status.Succeeded > *job.Spec.Completions {
		out = append(out, event{kind: v1.EventTypeWarning, reason: eventTooManySucceeded, message: msgTooManySucceeded})
	}
	return append(out, event{kind: v1.EventTypeNormal, reason: eventCompleted, message: msgCompleted})
}
