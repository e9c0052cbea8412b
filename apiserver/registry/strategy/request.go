package strategy

import (
	"github.com/batchlet/batchlet/apiserver/registry"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// errNamespaceMismatch is upstream's answer to an object whose namespace
// is not the request's.
var errNamespaceMismatch = apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")

// NamespaceOnCreate puts a new object of res in the request's namespace,
// as rest.BeforeCreate does: a namespaced object without one gets it, one
// naming another is refused, a cluster-scoped object has none.
func NamespaceOnCreate(res *registry.Resource, m metav1.Object, namespace string) error {
	if !res.Namespaced {
		m.SetNamespace("")
		return nil
	}
	if m.GetNamespace() == "" {
		m.SetNamespace(namespace)
	}
	if m.GetNamespace() != namespace {
		return errNamespaceMismatch
	}
	return nil
}

// NamespaceOnUpdate refuses an update whose object names a namespace other
// than the request's, as rest.BeforeUpdate does; an object without one
// keeps the stored object's.
func NamespaceOnUpdate(res *registry.Resource, m metav1.Object, namespace string) error {
	if res.Namespaced && m.GetNamespace() != "" && m.GetNamespace() != namespace {
		return errNamespaceMismatch
	}
	return nil
}

// SetRequester records who asks for a certificate in a new
// CertificateSigningRequest's spec, as kube-apiserver's CSR strategy does
// on create: signers and approvers trust these fields, never what the
// client sent. Other objects are left alone.
func SetRequester(obj runtime.Object, u authenticationv1.UserInfo) {
	csr, ok := obj.(*certificatesv1.CertificateSigningRequest)
	if !ok {
		return
	}
	csr.Spec.Username, csr.Spec.UID, csr.Spec.Groups = u.Username, u.UID, u.Groups
	csr.Spec.Extra = nil
	for k, v := range u.Extra {
		if csr.Spec.Extra == nil {
			csr.Spec.Extra = map[string]certificatesv1.ExtraValue{}
		}
		csr.Spec.Extra[k] = certificatesv1.ExtraValue(v)
	}
}
