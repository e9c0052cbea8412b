package apiserver

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// An update's UID is a precondition on the stored object (409, as
// kube-apiserver's storage precondition), while a patch that changes the
// UID fails validation as immutable (422): the kubelet's status patch
// carries the pod's UID for that. Both over HTTP and in-process.
func TestUpdateAndPatchKeepTheUID(t *testing.T) {
	for _, inProc := range []bool{false, true} {
		e := newEquivEnv(t, inProc)
		ctx := context.Background()
		pods := e.client.CoreV1().Pods("default")
		p, err := pods.Create(ctx, equivPod("p1"), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		const other = "11111111-2222-3333-4444-555555555555"

		stale := p.DeepCopy()
		stale.UID = other
		_, err = pods.Update(ctx, stale, metav1.UpdateOptions{})
		want := `Operation cannot be fulfilled on pods "p1": Precondition failed: UID in precondition: ` + other + `, UID in object meta: ` + string(p.UID)
		if !apierrors.IsConflict(err) || err.Error() != want {
			t.Errorf("inProc=%v update with another UID: got %v, want Conflict %q", inProc, err, want)
		}
		_, err = pods.UpdateStatus(ctx, stale, metav1.UpdateOptions{})
		if !apierrors.IsConflict(err) || err.Error() != want {
			t.Errorf("inProc=%v status update with another UID: got %v, want Conflict %q", inProc, err, want)
		}

		body := []byte(`{"metadata":{"uid":"` + other + `"},"status":{"message":"x"}}`)
		wantInvalid := `Pod "p1" is invalid: metadata.uid: Invalid value: "` + other + `": field is immutable`
		for _, sub := range []string{"", "status"} {
			_, err = pods.Patch(ctx, "p1", types.MergePatchType, body, metav1.PatchOptions{}, subresources(sub)...)
			if !apierrors.IsInvalid(err) || err.Error() != wantInvalid {
				t.Errorf("inProc=%v patch %q with another UID: got %v, want Invalid %q", inProc, sub, err, wantInvalid)
			}
		}

		same := p.DeepCopy()
		same.UID = ""
		same.Labels = map[string]string{"a": "b"}
		got, err := pods.Update(ctx, same, metav1.UpdateOptions{})
		if err != nil || got.UID != p.UID {
			t.Errorf("inProc=%v update without a UID: %v, UID %q want %q", inProc, err, got.GetUID(), p.UID)
		}
	}
}

// subresources is the client's variadic subresource argument for sub.
func subresources(sub string) []string {
	if sub == "" {
		return nil
	}
	return []string{sub}
}
