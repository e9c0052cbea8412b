package gc

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestGraphKeepsOnlyObjectsWithEdgesOrWork(t *testing.T) {
	tests := []struct {
		name  string
		objs  []*metav1.PartialObjectMetadata
		kept  []types.UID
		virt  []types.UID
		todel []types.UID
	}{
		{name: "an ownerless object with no dependents is not kept",
			objs: []*metav1.PartialObjectMetadata{obj(jobsRes, "j", "j1")}},
		{name: "a dependent is kept and its unseen owner becomes virtual",
			objs: []*metav1.PartialObjectMetadata{obj(jobsRes, "j", "j1"), obj(podsRes, "p", "p1", jobRef("j", "j1", true))},
			kept: []types.UID{"j1", "p1"}, virt: []types.UID{"j1"}, todel: []types.UID{"j1"}},
		{name: "an owner seen after its dependent is kept, observed",
			objs: []*metav1.PartialObjectMetadata{obj(podsRes, "p", "p1", jobRef("j", "j1", true)), obj(jobsRes, "j", "j1")},
			kept: []types.UID{"j1", "p1"}, todel: []types.UID{"j1"}},
		{name: "an ownerless object deleting its dependents is kept",
			objs: []*metav1.PartialObjectMetadata{deleting(obj(jobsRes, "j", "j1"), FinalizerForeground)},
			kept: []types.UID{"j1"}, todel: []types.UID{"j1"}},
		{name: "an ownerless object orphaning its dependents is kept",
			objs: []*metav1.PartialObjectMetadata{deleting(obj(jobsRes, "j", "j1"), FinalizerOrphan)},
			kept: []types.UID{"j1"}},
		{name: "a dependent that loses its owners is no longer kept",
			objs:  []*metav1.PartialObjectMetadata{obj(podsRes, "p", "p1", jobRef("j", "j1", true)), obj(podsRes, "p", "p1")},
			todel: []types.UID{"j1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGraph(newKindMapper(DefaultResources()))
			var todel []types.UID
			for _, o := range tt.objs {
				res := podsRes
				if o.Kind == jobsRes.Kind {
					res = jobsRes
				}
				todel = append(todel, g.observe(res, o).attemptToDelete...)
			}
			var kept, virt []types.UID
			for uid, n := range g.nodes {
				kept = append(kept, uid)
				if n.virtual {
					virt = append(virt, uid)
				}
			}
			slices.Sort(kept)
			slices.Sort(todel)
			if !slices.Equal(kept, tt.kept) || !slices.Equal(virt, tt.virt) || !slices.Equal(slices.Compact(todel), tt.todel) {
				t.Errorf("kept %v virtual %v attemptToDelete %v; want %v, %v, %v", kept, virt, todel, tt.kept, tt.virt, tt.todel)
			}
		})
	}
}

func TestGraphObserveVerified(t *testing.T) {
	pod := obj(podsRes, "p", "p1", jobRef("j", "j1", true))
	tests := []struct {
		name         string
		deletedFirst bool
		wantObserved bool
		wantNode     bool
	}{
		{name: "a virtual owner read live becomes observed", wantObserved: true, wantNode: true},
		{name: "an owner whose deletion was seen stays gone", deletedFirst: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGraph(newKindMapper(DefaultResources()))
			job := obj(jobsRes, "j", "j1")
			g.observe(jobsRes, job) // not kept: a plain leaf
			g.observe(podsRes, pod) // j1 comes back virtual
			if tt.deletedFirst {
				g.forget("j1")
			}
			g.observeVerified(jobsRes, job)
			n, ok := g.get("j1")
			if ok != tt.wantNode || (ok && n.virtual == tt.wantObserved) {
				t.Fatalf("node %v (found %v); want found %v, observed %v", n, ok, tt.wantNode, tt.wantObserved)
			}
			if ok {
				if deps := g.dependentsOf("j1"); len(deps) != 1 || deps[0].id.uid != "p1" {
					t.Errorf("dependents of j1 = %v, want p1", deps)
				}
			}
		})
	}
}

func TestGraphForgetUnkeptMarksAbsent(t *testing.T) {
	g := newGraph(newKindMapper(DefaultResources()))
	g.observe(jobsRes, obj(jobsRes, "j", "j1"))
	g.forget("j1")
	out := g.observe(podsRes, obj(podsRes, "p", "p1", jobRef("j", "j1", true)))
	if !slices.Equal(out.attemptToDelete, []types.UID{"p1"}) {
		t.Errorf("attemptToDelete = %v, want the dependent of a deleted owner, p1", out.attemptToDelete)
	}
	if _, ok := g.get("j1"); ok {
		t.Error("a deleted owner came back as a node")
	}
}
