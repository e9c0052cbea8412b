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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.pods)
			rm, keep := duplicateIndexPodsForRemoval(in, 3)
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
