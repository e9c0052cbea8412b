package strategy

import (
	"testing"

	"github.com/batchlet/batchlet/apiserver/registry"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNamespaceOnCreateAndUpdate(t *testing.T) {
	const mismatch = "the namespace of the provided object does not match the namespace sent on the request"
	for _, tc := range []struct {
		name, objNS, reqNS string
		res                *registry.Resource
		wantNS             string
		wantCreate         string
		wantUpdate         string
	}{
		{"namespaced, none sent", "", "ns", registry.ConfigMaps(), "ns", "", ""},
		{"namespaced, same", "ns", "ns", registry.ConfigMaps(), "ns", "", ""},
		{"namespaced, another", "other", "ns", registry.ConfigMaps(), "other", mismatch, mismatch},
		{"cluster-scoped drops it", "ns", "", registry.Nodes(), "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &metav1.ObjectMeta{Namespace: tc.objNS}
			if got := errString(NamespaceOnUpdate(tc.res, m, tc.reqNS)); got != tc.wantUpdate {
				t.Errorf("NamespaceOnUpdate error %q, want %q", got, tc.wantUpdate)
			}
			if got := errString(NamespaceOnCreate(tc.res, m, tc.reqNS)); got != tc.wantCreate {
				t.Errorf("NamespaceOnCreate error %q, want %q", got, tc.wantCreate)
			}
			if m.Namespace != tc.wantNS {
				t.Errorf("namespace %q after create, want %q", m.Namespace, tc.wantNS)
			}
		})
	}
}

func TestSetRequester(t *testing.T) {
	user := authenticationv1.UserInfo{Username: "system:node:n1", UID: "u1", Groups: []string{"system:nodes"},
		Extra: map[string]authenticationv1.ExtraValue{"scopes": {"a"}}}
	csr := &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{
		Username: "admin", Groups: []string{"system:masters"}, Extra: map[string]certificatesv1.ExtraValue{"forged": {"x"}}}}
	SetRequester(csr, user)
	if csr.Spec.Username != "system:node:n1" || csr.Spec.UID != "u1" || len(csr.Spec.Groups) != 1 || csr.Spec.Groups[0] != "system:nodes" {
		t.Errorf("requester %q %q %v, want the caller's", csr.Spec.Username, csr.Spec.UID, csr.Spec.Groups)
	}
	if len(csr.Spec.Extra) != 1 || len(csr.Spec.Extra["scopes"]) != 1 {
		t.Errorf("extra %v, want only the caller's", csr.Spec.Extra)
	}
	pod := &corev1.Pod{}
	SetRequester(pod, user) // not a CSR: nothing to do
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
