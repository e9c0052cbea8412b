package scheduler

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fitResult is the outcome of filtering every node for one pod.
type fitResult struct {
	node    string    // chosen node, "" when none fits
	reasons histogram // why each node was rejected
	// resolvable are nodes rejected only for resources, where preemption may help.
	resolvable []*nodeInfo
}

// findNode filters nodes and picks the least allocated feasible one.
func findNode(pod *corev1.Pod, req resources, nodes []*nodeInfo) fitResult {
	res := fitResult{reasons: histogram{}}
	best, bestScore := "", 0.0
	score := podScoreRequests(pod)
	for _, n := range nodes {
		reasons, resolvable := filterNode(pod, req, n)
		if len(reasons) == 0 {
			// Scores go below zero once default requests overcommit a
			// node; the first feasible node always wins over none.
			if s := leastAllocatedScore(score, n); best == "" || s > bestScore {
				best, bestScore = n.node.Name, s
			}
			continue
		}
		for _, r := range reasons {
			res.reasons[r]++
		}
		if resolvable {
			res.resolvable = append(res.resolvable, n)
		}
	}
	res.node = best
	return res
}

// leastAllocatedScore prefers nodes with the most free cpu and memory left,
// counting requests with the scoring defaults (req and n.scored).
func leastAllocatedScore(req resources, n *nodeInfo) float64 {
	free := func(used, want, alloc int64) float64 {
		if alloc <= 0 {
			return 0
		}
		return float64(alloc-used-want) / float64(alloc)
	}
	return (free(n.scored.milliCPU, req.milliCPU, n.allocatable.milliCPU) +
		free(n.scored.memory, req.memory, n.allocatable.memory)) / 2
}

// preemptionPlan is the victims to evict on one node.
type preemptionPlan struct {
	node    string
	victims []*corev1.Pod
}

// selectVictims finds the fewest lower-priority pods on n whose removal lets
// pod fit: remove all lower-priority pods, then reprieve as many as possible,
// highest priority first. ok is false when even removing all does not help.
func selectVictims(pod *corev1.Pod, req resources, n *nodeInfo, onNode []*podEntry) ([]*corev1.Pod, bool) {
	p := priority(pod)
	used := n.requested
	used.scalar = cloneScalar(used.scalar)
	var candidates []*podEntry
	for _, e := range onNode {
		if priority(e.pod) < p && e.pod.DeletionTimestamp == nil {
			candidates = append(candidates, e)
			used.sub(e.req)
		}
	}
	if len(candidates) == 0 || len(insufficient(req, used, n.allocatable)) > 0 {
		return nil, false
	}
	sort.SliceStable(candidates, func(i, j int) bool { return morePreemptionWorthy(candidates[i].pod, candidates[j].pod) })
	var victims []*corev1.Pod
	for _, e := range candidates {
		trial := used
		trial.scalar = cloneScalar(used.scalar)
		trial.add(e.req)
		if len(insufficient(req, trial, n.allocatable)) == 0 {
			used = trial
			continue
		}
		victims = append(victims, e.pod)
	}
	return victims, true
}

// morePreemptionWorthy orders reprieve candidates: higher priority first,
// then the longer running.
func morePreemptionWorthy(a, b *corev1.Pod) bool {
	if priority(a) != priority(b) {
		return priority(a) > priority(b)
	}
	ta, tb := startTime(a), startTime(b)
	return ta.Before(&tb)
}

func startTime(p *corev1.Pod) metav1.Time {
	if p.Status.StartTime != nil {
		return *p.Status.StartTime
	}
	return p.CreationTimestamp
}

// pickPlan chooses among nodes: lowest highest-victim priority, then lowest
// sum of victim priorities, then fewest victims, then node order.
func pickPlan(plans []preemptionPlan) (preemptionPlan, bool) {
	if len(plans) == 0 {
		return preemptionPlan{}, false
	}
	best := plans[0]
	for _, pl := range plans[1:] {
		if betterPlan(pl, best) {
			best = pl
		}
	}
	return best, true
}

func betterPlan(a, b preemptionPlan) bool {
	ha, hb := highestPriority(a.victims), highestPriority(b.victims)
	if ha != hb {
		return ha < hb
	}
	sa, sb := sumPriority(a.victims), sumPriority(b.victims)
	if sa != sb {
		return sa < sb
	}
	return len(a.victims) < len(b.victims)
}

func highestPriority(ps []*corev1.Pod) int32 {
	h := int32(-1 << 31)
	for _, p := range ps {
		h = max(h, priority(p))
	}
	return h
}

func sumPriority(ps []*corev1.Pod) int64 {
	var s int64
	for _, p := range ps {
		// Shift like upstream so negative priorities still add up sensibly.
		s += int64(priority(p)) + 1<<31
	}
	return s
}
