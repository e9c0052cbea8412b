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
	live := make([]*v1.Pod, len(lp))
	facts := make([]podFacts, len(lp))
	if indexed && placeByIndex(lp, live, facts) {
		return live, facts
	}
	if indexed && !slices.IsSortedFunc(lp, byLiveIndex) {
		slices.SortFunc(lp, byLiveIndex)
	}
	for i, l := range lp {
		live[i], facts[i] = l.pod, l.facts
	}
	return live, facts
}

// countingSpread bounds the window of indexes, as a multiple of the
// number of live pods, that placeByIndex counts over.
const countingSpread = 8

// placeByIndex writes lp (in listing order) into live and facts in
// byLiveIndex order with a counting sort over the window of their
// indexes, and reports whether it did. A Job's live pods hold a window of
// indexes about as wide as its parallelism, so this is linear where the
// comparison sort of every sync was n log n two-key compares; for a
// window wider than countingSpread times the pods it writes nothing and
// reports false.
func placeByIndex(lp []livePod, live []*v1.Pod, facts []podFacts) bool {
	if len(lp) == 0 {
		return false
	}
	lo, hi := lp[0].facts.index, lp[0].facts.index
	for _, l := range lp[1:] {
		lo, hi = min(lo, l.facts.index), max(hi, l.facts.index)
	}
	if hi-lo >= countingSpread*len(lp) {
		return false
	}
	// next[k] is where the next pod of index lo+k goes.
	next := make([]int, hi-lo+2)
	for _, l := range lp {
		next[l.facts.index-lo+1]++
	}
	for k := 1; k < len(next); k++ {
		next[k] += next[k-1]
	}
	for _, l := range lp { // in listing order: stable within an index
		k := l.facts.index - lo
		live[next[k]], facts[next[k]] = l.pod, l.facts
		next[k]++
	}
	return true
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
