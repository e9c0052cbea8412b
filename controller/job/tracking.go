package job

import (
	"cmp"

	batch "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
)

// trackPlan is the finalizer half of a sync (KEP-2307): finished pods are
// first recorded in status.uncountedTerminatedPods (or completedIndexes),
// that status is written, then their finalizers are removed, and only then
// are they moved into the counters. A crash between any two steps neither
// loses nor double-counts a pod.
type trackPlan struct {
	removeFinalizers []*v1.Pod
	tracked          []trackedPod // the pods holding the finalizer
	reachedMax       bool
	pfpActions       map[batch.PodFailurePolicyAction]int
	newFailedIndexes int
	newSucceededIxs  int
}

// track adds the newly finished pods to the uncounted lists and indexes,
// appends the interim FailureTarget/SuccessCriteriaMet condition, and lists
// the pods whose finalizer can go. st.finishedCond becomes the final
// condition (Failed or Complete) to set once everything is counted.
func (st *syncState) track() *trackPlan {
	job := st.job
	pods := st.trackedPods()
	tp := &trackPlan{tracked: pods, pfpActions: map[batch.PodFailurePolicyAction]int{}}
	cleanUncounted(&job.Status, uncountedHolding(job.Status.UncountedTerminatedPods, pods, nil))
	uncounted := job.Status.UncountedTerminatedPods
	var newSucceededIndexes []int
	for _, tpod := range pods {
		p := tpod.pod
		failed := isPodFailed(p, job)
		if !st.canRemoveFinalizer(tpod, failed) {
			continue
		}
		tp.removeFinalizers = append(tp.removeFinalizers, p)
		switch {
		case p.Status.Phase == v1.PodSucceeded && !st.uncountedFailed.Has(p.UID):
			if isIndexed(job) {
				if ix := tpod.index; ix != unknownIndex && ix < int(*job.Spec.Completions) && !st.prevSucceededIndexes.has(ix) {
					newSucceededIndexes = append(newSucceededIndexes, ix)
				}
			} else if !st.uncountedSucceeded.Has(p.UID) {
				uncounted.Succeeded = append(uncounted.Succeeded, p.UID)
				st.uncountedSucceeded.Insert(p.UID)
			}
		case failed || (st.finishedCond != nil && st.finishedCond.Type != batch.JobSuccessCriteriaMet):
			st.trackFailed(tpod, tp)
		}
		if len(newSucceededIndexes)+len(uncounted.Succeeded)+len(uncounted.Failed) >= st.tun.maxUncountedPods {
			tp.reachedMax = true
			break
		}
	}
	if isIndexed(job) {
		st.trackIndexes(newSucceededIndexes, tp)
	}
	st.appendInterimCondition()
	return tp
}

// trackedPod is a pod that still holds the tracking finalizer (and is not
// waiting for its removal), with its completion index read once.
type trackedPod struct {
	pod   *v1.Pod
	index int
	seq   int // position in the pods it was picked from: the tie-break of byIndex
}

// byIndex orders by completion index, equal indexes in their input order: a
// stable sort without the cost of one (slices.SortStableFunc was a visible
// share of each sync of a large Indexed Job).
func byIndex(a, b trackedPod) int {
	return cmp.Or(cmp.Compare(a.index, b.index), cmp.Compare(a.seq, b.seq))
}

// trackedPods are the only pods the finalizer protocol can act on: those
// holding the finalizer and not already being stripped of it. Pods without
// it are counted already. For Indexed Jobs they come in index order (pods
// sharing an index in listing order), as live does.
func (st *syncState) trackedPods() []trackedPod {
	out := make([]trackedPod, 0, len(st.live)) // live pods nearly all hold it
	for i, p := range st.live {
		if f := st.liveFacts[i]; f.finalizer && !st.expectedRmFinalizers.Has(p.UID) {
			out = append(out, trackedPod{pod: p, index: f.index, seq: len(out)})
		}
	}
	return out
}

// trackFailed records a failed pod (or a pod of a failing Job) as an
// uncounted failure unless the pod failure policy ignores it (or, with no
// rule matching, it was lost to the control plane).
func (st *syncState) trackFailed(tpod trackedPod, tp *trackPlan) {
	job, p := st.job, tpod.pod
	if st.uncountedFailed.Has(p.UID) {
		return
	}
	if isIndexed(job) && !st.validIndex(tpod.index) {
		return
	}
	r := matchPodFailurePolicy(job.Spec.PodFailurePolicy, p)
	if r.action != nil {
		tp.pfpActions[*r.action]++
	}
	if !r.count {
		return
	}
	job.Status.UncountedTerminatedPods.Failed = append(job.Status.UncountedTerminatedPods.Failed, p.UID)
	st.uncountedFailed.Insert(p.UID)
}

