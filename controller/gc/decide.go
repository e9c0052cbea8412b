package gc

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ownerState classifies one ownerReference of a dependent.
type ownerState int

const (
	// ownerSolid: the owner exists and is not deleting its dependents.
	ownerSolid ownerState = iota
	// ownerDangling: no object with the referenced UID exists.
	ownerDangling
	// ownerWaiting: the owner is being deleted in the foreground.
	ownerWaiting
)

// classifiedRef is an ownerReference with its owner's state.
type classifiedRef struct {
	ref   metav1.OwnerReference
	state ownerState
}

// dependentView is everything decideDependent looks at.
type dependentView struct {
	beingDeleted       bool
	deletingDependents bool
	finalizers         []string
	// hasDependents: the item owns other objects.
	hasDependents bool
	// dependentDeletingDependents: one of them is itself in foreground deletion.
	dependentDeletingDependents bool
	owners                      []classifiedRef
}

type actionKind int

const (
	// actNone leaves the item alone; it is the zero value.
	actNone actionKind = iota
	// actRemoveOwnerRefs patches away the references listed in uids.
	actRemoveOwnerRefs
	// actDelete deletes the item with the given propagation.
	actDelete
)

// action is what the collector does to one dependent.
type action struct {
	kind   actionKind
	uids   []types.UID
	policy metav1.DeletionPropagation
	// unblock clears blockOwnerDeletion on the item's references before deleting,
	// breaking foreground cycles.
	unblock bool
}

// decideDependent decides the fate of a dependent from its owners' states.
func decideDependent(v dependentView) action {
	if v.beingDeleted && !v.deletingDependents {
		return action{kind: actNone}
	}
	if len(v.owners) == 0 {
		return action{kind: actNone}
	}
	solid, gone, waiting := splitOwners(v.owners)
	switch {
	case solid > 0:
		if len(gone) == 0 && len(waiting) == 0 {
			return action{kind: actNone}
		}
		return action{kind: actRemoveOwnerRefs, uids: append(gone, waiting...)}
	case len(waiting) > 0 && v.hasDependents:
		return action{kind: actDelete, policy: metav1.DeletePropagationForeground, unblock: v.dependentDeletingDependents}
	default:
		return action{kind: actDelete, policy: policyFromFinalizers(v.finalizers)}
	}
}

func splitOwners(refs []classifiedRef) (solid int, gone, waiting []types.UID) {
	for _, r := range refs {
		switch r.state {
		case ownerSolid:
			solid++
		case ownerDangling:
			gone = append(gone, r.ref.UID)
		case ownerWaiting:
			waiting = append(waiting, r.ref.UID)
		}
	}
	return solid, gone, waiting
}

// policyFromFinalizers keeps the propagation an object already asked for.
func policyFromFinalizers(fins []string) metav1.DeletionPropagation {
	for _, f := range fins {
		if f == FinalizerOrphan {
			return metav1.DeletePropagationOrphan
		}
	}
	for _, f := range fins {
		if f == FinalizerForeground {
			return metav1.DeletePropagationForeground
		}
	}
	return metav1.DeletePropagationBackground
}

// blockingDependent is a dependent of an owner in foreground deletion.
type blockingDependent struct {
	uid                types.UID
	blocks             bool
	deletingDependents bool
}

// decideForegroundOwner returns whether the owner's foregroundDeletion
// finalizer can go, and otherwise which blocking dependents to (re)visit.
func decideForegroundOwner(deps []blockingDependent) (removeFinalizer bool, visit []types.UID) {
	blocking := 0
	for _, d := range deps {
		if !d.blocks {
			continue
		}
		blocking++
		if !d.deletingDependents {
			visit = append(visit, d.uid)
		}
	}
	return blocking == 0, visit
}
