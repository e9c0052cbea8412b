package tokenrequest

import (
	"context"
	"testing"

	"github.com/batchlet/batchlet/apiserver/satoken"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// fakeObjects holds one pod and one node.
type fakeObjects struct {
	pod  *corev1.Pod
	node *corev1.Node
}

func (f fakeObjects) ServiceAccount(_ context.Context, _, name string) (*corev1.ServiceAccount, error) {
	return nil, apierrors.NewNotFound(corev1.Resource("serviceaccounts"), name)
}

func (f fakeObjects) Pod(_ context.Context, _, name string) (*corev1.Pod, error) {
	if f.pod == nil || f.pod.Name != name {
		return nil, apierrors.NewNotFound(corev1.Resource("pods"), name)
	}
	return f.pod, nil
}

func (f fakeObjects) Node(_ context.Context, name string) (*corev1.Node, error) {
	if f.node == nil || f.node.Name != name {
		return nil, apierrors.NewNotFound(corev1.Resource("nodes"), name)
	}
	return f.node, nil
}

func TestBind(t *testing.T) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "ns", UID: "sa-uid"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "pod-uid"},
		Spec: corev1.PodSpec{ServiceAccountName: "default", NodeName: "n1"}}
	other := pod.DeepCopy()
	other.Spec.ServiceAccountName = "builder"
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "node-uid"}}
	podRef := func(uid string) *authenticationv1.BoundObjectReference {
		return &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "p", UID: types.UID(uid)}
	}
	for _, tc := range []struct {
		name     string
		objects  fakeObjects
		ref      *authenticationv1.BoundObjectReference
		wantErr  string
		wantPod  *satoken.Ref
		wantNode *satoken.Ref
	}{
		{"pod and its node", fakeObjects{pod, node}, podRef(""), "",
			&satoken.Ref{Name: "p", UID: "pod-uid"}, &satoken.Ref{Name: "n1", UID: "node-uid"}},
		{"node gone: pod only", fakeObjects{pod, nil}, podRef("pod-uid"), "", &satoken.Ref{Name: "p", UID: "pod-uid"}, nil},
		{"not a pod", fakeObjects{pod, node}, &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Secret", Name: "s"},
			"cannot bind token to object of type /v1, Kind=Secret", nil, nil},
		{"pod recreated", fakeObjects{pod, node}, podRef("old-uid"),
			`Operation cannot be fulfilled on Pod "p": the UID in the bound object reference (old-uid) does not match the UID in record. The object might have been deleted and then recreated`, nil, nil},
		{"pod of another account", fakeObjects{other, node}, podRef(""),
			`cannot bind token for serviceaccount "default" to pod running with different serviceaccount name.`, nil, nil},
		{"missing pod", fakeObjects{nil, node}, podRef(""), `pods "p" not found`, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &Handler{Objects: tc.objects}
			var tr satoken.Request
			err := h.bind(context.Background(), "ns", sa, tc.ref, &tr)
			if got := errString(err); got != tc.wantErr {
				t.Fatalf("bind error %q, want %q", got, tc.wantErr)
			}
			if !refEqual(tr.Pod, tc.wantPod) || !refEqual(tr.Node, tc.wantNode) {
				t.Errorf("bound pod %v node %v, want %v %v", tr.Pod, tr.Node, tc.wantPod, tc.wantNode)
			}
			if err == nil && tc.ref.UID != "pod-uid" {
				t.Errorf("reference UID %q, want the pod's", tc.ref.UID)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		secs    int64
		wantErr string
	}{
		{600, ""},
		{599, `spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes`},
		{1<<32 + 1, `spec.expirationSeconds: Invalid value: 4294967297: may not specify a duration larger than 2^32 seconds`},
	} {
		req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(tc.secs)}}
		if got := validate(req).ToAggregate(); errString(got) != tc.wantErr {
			t.Errorf("validate(%d) = %v, want %q", tc.secs, got, tc.wantErr)
		}
	}
}

func refEqual(a, b *satoken.Ref) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
