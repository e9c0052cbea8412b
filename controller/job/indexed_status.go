package job

import (
	"slices"

	batch "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
)

// evaluateIndexed computes the succeeded and failed indexes of an Indexed
// Job and the terminal rules based on them: maxFailedIndexes, failed
// indexes once every index is done, and the success policy.
func (st *syncState) evaluateIndexed() {
	job := st.job
	completions := int(*job.Spec.Completions)
	st.prevSucceededIndexes = parseIndexSet(job.Status.CompletedIndexes, completions)
	var newly []int
	for i, p := range st.live {
		if f := st.liveFacts[i]; p.Status.Phase == v1.PodSucceeded && f.finalizer && st.validIndex(f.index) {
			newly = append(newly, f.index)
		}
	}
	st.succeededIndexes = st.prevSucceededIndexes.withIndexes(dedupSorted(newly))
	st.succeeded = int32(st.succeededIndexes.total())

	if job.Spec.BackoffLimitPerIndex != nil {
		st.evaluatePerIndex(completions)
	}
	if st.finishedCond == nil {
		if msg, ok := matchSuccessPolicy(job.Spec.SuccessPolicy, *job.Spec.Completions, st.succeededIndexes); ok {
			st.finishedCond = newCondition(batch.JobSuccessCriteriaMet, v1.ConditionTrue, batch.JobReasonSuccessPolicy, msg, st.now)
		}
	}
}

// evaluatePerIndex handles backoffLimitPerIndex: failed indexes, the
// MaxFailedIndexesExceeded and FailedIndexes failures, and which failed pod
// of each retrying index keeps its finalizer until it is replaced.
func (st *syncState) evaluatePerIndex(completions int) {
	job := st.job
	var prev indexSet
	if job.Status.FailedIndexes != nil {
		prev = parseIndexSet(*job.Status.FailedIndexes, completions)
	}
	var newly []int
	for i, p := range st.live {
		if f := st.liveFacts[i]; f.finalizer && st.validIndex(f.index) && isIndexFailed(job, p) {
			newly = append(newly, f.index)
		}
	}
	failed := prev.withIndexes(dedupSorted(newly))
	st.failedIndexes = &failed
	if st.finishedCond == nil {
		nFailed := failed.total()
		switch {
		case job.Spec.MaxFailedIndexes != nil && nFailed > int(*job.Spec.MaxFailedIndexes):
			st.finishedCond = st.failure(batch.JobReasonMaxFailedIndexesExceeded, msgMaxFailedIndexes)
		case nFailed > 0 && nFailed+st.succeededIndexes.total() >= completions:
			st.finishedCond = st.failure(batch.JobReasonFailedIndexes, msgFailedIndexes)
		}
	}
	st.delayedDeletion = st.podsWithDelayedDeletion(completions)
}

// isIndexFailed: the pod's failure fails its index, through FailIndex or by
// using up backoffLimitPerIndex.
func isIndexFailed(job *batch.Job, p *v1.Pod) bool {
	if !isPodFailed(p, job) {
		return false
	}
	r := matchPodFailurePolicy(job.Spec.PodFailurePolicy, p)
	if r.action != nil && *r.action == batch.PodFailurePolicyActionFailIndex {
		return true
	}
	return r.count && indexFailureCount(p) >= *job.Spec.BackoffLimitPerIndex
}

// podsWithDelayedDeletion picks, for every index still to be retried (not
// succeeded, not failed, no active pod), the latest failed pod: it keeps its
// finalizer until its replacement, which inherits its failure counts, exists.
func (st *syncState) podsWithDelayedDeletion(completions int) map[int]*v1.Pod {
	active := map[int]bool{}
	for _, ix := range st.activeIx {
		if ix != unknownIndex {
			active[ix] = true
		}
	}
	out := map[int]*v1.Pod{}
	for i, p := range st.live {
		if !st.countable(i) || !isPodFailed(p, st.job) {
			continue
		}
		ix := st.liveFacts[i].index
		if st.succeededIndexes.has(ix) || st.failedIndexes.has(ix) || active[ix] {
			continue
		}
		last, ok := out[ix]
		if !ok || (indexAbsoluteFailureCount(last) <= indexAbsoluteFailureCount(p) && !finishedTime(p).Before(finishedTime(last))) {
			out[ix] = p
		}
	}
	return out
}

// dedupSorted is ixs sorted without repeats, in a new slice.
func dedupSorted(ixs []int) []int {
	if len(ixs) == 0 {
		return nil
	}
	out := slices.Clone(ixs)
	slices.Sort(out)
	return slices.Compact(out)
}
