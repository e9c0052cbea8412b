// Package reviews answers the create-only review resources, as
// kube-apiserver's authentication and authorization REST does:
// SelfSubjectReview (who am I), SelfSubjectAccessReview (may I, decided by
// the same Authorizer every request goes through) and
// SelfSubjectRulesReview (what may I do in a namespace). The request
// object comes back with its status; nothing is stored.
package reviews

import (
	"context"
	"fmt"
	"net/http"

	"github.com/batchlet/batchlet/apiserver/endpoints"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"
)

// Handler serves the creates of review resources.
type Handler struct {
	Authorizer endpoints.Authorizer
	Codec      *endpoints.Codec
	// UserOf is the authenticated user of a request's context.
	UserOf func(context.Context) authenticationv1.UserInfo
	// Clock stamps a SelfSubjectReview's creationTimestamp.
	Clock clock.PassiveClock
}

// Create answers the create of a review resource: the request object
// comes back with its status computed from the caller's identity and the
// Authorizer.
func (h *Handler) Create(w http.ResponseWriter, r *http.Request, info endpoints.RequestInfo) {
	res := info.Res
	if info.Verb != "create" || info.Name != "" {
		endpoints.WriteError(w, endpoints.ErrMethodNotSupported(info.Resource, info.Verb))
		return
	}
	obj := res.New()
	if err := h.Codec.DecodeBody(w, r, res.GVK(), obj); err != nil {
		endpoints.WriteError(w, err)
		return
	}
	out, err := h.review(r.Context(), obj)
	if err != nil {
		endpoints.WriteError(w, err)
		return
	}
	out.GetObjectKind().SetGroupVersionKind(res.GVK())
	h.Codec.WriteObject(w, r, nil, http.StatusCreated, out)
}

// review fills in the status of one review object.
func (h *Handler) review(ctx context.Context, obj runtime.Object) (runtime.Object, error) {
	user := h.UserOf(ctx)
	switch o := obj.(type) {
	case *authenticationv1.SelfSubjectReview:
		return &authenticationv1.SelfSubjectReview{
			ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(h.Clock.Now())},
			Status:     authenticationv1.SelfSubjectReviewStatus{UserInfo: user},
		}, nil
	case *authorizationv1.SelfSubjectAccessReview:
		return h.selfAccessReview(ctx, user, o)
	case *authorizationv1.SelfSubjectRulesReview:
		o.Status = h.Authorizer.RulesFor(ctx, user, o.Spec.Namespace)
		return o, nil
	}
	return nil, apierrors.NewInternalError(fmt.Errorf("no review for %T", obj))
}

// selfAccessReview decides a SelfSubjectAccessReview with the same
// Authorizer every request goes through.
func (h *Handler) selfAccessReview(ctx context.Context, user authenticationv1.UserInfo, o *authorizationv1.SelfSubjectAccessReview) (runtime.Object, error) {
	ra, nra := o.Spec.ResourceAttributes, o.Spec.NonResourceAttributes
	if (ra == nil) == (nra == nil) {
		errs := field.ErrorList{field.Invalid(field.NewPath("spec", "resourceAttributes"), ra,
			"exactly one of nonResourceAttributes or resourceAttributes must be specified")}
		return nil, apierrors.NewInvalid(o.GroupVersionKind().GroupKind(), o.Name, errs)
	}
	attrs := authorizationv1.SubjectAccessReviewSpec{
		User: user.Username, Groups: user.Groups, UID: user.UID, Extra: endpoints.Extra(user),
		ResourceAttributes: ra, NonResourceAttributes: nra,
	}
	allowed, reason, err := h.Authorizer.Authorize(ctx, attrs)
	if err != nil {
		o.Status = authorizationv1.SubjectAccessReviewStatus{EvaluationError: err.Error()}
		return o, nil
	}
	// Denied is for an authorizer's explicit deny, which RBAC and the Node
	// authorizer never give: they only fail to allow.
	o.Status = authorizationv1.SubjectAccessReviewStatus{Allowed: allowed, Reason: reason}
	return o, nil
}
