package handlers

import (
	"net/http"

	"github.com/batchlet/batchlet/apiserver/endpoints"
	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"

	"github.com/batchlet/batchlet/apiserver/genericstore"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Create answers POST of a new object.
func (h *Handlers) Create(w http.ResponseWriter, r *http.Request, info endpoints.RequestInfo) {
	res := info.Res
	obj := res.New()
	if err := h.Codec.DecodeBody(w, r, res.GVK(), obj); err != nil {
		endpoints.WriteError(w, err)
		return
	}
	m := genericstore.Accessor(obj)
	if res.Namespaced {
		if m.GetNamespace() == "" {
			m.SetNamespace(info.Namespace)
		}
		if m.GetNamespace() != info.Namespace {
			endpoints.WriteError(w, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request"))
			return
		}
	} else {
		m.SetNamespace("")
	}
	if csr, ok := obj.(*certificatesv1.CertificateSigningRequest); ok {
		stampRequester(csr, endpoints.UserOf(r.Context()))
	}
	out, err := h.Writer.Create(r.Context(), res, obj, isDryRun(r))
	if err != nil {
		endpoints.WriteError(w, err)
		return
	}
	h.Codec.WriteObject(w, r, res, http.StatusCreated, out)
}

// stampRequester records who asks for a certificate in the request's spec,
// as kube-apiserver's CSR strategy does on create: signers and approvers
// trust these fields, never what the client sent.
func stampRequester(csr *certificatesv1.CertificateSigningRequest, u authenticationv1.UserInfo) {
	csr.Spec.Username, csr.Spec.UID, csr.Spec.Groups = u.Username, u.UID, u.Groups
	csr.Spec.Extra = nil
	for k, v := range u.Extra {
		if csr.Spec.Extra == nil {
			csr.Spec.Extra = map[string]certificatesv1.ExtraValue{}
		}
		csr.Spec.Extra[k] = certificatesv1.ExtraValue(v)
	}
}
