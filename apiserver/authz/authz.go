package authz

import (
	"context"
	"fmt"

	"github.com/batchlet/batchlet/apiserver/endpoints"
	"github.com/batchlet/batchlet/apiserver/rbac"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Reader reads the objects decisions need. What it returns is only read,
// so it may be shared with other readers; a missing object is an
// apierrors NotFound.
type Reader interface {
	Get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error)
	// List lists the objects of namespace ("" for all) the field selector
	// matches.
	List(ctx context.Context, gvr schema.GroupVersionResource, namespace string, fieldSelector fields.Selector) ([]runtime.Object, error)
}

// New is the server's Authorizer: with useRBAC, the Node authorizer in
// front of RBAC over the objects objects reads; otherwise configured, or
// AllowAll when that is nil.
func New(useRBAC bool, configured endpoints.Authorizer, objects Reader) endpoints.Authorizer {
	if useRBAC {
		return Node{Next: rbac.New(rbacSource{objects}), Graph: readerGraph{objects}}
	}
	if configured == nil {
		return endpoints.AllowAll{}
	}
	return configured
}

// Resource asks a about a resource request of user and answers
// kube-apiserver's Forbidden error when it is denied.
func Resource(ctx context.Context, a endpoints.Authorizer, user authenticationv1.UserInfo, info endpoints.RequestInfo) error {
	attrs := endpoints.ResourceAttributes(user, info)
	allowed, reason, err := a.Authorize(ctx, attrs)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("authorizing request: %w", err))
	}
	if allowed {
		return nil
	}
	return endpoints.Forbidden(attrs, reason)
}

// NonResource asks a about a request of user for a path that is not a
// resource (discovery, /openapi, /metrics) and answers kube-apiserver's
// Forbidden error when it is denied.
func NonResource(ctx context.Context, a endpoints.Authorizer, user authenticationv1.UserInfo, path, verb string) error {
	attrs := authorizationv1.SubjectAccessReviewSpec{
		User: user.Username, Groups: user.Groups, UID: user.UID, Extra: endpoints.Extra(user),
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
	}
	allowed, reason, err := a.Authorize(ctx, attrs)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("authorizing request: %w", err))
	}
	if allowed {
		return nil
	}
	msg := fmt.Sprintf("User %q cannot %s path %q", user.Username, verb, path)
	if reason != "" {
		msg += ": " + reason
	}
	return apierrors.NewForbidden(schema.GroupResource{}, "", fmt.Errorf("%s", msg))
}
