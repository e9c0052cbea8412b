// Package tokenrequest serves the TokenRequest API (POST
// serviceaccounts/NAME/token), as kube-apiserver's TokenREST does: it
// defaults and validates the request, binds the token to a pod (and that
// pod's node) when asked, and answers with a token the service-account
// issuer signs. Nothing is stored; accounts, pods and nodes are only read,
// through Objects.
package tokenrequest

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/batchlet/batchlet/apiserver/authn"
	"github.com/batchlet/batchlet/apiserver/endpoints"
	"github.com/batchlet/batchlet/apiserver/satoken"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

// TokenRequest limits, as upstream has them.
const (
	defaultTokenExpirationSeconds = 3600
	minTokenExpirationSeconds     = 600
	maxTokenExpirationSeconds     = 1 << 32
)

// Objects reads the service accounts, pods and nodes a token names. What
// it returns may be shared with other readers: the handler only reads it.
type Objects interface {
	ServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error)
	Pod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
	Node(ctx context.Context, name string) (*corev1.Node, error)
}

// Handler serves serviceaccounts/NAME/token.
type Handler struct {
	// Issuer signs the tokens; nil serves no TokenRequest (404).
	Issuer  *satoken.Issuer
	Objects Objects
	Codec   *endpoints.Codec
	// Clock stamps the answer's creationTimestamp.
	Clock clock.PassiveClock
}

// Create answers POST serviceaccounts/<name>/token with a TokenRequest
// whose status carries a signed token.
func (h *Handler) Create(w http.ResponseWriter, r *http.Request, info endpoints.RequestInfo) {
	if h.Issuer == nil {
		endpoints.WriteError(w, endpoints.ErrNotFoundPath())
		return
	}
	req := &authenticationv1.TokenRequest{}
	data, err := h.Codec.ReadBody(r)
	if err == nil {
		err = h.Codec.DecodeLoose(r, data, req)
	}
	if err == nil {
		err = h.Issue(r.Context(), info.Namespace, info.Name, req)
	}
	if err != nil {
		endpoints.WriteError(w, err)
		return
	}
	h.Codec.WriteObject(w, r, nil, http.StatusCreated, req)
}

// Issue answers the TokenRequest req for the service account
// namespace/name in place, as Create does for a decoded request body: the
// typed entry of in-process callers (the embedded node agent asks one
// token per pod).
func (h *Handler) Issue(ctx context.Context, namespace, name string, req *authenticationv1.TokenRequest) error {
	if h.Issuer == nil {
		return endpoints.ErrNotFoundPath()
	}
	if err := h.issue(ctx, namespace, name, req); err != nil {
		return err
	}
	req.SetGroupVersionKind(authenticationv1.SchemeGroupVersion.WithKind("TokenRequest"))
	return nil
}

// issue defaults and validates req, resolves its bound object and fills
// in its status.
func (h *Handler) issue(ctx context.Context, namespace, name string, req *authenticationv1.TokenRequest) error {
	if req.Spec.ExpirationSeconds == nil {
		req.Spec.ExpirationSeconds = ptr.To(int64(defaultTokenExpirationSeconds))
	}
	if len(req.Spec.Audiences) == 0 {
		req.Spec.Audiences = authn.APIAudiences(h.Issuer)
	}
	if errs := validate(req); len(errs) > 0 {
		return apierrors.NewInvalid(authenticationv1.SchemeGroupVersion.WithKind("TokenRequest").GroupKind(), name, errs)
	}
	sa, err := h.Objects.ServiceAccount(ctx, namespace, name)
	if err != nil {
		return err
	}
	tr := satoken.Request{Namespace: namespace, ServiceAccount: satoken.Ref{Name: sa.Name, UID: sa.UID},
		Audiences: req.Spec.Audiences, Expiration: time.Duration(*req.Spec.ExpirationSeconds) * time.Second}
	if ref := req.Spec.BoundObjectRef; ref != nil {
		if err := h.bind(ctx, namespace, sa, ref, &tr); err != nil {
			return err
		}
	}
	tok, err := h.Issuer.Issue(tr)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	req.Namespace, req.Name, req.CreationTimestamp = namespace, name, metav1.NewTime(h.Clock.Now())
	req.Status = authenticationv1.TokenRequestStatus{Token: tok.Raw, ExpirationTimestamp: metav1.NewTime(tok.Expiration)}
	return nil
}

func validate(req *authenticationv1.TokenRequest) field.ErrorList {
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

// bind binds the token to the pod ref names, as upstream's TokenRequest
// REST does (only pods are bindable here).
func (h *Handler) bind(ctx context.Context, namespace string, sa *corev1.ServiceAccount, ref *authenticationv1.BoundObjectReference, tr *satoken.Request) error {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	gvk := gv.WithKind(ref.Kind)
	if gvk != corev1.SchemeGroupVersion.WithKind("Pod") {
		return apierrors.NewBadRequest(fmt.Sprintf("cannot bind token to object of type %s", gvk.String()))
	}
	pod, err := h.Objects.Pod(ctx, namespace, ref.Name)
	if err != nil {
		return err
	}
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
		if node, err := h.Objects.Node(ctx, pod.Spec.NodeName); err == nil {
			tr.Node = &satoken.Ref{Name: pod.Spec.NodeName, UID: node.UID}
		}
	}
	return nil
}