func (st *syncState) trackIndexes(newSucceeded []int, tp *trackPlan) {
	job := st.job
	st.succeededIndexes = st.succeededIndexes.withIndexes(dedupSorted(newSucceeded))
	tp.newSucceededIxs = len(newSucceeded)
	job.Status.Succeeded = int32(st.succeededIndexes.total())
	job.Status.CompletedIndexes = st.succeededIndexes.String()
	if st.failedIndexes == nil {
		job.Status.FailedIndexes = nil
		return
	}
	var prev int
	if job.Status.FailedIndexes != nil {
		prev = parseIndexSet(*job.Status.FailedIndexes, int(*job.Spec.Completions)).total()
	}
	tp.newFailedIndexes = max(st.failedIndexes.total()-prev, 0)
	s := st.failedIndexes.String()
	job.Status.FailedIndexes = &s
}

// appendInterimCondition writes FailureTarget or SuccessCriteriaMet before
// any finalizer is removed, and turns finishedCond into the final condition.
func (st *syncState) appendInterimCondition() {
	c := st.finishedCond
	if c == nil {
		return
	}
	job := st.job
	switch c.Type {
	case batch.JobFailureTarget:
		job.Status.Conditions = append(job.Status.Conditions, *c)
		st.finishedCond = newCondition(batch.JobFailed, v1.ConditionTrue, c.Reason, c.Message, st.now)
	case batch.JobSuccessCriteriaMet:
		if findCondition(job.Status.Conditions, batch.JobSuccessCriteriaMet) == nil {
			job.Status.Conditions = append(job.Status.Conditions, *c)
		}
		st.finishedCond = newCondition(batch.JobComplete, v1.ConditionTrue, c.Reason, c.Message, st.now)
	}
}

// canRemoveFinalizer: the Job is being deleted or finishing, the pod
// succeeded, or it failed and is not the pod an index keeps until its
// replacement exists.
func (st *syncState) canRemoveFinalizer(tpod trackedPod, failed bool) bool {
	p := tpod.pod
	if st.job.DeletionTimestamp != nil || st.finishedCond != nil || p.Status.Phase == v1.PodSucceeded {
		return true
	}
	if !failed {
		return false
	}
	if st.job.Spec.BackoffLimitPerIndex != nil {
		if kept, ok := st.delayedDeletion[tpod.index]; ok && kept.UID == p.UID {
			return false
		}
	}
	return true
}

// cleanUncounted moves uncounted UIDs whose pod no longer holds the
// finalizer into the counters. It reports whether anything moved.
func cleanUncounted(status *batch.JobStatus, withFinalizer sets.Set[types.UID]) bool {
	u := status.UncountedTerminatedPods
	keepS := keepUIDs(u.Succeeded, withFinalizer)
	keepF := keepUIDs(u.Failed, withFinalizer)
	changed := len(keepS) != len(u.Succeeded) || len(keepF) != len(u.Failed)
	status.Succeeded += int32(len(u.Succeeded) - len(keepS))
	status.Failed += int32(len(u.Failed) - len(keepF))
	u.Succeeded, u.Failed = keepS, keepF
	return changed
}

// uncountedHolding is the set of u's UIDs whose pods are among tracked (still
// hold the finalizer) and not in released. Only uncounted UIDs enter a set:
// tracked pods can be thousands per sync, uncounted ones are few.
func uncountedHolding(u *batch.UncountedTerminatedPods, tracked []trackedPod, released sets.Set[types.UID]) sets.Set[types.UID] {
	if len(u.Succeeded)+len(u.Failed) == 0 {
		return nil
	}
	uncounted := sets.New(u.Succeeded...).Insert(u.Failed...)
	holding := sets.New[types.UID]()
	for _, tpod := range tracked {
		if uid := tpod.pod.UID; uncounted.Has(uid) && !released.Has(uid) {
			holding.Insert(uid)
		}
	}
	return holding
}

func keepUIDs(uids []types.UID, keep sets.Set[types.UID]) []types.UID {
	var out []types.UID
	for _, uid := range uids {
		if keep.Has(uid) {
			out = append(out, uid)
		}
	}
	return out
}
