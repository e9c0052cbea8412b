package job

import (
	batch "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
)

// Reasons of the job_pods_creation_total metric.
const (
	creationNew                    = "new"
	creationRecreateTerminatingOrF = "recreate_terminating_or_failed"
	creationRecreateFailed         = "recreate_failed"
)

// manageJob plans pod deletions or creations so that the number of active
// pods matches what the Job wants. A sync never both creates and deletes.
func (st *syncState) manageJob() {
	st.manageJobCalled = true
	st.action = actionTracking
	job := st.job
	if isSuspended(job) {
		st.deleteJobPods = st.podsForRemoval(len(st.activePods))
		st.action = actionPodsDeleted
		return
	}
	want := st.wantActive()
	if rm := st.podsForRemoval(int(max(st.active-want, 0))); len(rm) > 0 {
		st.deleteJobPods = rm[:min(len(rm), st.tun.maxCreateDelete)]
		st.action = actionPodsDeleted
		return
	}
	var terminating int32
	if onlyReplaceFailedPods(job) {
		terminating = st.terminating
	}
	diff := want - terminating - st.active
	if diff <= 0 {
		return
	}
	st.action = actionPodsCreated
	if job.Spec.BackoffLimitPerIndex == nil {
		if d := st.newBackoff.remaining(st.now, st.tun.podFailureBackOff, st.tun.maxPodFailureBackOff); d > 0 {
			st.requeue(d)
			return
		}
	}
	diff = min(diff, int32(st.tun.maxCreateDelete))
	st.planCreates(int(diff))
}

func (st *syncState) wantActive() int32 {
	job := st.job
	parallelism := *job.Spec.Parallelism
	if job.Spec.Completions == nil {
		if st.succeeded > 0 {
			return st.active
		}
		return parallelism
	}
	return max(min(*job.Spec.Completions-st.succeeded, parallelism), 0)
}

// podsForRemoval picks active pods to delete: for Indexed Jobs first the
// pods with a bad or repeated index, then the best candidates by activity.
func (st *syncState) podsForRemoval(atLeast int) []*v1.Pod {
	var rm, rest []*v1.Pod
	if isIndexed(st.job) {
		rm, rest = duplicateIndexPodsForRemoval(st.activePods, st.activeIx, int(*st.job.Spec.Completions))
	} else if atLeast > 0 {
		rest = append([]*v1.Pod(nil), st.activePods...) // sortActivePods reorders
	}
	if len(rm) < atLeast {
		sortActivePods(rest)
		rm = append(rm, rest[:atLeast-len(rm)]...)
	}
	return rm
}

// planCreates builds the pods to create: n NonIndexed pods, or pods for the
// lowest pending indexes whose per-index backoff has expired.
func (st *syncState) planCreates(n int) {
	job := st.job
	base := baseTemplate(job)
	st.createReason = st.creationReason()
	if !isIndexed(job) {
		for range n {
			st.creates = append(st.creates, podCreate{index: unknownIndex, pod: buildPod(job, base, unknownIndex, nil)})
		}
		return
	}
	indexes := firstPendingIndexes(st.busyIndexes(), n, int(*job.Spec.Completions))
	if job.Spec.BackoffLimitPerIndex != nil {
		indexes = st.indexesPastBackoff(indexes)
	}
	for _, ix := range indexes {
		st.creates = append(st.creates, podCreate{index: ix, pod: buildPod(job, base, ix, st.delayedDeletion[ix])})
	}
}

// busyIndexes are the indexes that must not get a new pod now.
func (st *syncState) busyIndexes() indexSet {
	busy := st.succeededIndexes.withIndexes(knownIndexes(st.activeIx))
	if onlyReplaceFailedPods(st.job) {
		busy = busy.withIndexes(indexesOf(filterPods(st.live, isTerminating)))
	}
	if st.failedIndexes != nil {
		busy = busy.union(*st.failedIndexes)
	}
	return busy
}

// indexesPastBackoff keeps the indexes whose per-index backoff expired; if
// none did, it requeues for the soonest.
func (st *syncState) indexesPastBackoff(indexes []int) []int {
	var now []int
	var soonest int64
	for _, ix := range indexes {
		d := remainingPerIndex(st.now, st.tun.podFailureBackOff, st.tun.maxPodFailureBackOff, st.delayedDeletion[ix])
		if d == 0 {
			now = append(now, ix)
		} else if soonest == 0 || int64(d) < soonest {
			soonest = int64(d)
		}
	}
	if len(now) == 0 && soonest > 0 {
		st.requeue(durationOf(soonest))
	}
	return now
}

func (st *syncState) creationReason() string {
	status := st.job.Status // still the observed status here
	if status.Failed == 0 && (status.Terminating == nil || *status.Terminating == 0) {
		return creationNew
	}
	if p := st.job.Spec.PodReplacementPolicy; p != nil && *p == batch.Failed {
		return creationRecreateFailed
	}
	return creationRecreateTerminatingOrF
}
