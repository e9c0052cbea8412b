package job

import (
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
)

// backoffRecord remembers the pod failures since the last success of a Job;
// it drives the exponential delay before failed pods are replaced.
type backoffRecord struct {
	failuresAfterLastSuccess int32
	lastFailureTime          *time.Time
}

// backoffStore keeps the records in memory, keyed by Job key. Like upstream
// it is not persisted: a restarted controller starts with no delay.
type backoffStore struct {
	mu      sync.Mutex
	records map[string]backoffRecord
}

func newBackoffStore() *backoffStore {
	return &backoffStore{records: map[string]backoffRecord{}}
}

func (s *backoffStore) get(key string) backoffRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.records[key]
}

func (s *backoffStore) set(key string, r backoffRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records[key] = r
}

func (s *backoffStore) remove(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.records, key)
}

// nextBackoffRecord folds the newly finished pods into the record: failures
// accumulate until a success, after which only failures that finished
// strictly after the latest success count. Pods lost to the control plane
// (lostToControlPlane) start no backoff.
func nextBackoffRecord(old backoffRecord, newSucceeded, newFailed []*v1.Pod) backoffRecord {
	succeeded := append([]*v1.Pod(nil), newSucceeded...)
	var failed []*v1.Pod
	for _, p := range newFailed {
		if !lostToControlPlane(p) {
			failed = append(failed, p)
		}
	}
	sortByFinishedTime(succeeded)
	sortByFinishedTime(failed)
	if len(succeeded) == 0 {
		if len(failed) == 0 {
			return old
		}
		t := finishedTime(failed[len(failed)-1])
		return backoffRecord{failuresAfterLastSuccess: old.failuresAfterLastSuccess + int32(len(failed)), lastFailureTime: &t}
	}
	rec := backoffRecord{}
	lastSuccess := finishedTime(succeeded[len(succeeded)-1])
	for i := len(failed) - 1; i >= 0; i-- {
		t := finishedTime(failed[i])
		if !t.After(lastSuccess) {
			break
		}
		if rec.lastFailureTime == nil {
			rec.lastFailureTime = &t
		}
		rec.failuresAfterLastSuccess++
	}
	return rec
}

// remaining is how long pod creation must still wait.
func (r backoffRecord) remaining(now time.Time, base, limit time.Duration) time.Duration {
	return remainingForFailures(now, base, limit, r.failuresAfterLastSuccess, r.lastFailureTime)
}

// remainingPerIndex is the backoffLimitPerIndex delay of an index whose last
// failed pod is given (nil: no delay).
func remainingPerIndex(now time.Time, base, limit time.Duration, lastFailed *v1.Pod) time.Duration {
	if lastFailed == nil || lostToControlPlane(lastFailed) {
		return 0
	}
	t := finishedTime(lastFailed)
	return remainingForFailures(now, base, limit, indexAbsoluteFailureCount(lastFailed)+1, &t)
}

// remainingForFailures: delay = min(base*2^(n-1), limit), minus the time
// elapsed since the last failure, floored at zero.
func remainingForFailures(now time.Time, base, limit time.Duration, failures int32, last *time.Time) time.Duration {
	if failures == 0 || last == nil {
		return 0
	}
	delay := base
	for i := int32(1); i < failures; i++ {
		delay *= 2
		if delay >= limit {
			delay = limit
			break
		}
	}
	elapsed := now.Sub(*last)
	if delay < elapsed {
		return 0
	}
	return delay - elapsed
}

func durationOf(ns int64) time.Duration { return time.Duration(ns) }

// lostToControlPlane says whether a failed pod was ended by batchlet's own
// node agent rather than by its containers: the agent lost them when it
// restarted (a server kill -9, a host reboot) and marked the pod with a
// DisruptionTarget condition (TerminationByKubelet) and its containers
// ContainerStatusUnknown. Unlike upstream, such a pod counts neither
// against backoffLimit nor towards status.failed, and starts no backoff,
// unless a podFailurePolicy rule matches it (docs/differences.md): a
// restart of the control plane is not the Job's failure.
func lostToControlPlane(p *v1.Pod) bool {
	c := podCondition(p, v1.DisruptionTarget)
	if c == nil || c.Status != v1.ConditionTrue || c.Reason != v1.PodReasonTerminationByKubelet {
		return false
	}
	return containersLost(p)
}

// containersLost says whether every terminated container of a pod was
// lost by its node (reason ContainerStatusUnknown) rather than ending.
func containersLost(p *v1.Pod) bool {
	lost := false
	for _, cs := range p.Status.ContainerStatuses {
		t := cs.State.Terminated
		if t == nil {
			continue
		}
		if t.Reason != reasonContainerStatusUnknown {
			return false
		}
		lost = true
	}
	return lost
}
