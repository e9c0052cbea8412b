package job

import (
	"cmp"
	"slices"

	v1 "k8s.io/api/core/v1"
)

// podFacts are what the passes of a sync read of a live pod, read once per
// sync: the completion index annotation (a map lookup and a parse) and the
// tracking finalizer (a string search) were read by four or five passes
// each, for every live pod of every sync.
type podFacts struct {
	index     int // completion index; unknownIndex for NonIndexed Jobs
	finalizer bool
}

// livePod is a live pod with its facts and its position in the listing,
// the tie-break of the index order.
type livePod struct {
	pod   *v1.Pod
	facts podFacts
	seq   int
}

// livePods keeps the pods that can still change the status (isLive) with
// their facts. For Indexed Jobs they come in index order, pods sharing an
// index in listing order, so that the passes needing index order
// (trackedPods, duplicateIndexPodsForRemoval) find it instead of each
// sorting. The listing order is the informer's, arbitrary: no decision
// depends on it beyond the tie-breaks that this order keeps.
func livePods(pods []*v1.Pod, indexed bool) ([]*v1.Pod, []podFacts) {
	lp := make([]livePod, 0, len(pods))
	for _, p := range pods {
		fin := hasTrackingFinalizer(p)
		if isTerminal(p) && !fin { // !isLive, without a second finalizer search
			continue
		}
		ix := unknownIndex
		if indexed {
			ix = podIndex(p)
		}
		lp = append(lp, livePod{pod: p, facts: podFacts{index: ix, finalizer: fin}, seq: len(lp)})
	}
	if indexed && !slices.IsSortedFunc(lp, byLiveIndex) {
		slices.SortFunc(lp, byLiveIndex)
	}
	live := make([]*v1.Pod, len(lp))
	facts := make([]podFacts, len(lp))
	for i, l := range lp {
		live[i], facts[i] = l.pod, l.facts
	}
	return live, facts
}

// byLiveIndex is byIndex for livePods.
func byLiveIndex(a, b livePod) int {
	return cmp.Or(cmp.Compare(a.facts.index, b.facts.index), cmp.Compare(a.seq, b.seq))
}

// activeWithIndexes are the active live pods and their indexes (for
// Indexed Jobs in index order, as live).
func (st *syncState) activeWithIndexes() ([]*v1.Pod, []int) {
	var pods []*v1.Pod
	var ixs []int
	for i, p := range st.live {
		if isActive(p) {
			pods = append(pods, p)
			ixs = append(ixs, st.liveFacts[i].index)
		}
	}
	return pods, ixs
}
