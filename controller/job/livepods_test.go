package job

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	batch "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// livePodsBySort is livePods as it was: the live pods stably sorted by
// index, the reference placeByIndex's counting must reproduce.
func livePodsBySort(pods []*v1.Pod) ([]*v1.Pod, []podFacts) {
	var lp []livePod
	for _, p := range pods {
		if isLive(p) {
			lp = append(lp, livePod{pod: p, facts: podFacts{index: podIndex(p), finalizer: hasTrackingFinalizer(p)}, seq: len(lp)})
		}
	}
	slices.SortStableFunc(lp, func(a, b livePod) int { return a.facts.index - b.facts.index })
	live, facts := make([]*v1.Pod, len(lp)), make([]podFacts, len(lp))
	for i, l := range lp {
		live[i], facts[i] = l.pod, l.facts
	}
	return live, facts
}

// randomPods are n pods of indexes from base to base+spread (some with no
// or an invalid index, some sharing one), in random phases, some with the
// tracking finalizer.
func randomPods(rnd *rand.Rand, n, base, spread int) []*v1.Pod {
	phases := []v1.PodPhase{v1.PodPending, v1.PodRunning, v1.PodSucceeded, v1.PodFailed}
	pods := make([]*v1.Pod, n)
	for i := range pods {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Annotations: map[string]string{}}}
		switch r := rnd.IntN(20); {
		case r == 0: // no index
		case r == 1:
			p.Annotations[batch.JobCompletionIndexAnnotation] = "x"
		default:
			p.Annotations[batch.JobCompletionIndexAnnotation] = strconv.Itoa(base + rnd.IntN(spread+1))
		}
		p.Status.Phase = phases[rnd.IntN(len(phases))]
		if rnd.IntN(3) > 0 {
			p.Finalizers = []string{batch.JobTrackingFinalizer}
		}
		pods[i] = p
	}
	return pods
}

// livePods' counting placement gives the order the stable sort by index
// gives: for dense windows (counted), sparse ones (sorted), one index,
// one pod, none.
func TestLivePodsIndexOrder(t *testing.T) {
	tests := map[string]struct{ n, base, spread int }{
		"none":             {0, 0, 0},
		"one":              {1, 7, 0},
		"one index shared": {50, 3, 0},
		"dense window":     {1000, 20000, 1200},
		"window at 8x":     {100, 0, 8 * 100},
		"sparse, sorted":   {100, 0, 100000},
		"from zero":        {300, 0, 300},
	}
	for name, tc := range tests {
		for seed := uint64(1); seed <= 5; seed++ {
			t.Run(fmt.Sprintf("%s/seed %d", name, seed), func(t *testing.T) {
				pods := randomPods(rand.New(rand.NewPCG(seed, 10)), tc.n, tc.base, tc.spread)
				wantLive, wantFacts := livePodsBySort(pods)
				live, facts := livePods(pods, true)
				if !slices.Equal(live, wantLive) || !slices.Equal(facts, wantFacts) {
					t.Errorf("live pods out of index order:\n got %v %v\nwant %v %v", names(live), facts, names(wantLive), wantFacts)
				}
			})
		}
	}
}

func names(pods []*v1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	return out
}
