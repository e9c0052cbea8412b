package gc

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func ref(uid string, st ownerState) classifiedRef {
	return classifiedRef{ref: metav1.OwnerReference{UID: types.UID(uid)}, state: st}
}

func TestDecideDependent(t *testing.T) {
	tests := map[string]struct {
		view dependentView
		want action
	}{
		"no owners": {view: dependentView{}, want: action{}},
		"solid owner": {
			view: dependentView{owners: []classifiedRef{ref("a", ownerSolid)}},
			want: action{},
		},
		"only owner gone: background delete": {
			view: dependentView{owners: []classifiedRef{ref("a", ownerDangling)}},
			want: action{kind: actDelete, policy: metav1.DeletePropagationBackground},
		},
		"one owner gone, one alive: drop the dangling reference": {
			view: dependentView{owners: []classifiedRef{ref("a", ownerDangling), ref("b", ownerSolid)}},
			want: action{kind: actRemoveOwnerRefs, uids: []types.UID{"a"}},
		},
		"owner in foreground deletion, other owner alive: drop the waiting reference": {
			view: dependentView{owners: []classifiedRef{ref("a", ownerWaiting), ref("b", ownerSolid), ref("c", ownerDangling)}},
			want: action{kind: actRemoveOwnerRefs, uids: []types.UID{"c", "a"}},
		},
		"owner in foreground deletion, leaf dependent: background delete": {
			view: dependentView{owners: []classifiedRef{ref("a", ownerWaiting)}},
			want: action{kind: actDelete, policy: metav1.DeletePropagationBackground},
		},
		"owner in foreground deletion, dependent has dependents: foreground delete": {
			view: dependentView{hasDependents: true, owners: []classifiedRef{ref("a", ownerWaiting)}},
			want: action{kind: actDelete, policy: metav1.DeletePropagationForeground},
		},
		"foreground cycle: unblock then delete": {
			view: dependentView{hasDependents: true, dependentDeletingDependents: true, owners: []classifiedRef{ref("a", ownerWaiting)}},
			want: action{kind: actDelete, policy: metav1.DeletePropagationForeground, unblock: true},
		},
		"already being deleted: nothing": {
			view: dependentView{beingDeleted: true, owners: []classifiedRef{ref("a", ownerDangling)}},
			want: action{},
		},
		"owner gone, dependent asked for orphan propagation": {
			view: dependentView{finalizers: []string{FinalizerOrphan}, owners: []classifiedRef{ref("a", ownerDangling)}},
			want: action{kind: actDelete, policy: metav1.DeletePropagationOrphan},
		},
		"owner gone, dependent asked for foreground propagation": {
			view: dependentView{finalizers: []string{"x", FinalizerForeground}, owners: []classifiedRef{ref("a", ownerDangling)}},
			want: action{kind: actDelete, policy: metav1.DeletePropagationForeground},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := decideDependent(tc.view); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("decideDependent() = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestDecideForegroundOwner(t *testing.T) {
	tests := map[string]struct {
		deps       []blockingDependent
		wantRemove bool
		wantVisit  []types.UID
	}{
		"no dependents":            {wantRemove: true},
		"only non-blocking remain": {deps: []blockingDependent{{uid: "a"}}, wantRemove: true},
		"blocking dependent remains": {
			deps:      []blockingDependent{{uid: "a", blocks: true}, {uid: "b"}},
			wantVisit: []types.UID{"a"},
		},
		"blocking dependent already deleting its own dependents is not revisited": {
			deps: []blockingDependent{{uid: "a", blocks: true, deletingDependents: true}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			remove, visit := decideForegroundOwner(tc.deps)
			if remove != tc.wantRemove || !reflect.DeepEqual(visit, tc.wantVisit) {
				t.Errorf("decideForegroundOwner() = %v, %v; want %v, %v", remove, visit, tc.wantRemove, tc.wantVisit)
			}
		})
	}
}
