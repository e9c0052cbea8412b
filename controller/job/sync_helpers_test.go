package job

import (
	"slices"
	"strconv"
	"testing"

	batch "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
)

// duplicateIndexPodsForRemoval removes, in this order, the pods without a
// usable index (input order) and, index by index, all but the most active
// pod of a repeated index; equally active pods keep their input order.
func TestDuplicateIndexPodsForRemoval(t *testing.T) {
	pod := func(name string, index int, node string, phase v1.PodPhase) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{}},
			Spec: v1.PodSpec{NodeName: node}, Status: v1.PodStatus{Phase: phase}}
		if index >= 0 {
			p.Annotations[batch.JobCompletionIndexAnnotation] = strconv.Itoa(index)
		}
		return p
	}
	names := func(pods []*v1.Pod) []string {
		out := []string{}
		for _, p := range pods {
			out = append(out, p.Name)
		}
		return out
	}
	tests := []struct {
		name             string
		pods             []*v1.Pod
		wantRm, wantKeep []string
	}{
		{name: "none"},
		{
			name:     "unique indexes, any order",
			pods:     []*v1.Pod{pod("c", 2, "n", v1.PodRunning), pod("a", 0, "n", v1.PodRunning), pod("b", 1, "n", v1.PodRunning)},
			wantKeep: []string{"a", "b", "c"},
		},
		{
			name:   "no index and out of range first, in input order",
			pods:   []*v1.Pod{pod("big", 5, "n", v1.PodRunning), pod("a", 0, "n", v1.PodRunning), pod("none", -1, "n", v1.PodRunning)},
			wantRm: []string{"big", "none"}, wantKeep: []string{"a"},
		},
		{
			name: "repeated index keeps the most active, ties in input order",
			pods: []*v1.Pod{pod("x", 2, "n", v1.PodRunning), pod("r1", 1, "n", v1.PodRunning), pod("bad", -1, "", v1.PodPending),
				pod("pend", 1, "", v1.PodPending), pod("r2", 1, "n", v1.PodRunning), pod("y", 2, "", v1.PodPending)},
			wantRm: []string{"bad", "pend", "r1", "y"}, wantKeep: []string{"r2", "x"},
		},
		{
			name: "already in index order, ties in input order",
			pods: []*v1.Pod{pod("bad", -1, "", v1.PodPending), pod("r1", 1, "n", v1.PodRunning), pod("pend", 1, "", v1.PodPending),
				pod("r2", 1, "n", v1.PodRunning), pod("x", 2, "n", v1.PodRunning), pod("y", 2, "", v1.PodPending)},
			wantRm: []string{"bad", "pend", "r1", "y"}, wantKeep: []string{"r2", "x"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.pods)
			ixs := make([]int, len(in))
			for i, p := range in {
				ixs[i] = podIndex(p)
			}
			rm, keep := duplicateIndexPodsForRemoval(in, ixs, 3)
			if got := names(rm); !slices.Equal(got, tt.wantRm) {
				t.Errorf("rm = %v, want %v", got, tt.wantRm)
			}
			if got := names(keep); !slices.Equal(got, tt.wantKeep) {
				t.Errorf("keep = %v, want %v", got, tt.wantKeep)
			}
			if !slices.Equal(in, tt.pods) {
				t.Errorf("input reordered: %v", names(in))
			}
		})
	}
}

// uncountedHolding keeps the uncounted UIDs whose pods still hold the
// finalizer and were not released in this sync.
func TestUncountedHolding(t *testing.T) {
	tracked := func(uids ...types.UID) []trackedPod {
		var out []trackedPod
		for _, uid := range uids {
			out = append(out, trackedPod{pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid}}})
		}
		return out
	}
	tests := []struct {
		name      string
		uncounted batch.UncountedTerminatedPods
		tracked   []trackedPod
		released  sets.Set[types.UID]
		want      []types.UID
	}{
		{name: "nothing uncounted", tracked: tracked("a")},
		{name: "held, gone and released", uncounted: batch.UncountedTerminatedPods{Succeeded: []types.UID{"a", "b"}, Failed: []types.UID{"c", "e"}},
			tracked: tracked("a", "b", "d", "e"), released: sets.New[types.UID]("b"), want: []types.UID{"a", "e"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := uncountedHolding(&tt.uncounted, tt.tracked, tt.released)
			if !got.Equal(sets.New(tt.want...)) {
				t.Errorf("uncountedHolding = %v, want %v", sets.List(got), tt.want)
			}
		})
	}
}

// livePods drops the settled pods (terminal, finalizer gone), reads each
// pod's index and finalizer once and, for Indexed Jobs, orders by index
// with pods sharing an index (or without one) in listing order.
func TestLivePods(t *testing.T) {
	pod := func(name string, index int, phase v1.PodPhase, finalizer bool) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{}}, Status: v1.PodStatus{Phase: phase}}
		if index >= 0 {
			p.Annotations[batch.JobCompletionIndexAnnotation] = strconv.Itoa(index)
		}
		if finalizer {
			p.Finalizers = []string{"other", batch.JobTrackingFinalizer}
		}
		return p
	}
	pods := []*v1.Pod{
		pod("run2", 2, v1.PodRunning, true), pod("done1", 1, v1.PodSucceeded, false), pod("ok1", 1, v1.PodSucceeded, true),
		pod("noix", -1, v1.PodRunning, false), pod("run0", 0, v1.PodPending, false), pod("fail2", 2, v1.PodFailed, true),
		pod("again1", 1, v1.PodRunning, true),
	}
	type got struct {
		name string
		podFacts
	}
	collect := func(live []*v1.Pod, facts []podFacts) []got {
		var out []got
		for i, p := range live {
			out = append(out, got{p.Name, facts[i]})
		}
		return out
	}
	wantIndexed := []got{
		{"noix", podFacts{unknownIndex, false}}, {"run0", podFacts{0, false}}, {"ok1", podFacts{1, true}},
		{"again1", podFacts{1, true}}, {"run2", podFacts{2, true}}, {"fail2", podFacts{2, true}},
	}
	if g := collect(livePods(pods, true)); !slices.Equal(g, wantIndexed) {
		t.Errorf("indexed: %v, want %v", g, wantIndexed)
	}
	wantNonIndexed := []got{
		{"run2", podFacts{unknownIndex, true}}, {"ok1", podFacts{unknownIndex, true}}, {"noix", podFacts{unknownIndex, false}},
		{"run0", podFacts{unknownIndex, false}}, {"fail2", podFacts{unknownIndex, true}}, {"again1", podFacts{unknownIndex, true}},
	}
	if g := collect(livePods(pods, false)); !slices.Equal(g, wantNonIndexed) {
		t.Errorf("non-indexed: %v, want %v", g, wantNonIndexed)
	}
}
