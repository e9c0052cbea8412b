package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/batchlet/batchlet/apiserver/authn"
	"github.com/batchlet/batchlet/apiserver/endpoints"

	"github.com/batchlet/batchlet/apiserver/genericstore"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/batchlet/batchlet/apiserver/satoken"
)

// TokenRequest limits, as upstream has them.
const (
	defaultTokenExpirationSeconds = 3600
	minTokenExpirationSeconds     = 600
	maxTokenExpirationSeconds     = 1 << 32
)

// handleTokenRequest answers POST serviceaccounts/<name>/token with a
// TokenRequest whose status carries a signed token.
func (s *Server) handleTokenRequest(w http.ResponseWriter, r *http.Request, info endpoints.RequestInfo) {
	if s.cfg.ServiceAccountIssuer == nil {
		endpoints.WriteError(w, endpoints.ErrNotFoundPath())
		return
	}
	req := &authenticationv1.TokenRequest{}
	data, err := s.codec.ReadBody(r)
	if err == nil {
		err = s.codec.DecodeLoose(r, data, req)
	}
	if err == nil {
		err = s.issueTokenRequest(r.Context(), info.Namespace, info.Name, req)
	}
	if err != nil {
		endpoints.WriteError(w, err)
		return
	}
	req.SetGroupVersionKind(authenticationv1.SchemeGroupVersion.WithKind("TokenRequest"))
	s.codec.WriteObject(w, r, nil, http.StatusCreated, req)
}

// issueTokenRequest defaults and validates req, resolves its bound object
// and fills in its status. The service account, pod and node are only
// read, so the shared decoded copies serve (one token per pod).
func (s *Server) issueTokenRequest(ctx context.Context, namespace, name string, req *authenticationv1.TokenRequest) error {
	if req.Spec.ExpirationSeconds == nil {
		req.Spec.ExpirationSeconds = ptrTo(int64(defaultTokenExpirationSeconds))
	}
	if len(req.Spec.Audiences) == 0 {
		req.Spec.Audiences = authn.APIAudiences(s.cfg.ServiceAccountIssuer)
	}
	if errs := validateTokenRequest(req); len(errs) > 0 {
		return apierrors.NewInvalid(authenticationv1.SchemeGroupVersion.WithKind("TokenRequest").GroupKind(), name, errs)
	}
	saObj, _, err := s.objects.GetShared(ctx, s.resource("", "v1", "serviceaccounts"), namespace, name)
	if err != nil {
		return err
	}
	sa := saObj.(*corev1.ServiceAccount)
	tr := satoken.Request{Namespace: namespace, ServiceAccount: satoken.Ref{Name: sa.Name, UID: sa.UID},
		Audiences: req.Spec.Audiences, Expiration: time.Duration(*req.Spec.ExpirationSeconds) * time.Second}
	if ref := req.Spec.BoundObjectRef; ref != nil {
		if err := s.bindToken(ctx, namespace, sa, ref, &tr); err != nil {
			return err
		}
	}
	tok, err := s.cfg.ServiceAccountIssuer.Issue(tr)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	req.Namespace, req.Name, req.CreationTimestamp = namespace, name, metav1.NewTime(s.clock.Now())
	req.Status = authenticationv1.TokenRequestStatus{Token: tok.Raw, ExpirationTimestamp: metav1.NewTime(tok.Expiration)}
	return nil
}

func validateTokenRequest(req *authenticationv1.TokenRequest) field.ErrorList {
	var errs field.ErrorList
	exp := field.NewPath("spec", "expirationSeconds")
	switch secs := *req.Spec.ExpirationSeconds; {
	case secs < minTokenExpirationSeconds:
		errs = append(errs, field.Invalid(exp, secs, "may not specify a duration less than 10 minutes"))
	case secs > maxTokenExpirationSeconds:
		errs = append(errs, field.Invalid(exp, secs, "may not specify a duration larger than 2^32 seconds"))
	}
	return errs
}

// bindToken binds the token to the pod ref names, as upstream's
// TokenRequest REST does (only pods are bindable here).
func (s *Server) bindToken(ctx context.Context, namespace string, sa *corev1.ServiceAccount, ref *authenticationv1.BoundObjectReference, tr *satoken.Request) error {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	gvk := gv.WithKind(ref.Kind)
	if gvk != corev1.SchemeGroupVersion.WithKind("Pod") {
		return apierrors.NewBadRequest(fmt.Sprintf("cannot bind token to object of type %s", gvk.String()))
	}
	obj, _, err := s.objects.GetShared(ctx, s.resource("", "v1", "pods"), namespace, ref.Name)
	if err != nil {
		return err
	}
	pod := obj.(*corev1.Pod)
	if ref.UID != "" && ref.UID != pod.UID {
		return apierrors.NewConflict(schema.GroupResource{Resource: ref.Kind}, ref.Name,
			fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID))
	}
	if pod.Spec.ServiceAccountName != sa.Name {
		return apierrors.NewBadRequest(fmt.Sprintf("cannot bind token for serviceaccount %q to pod running with different serviceaccount name.", sa.Name))
	}
	ref.UID = pod.UID
	tr.Pod = &satoken.Ref{Name: pod.Name, UID: pod.UID}
	if pod.Spec.NodeName != "" {
		if node, _, err := s.objects.GetShared(ctx, s.resource("", "v1", "nodes"), "", pod.Spec.NodeName); err == nil {
			tr.Node = &satoken.Ref{Name: pod.Spec.NodeName, UID: genericstore.Accessor(node).GetUID()}
		}
	}
	return nil
}

func ptrTo[T any](v T) *T { return &v }
