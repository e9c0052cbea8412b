package apiserver

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
)

// handleReview answers the create of a review resource: the request object
// comes back with its status computed from the caller's identity and the
// Authorizer; nothing is stored.
func (s *Server) handleReview(w http.ResponseWriter, r *http.Request, info endpoints.RequestInfo) {
	res := info.Res
	if info.Verb != "create" || info.Name != "" {
		endpoints.WriteError(w, endpoints.ErrMethodNotSupported(info.Resource, info.Verb))
		return
	}
	obj := res.New()
	if err := s.codec.DecodeBody(w, r, res.GVK(), obj); err != nil {
		endpoints.WriteError(w, err)
		return
	}
	out, err := s.review(r.Context(), obj)
	if err != nil {
		endpoints.WriteError(w, err)
		return
	}
	out.GetObjectKind().SetGroupVersionKind(res.GVK())
	s.codec.WriteObject(w, r, nil, http.StatusCreated, out)
}

// review fills in the status of one review object.
func (s *Server) review(ctx context.Context, obj runtime.Object) (runtime.Object, error) {
	user := userOf(ctx)
	switch o := obj.(type) {
	case *authenticationv1.SelfSubjectReview:
		return &authenticationv1.SelfSubjectReview{
			ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(s.clock.Now())},
			Status:     authenticationv1.SelfSubjectReviewStatus{UserInfo: user},
		}, nil
	case *authorizationv1.SelfSubjectAccessReview:
		return s.selfAccessReview(ctx, user, o)
	case *authorizationv1.SelfSubjectRulesReview:
		o.Status = s.authz.RulesFor(ctx, user, o.Spec.Namespace)
		return o, nil
	}
	return nil, apierrors.NewInternalError(fmt.Errorf("no review for %T", obj))
}

// selfAccessReview decides a SelfSubjectAccessReview with the same
// Authorizer every request goes through.
func (s *Server) selfAccessReview(ctx context.Context, user authenticationv1.UserInfo, o *authorizationv1.SelfSubjectAccessReview) (runtime.Object, error) {
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
	allowed, reason, err := s.authz.Authorize(ctx, attrs)
	if err != nil {
		o.Status = authorizationv1.SubjectAccessReviewStatus{EvaluationError: err.Error()}
		return o, nil
	}
	// Denied is for an authorizer's explicit deny, which RBAC and the Node
	// authorizer never give: they only fail to allow.
	o.Status = authorizationv1.SubjectAccessReviewStatus{Allowed: allowed, Reason: reason}
	return o, nil
}
