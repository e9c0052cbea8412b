package gc

import (
	"encoding/json"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// jsonPatchOp is one RFC 6902 operation.
type jsonPatchOp struct {
	Op    string          `json:"op"`
	Path  string          `json:"path"`
	Value json.RawMessage `json:"value,omitempty"`
}

// removeOwnerRefsPatch removes the references to uids from obj, guarded by
// test operations so a concurrent change makes the patch fail, not clobber.
func removeOwnerRefsPatch(obj metav1.Object, uids []types.UID) ([]byte, bool) {
	ops := []jsonPatchOp{{Op: "test", Path: "/metadata/uid", Value: raw(obj.GetUID())}}
	refs := obj.GetOwnerReferences()
	for i := len(refs) - 1; i >= 0; i-- {
		if !slices.Contains(uids, refs[i].UID) {
			continue
		}
		p := fmt.Sprintf("/metadata/ownerReferences/%d", i)
		ops = append(ops, jsonPatchOp{Op: "test", Path: p + "/uid", Value: raw(refs[i].UID)}, jsonPatchOp{Op: "remove", Path: p})
	}
	return marshalOps(ops)
}

// unblockPatch sets blockOwnerDeletion=false on every blocking reference.
func unblockPatch(obj metav1.Object) ([]byte, bool) {
	ops := []jsonPatchOp{{Op: "test", Path: "/metadata/uid", Value: raw(obj.GetUID())}}
	for i, r := range obj.GetOwnerReferences() {
		if r.BlockOwnerDeletion == nil || !*r.BlockOwnerDeletion {
			continue
		}
		p := fmt.Sprintf("/metadata/ownerReferences/%d", i)
		ops = append(ops, jsonPatchOp{Op: "test", Path: p + "/uid", Value: raw(r.UID)}, jsonPatchOp{Op: "replace", Path: p + "/blockOwnerDeletion", Value: raw(false)})
	}
	return marshalOps(ops)
}

// removeFinalizerPatch removes finalizer name from obj.
func removeFinalizerPatch(obj metav1.Object, name string) ([]byte, bool) {
	ops := []jsonPatchOp{{Op: "test", Path: "/metadata/uid", Value: raw(obj.GetUID())}}
	fins := obj.GetFinalizers()
	for i := len(fins) - 1; i >= 0; i-- {
		if fins[i] != name {
			continue
		}
		p := fmt.Sprintf("/metadata/finalizers/%d", i)
		ops = append(ops, jsonPatchOp{Op: "test", Path: p, Value: raw(name)}, jsonPatchOp{Op: "remove", Path: p})
	}
	return marshalOps(ops)
}

// marshalOps encodes ops; ok is false when there is nothing to change.
func marshalOps(ops []jsonPatchOp) ([]byte, bool) {
	if len(ops) == 1 {
		return nil, false
	}
	b, err := json.Marshal(ops)
	if err != nil {
		panic(fmt.Sprintf("marshal json patch: %v", err)) // plain structs never fail
	}
	return b, true
}

// raw encodes a patch value.
func raw(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("marshal json patch value: %v", err))
	}
	return b
}
