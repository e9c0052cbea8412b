package job

import (
	"slices"
	"time"

	batch "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
)

func hasTrackingFinalizer(p *v1.Pod) bool {
	return slices.Contains(p.Finalizers, batch.JobTrackingFinalizer)
}

// isLive: the pod can still change the Job's status — it is not terminal,
// or it still holds the tracking finalizer. A terminal pod without the
// finalizer is counted already (or was never to be counted).
func isLive(p *v1.Pod) bool {
	return !isTerminal(p) || hasTrackingFinalizer(p)
}

func isTerminal(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
}

// isActive: not terminal and not being deleted.
func isActive(p *v1.Pod) bool {
	return p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed && p.DeletionTimestamp == nil
}

// isTerminating: being deleted and not yet terminal.
func isTerminating(p *v1.Pod) bool {
	return p.DeletionTimestamp != nil && p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed
}

func filterPods(pods []*v1.Pod, keep func(*v1.Pod) bool) []*v1.Pod {
	var out []*v1.Pod
	for _, p := range pods {
		if keep(p) {
			out = append(out, p)
		}
	}
	return out
}

func countPods(pods []*v1.Pod, match func(*v1.Pod) bool) int32 {
	var n int32
	for _, p := range pods {
		if match(p) {
			n++
		}
	}
	return n
}

func podCondition(p *v1.Pod, t v1.PodConditionType) *v1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func isPodReady(p *v1.Pod) bool {
	c := podCondition(p, v1.PodReady)
	return c != nil && c.Status == v1.ConditionTrue
}

// onlyReplaceFailedPods: pods are replaced only once they are Failed, not
// while they terminate.
func onlyReplaceFailedPods(job *batch.Job) bool {
	if job.Spec.PodReplacementPolicy != nil && *job.Spec.PodReplacementPolicy == batch.Failed {
		return true
	}
	return job.Spec.PodFailurePolicy != nil
}

// isPodFailed: Failed phase, or (with TerminatingOrFailed) deleted before
// it succeeded.
func isPodFailed(p *v1.Pod, job *batch.Job) bool {
	if p.Status.Phase == v1.PodFailed {
		return true
	}
	if onlyReplaceFailedPods(job) {
		return false
	}
	return p.DeletionTimestamp != nil && p.Status.Phase != v1.PodSucceeded
}

// finishedTime is when the pod finished: the last container termination if
// every container terminated, else the Ready=False transition, else the
// deletion time less the grace period, else its creation.
func finishedTime(p *v1.Pod) time.Time {
	if t, ok := lastContainerFinish(p); ok {
		return t
	}
	if c := podCondition(p, v1.PodReady); c != nil && c.Status == v1.ConditionFalse && !c.LastTransitionTime.IsZero() {
		return c.LastTransitionTime.Time
	}
	if p.DeletionTimestamp != nil {
		t := p.DeletionTimestamp.Time
		if p.DeletionGracePeriodSeconds != nil {
			t = t.Add(-time.Duration(*p.DeletionGracePeriodSeconds) * time.Second)
		}
		return t
	}
	return p.CreationTimestamp.Time
}

func lastContainerFinish(p *v1.Pod) (time.Time, bool) {
	var last time.Time
	if len(p.Status.ContainerStatuses) == 0 {
		return last, false
	}
	for _, cs := range p.Status.ContainerStatuses {
		term := cs.State.Terminated
		if term == nil || term.FinishedAt.IsZero() {
			return time.Time{}, false
		}
		if term.FinishedAt.Time.After(last) {
			last = term.FinishedAt.Time
		}
	}
	return last, true
}

func sortByFinishedTime(pods []*v1.Pod) {
	slices.SortStableFunc(pods, func(a, b *v1.Pod) int {
		return finishedTime(a).Compare(finishedTime(b))
	})
}

// sortActivePods orders pods so the best deletion candidates come first:
// unscheduled, pending, not ready, ready for less time, more restarts, newer.
func sortActivePods(pods []*v1.Pod) {
	slices.SortStableFunc(pods, compareForRemoval)
}

func compareForRemoval(a, b *v1.Pod) int {
	if c := boolFirst(a.Spec.NodeName == "", b.Spec.NodeName == ""); c != 0 {
		return c
	}
	if c := phaseRank(a.Status.Phase) - phaseRank(b.Status.Phase); c != 0 {
		return c
	}
	ra, rb := isPodReady(a), isPodReady(b)
	if c := boolFirst(!ra, !rb); c != 0 {
		return c
	}
	if ra && rb {
		ta, tb := podCondition(a, v1.PodReady).LastTransitionTime, podCondition(b, v1.PodReady).LastTransitionTime
		if !ta.Equal(&tb) {
			return -ta.Time.Compare(tb.Time) // ready for less time (later transition) first
		}
	}
	if c := int(maxRestarts(b) - maxRestarts(a)); c != 0 {
		return c
	}
	return -a.CreationTimestamp.Time.Compare(b.CreationTimestamp.Time)
}

func boolFirst(a, b bool) int {
	switch {
	case a && !b:
		return -1
	case b && !a:
		return 1
	}
	return 0
}

func phaseRank(p v1.PodPhase) int {
	switch p {
	case v1.PodPending:
		return 0
	case v1.PodUnknown:
		return 1
	case v1.PodRunning:
		return 2
	}
	return 3
}

func maxRestarts(p *v1.Pod) int32 {
	var m int32
	for _, cs := range p.Status.ContainerStatuses {
		m = max(m, cs.RestartCount)
	}
	return m
}
