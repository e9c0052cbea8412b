package podgc

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// plan is what one GC pass deletes.
type plan struct {
	// terminated: oldest terminated pods above the threshold.
	terminated []*corev1.Pod
	// orphaned: pods bound to nodes missing for longer than the quarantine.
	orphaned []*corev1.Pod
	// unscheduledTerminating: pods being deleted that never got a node.
	unscheduledTerminating []*corev1.Pod
}

// observed is what a pass looks at.
type observed struct {
	pods      []*corev1.Pod
	nodes     map[string]bool
	threshold int
	// missingSince is when each absent node was first seen missing; decide
	// records new ones.
	missingSince map[string]time.Time
	quarantine   time.Duration
	now          time.Time
}

func isTerminated(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// decide computes one GC pass.
func decide(o observed) plan {
	var p plan
	p.terminated = overThreshold(o.pods, o.threshold)
	seenMissing := map[string]bool{}
	for _, pod := range o.pods {
		switch {
		case pod.Spec.NodeName == "":
			if pod.DeletionTimestamp != nil {
				p.unscheduledTerminating = append(p.unscheduledTerminating, pod)
			}
		case !o.nodes[pod.Spec.NodeName]:
			seenMissing[pod.Spec.NodeName] = true
			if orphanedLongEnough(o, pod.Spec.NodeName) {
				p.orphaned = append(p.orphaned, pod)
			}
		}
	}
	for name := range o.missingSince {
		if !seenMissing[name] {
			delete(o.missingSince, name)
		}
	}
	return p
}

func orphanedLongEnough(o observed, node string) bool {
	since, ok := o.missingSince[node]
	if !ok {
		o.missingSince[node] = o.now
		since = o.now
	}
	return o.now.Sub(since) >= o.quarantine
}

// overThreshold returns the oldest terminated pods beyond threshold
// (threshold <= 0 disables this part).
func overThreshold(pods []*corev1.Pod, threshold int) []*corev1.Pod {
	if threshold <= 0 {
		return nil
	}
	var terminated []*corev1.Pod
	for _, p := range pods {
		if isTerminated(p) {
			terminated = append(terminated, p)
		}
	}
	excess := len(terminated) - threshold
	if excess <= 0 {
		return nil
	}
	sort.SliceStable(terminated, func(i, j int) bool {
		return terminated[i].CreationTimestamp.Before(&terminated[j].CreationTimestamp)
	})
	return terminated[:excess]
}
