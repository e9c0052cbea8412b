package endpoints

import (
	"context"
	"fmt"

	"github.com/batchlet/batchlet/apiserver/rbac"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group names kube-apiserver gives users.
const (
	// GroupMasters is the group kube-apiserver's authorizer always allows:
	// every request of its members is permitted.
	GroupMasters = rbac.GroupMasters
	// GroupAuthenticated is added to every authenticated user.
	GroupAuthenticated = "system:authenticated"
)

// Authenticator maps a bearer token to the user it identifies.
type Authenticator interface {
	AuthenticateToken(token string) (user authenticationv1.UserInfo, ok bool)
}

// TokenMap is an Authenticator over a fixed token → user table.
type TokenMap map[string]authenticationv1.UserInfo

// AuthenticateToken implements Authenticator.
func (m TokenMap) AuthenticateToken(token string) (authenticationv1.UserInfo, bool) {
	u, ok := m[token]
	return u, ok
}

// AdminUser is the identity of the admin token batchlet writes into its
// kubeconfig: the name kubeadm and kind give the cluster admin, in
// system:masters, which is what "every request is allowed" means upstream.
func AdminUser() authenticationv1.UserInfo {
	return authenticationv1.UserInfo{Username: "kubernetes-admin", Groups: []string{GroupMasters, GroupAuthenticated}}
}

// Authorizer decides whether a user may do what a request asks. It answers
// both the API's own requests and SelfSubjectAccessReview and
// SelfSubjectRulesReview, so replacing it changes both at once.
type Authorizer interface {
	// Authorize decides one request described as a SubjectAccessReview spec.
	Authorize(ctx context.Context, attrs authorizationv1.SubjectAccessReviewSpec) (allowed bool, reason string, err error)
	// RulesFor lists what user may do in namespace.
	RulesFor(ctx context.Context, user authenticationv1.UserInfo, namespace string) authorizationv1.SubjectRulesReviewStatus
}

// AllowAll allows every authenticated request: the Authorizer of a server
// configured with neither RBAC nor an Authorizer (tests, embeddings).
type AllowAll struct{}

// Authorize implements Authorizer.
func (AllowAll) Authorize(context.Context, authorizationv1.SubjectAccessReviewSpec) (bool, string, error) {
	return true, "", nil
}

// RulesFor implements Authorizer: everything, on every resource and URL.
func (AllowAll) RulesFor(context.Context, authenticationv1.UserInfo, string) authorizationv1.SubjectRulesReviewStatus {
	all := []string{"*"}
	return authorizationv1.SubjectRulesReviewStatus{
		ResourceRules:    []authorizationv1.ResourceRule{{Verbs: all, APIGroups: all, Resources: all}},
		NonResourceRules: []authorizationv1.NonResourceRule{{Verbs: all, NonResourceURLs: all}},
	}
}

// ResourceAttributes describes a resource request as a SubjectAccessReview spec.
func ResourceAttributes(user authenticationv1.UserInfo, info RequestInfo) authorizationv1.SubjectAccessReviewSpec {
	return authorizationv1.SubjectAccessReviewSpec{
		User: user.Username, Groups: user.Groups, UID: user.UID, Extra: Extra(user),
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: info.Namespace, Verb: info.Verb, Group: info.Group, Version: info.Version,
			Resource: info.Resource, Subresource: info.Subresource, Name: info.Name,
		},
	}
}

// Extra is a user's extra attributes in a SubjectAccessReview's form.
func Extra(user authenticationv1.UserInfo) map[string]authorizationv1.ExtraValue {
	if len(user.Extra) == 0 {
		return nil
	}
	out := make(map[string]authorizationv1.ExtraValue, len(user.Extra))
	for k, v := range user.Extra {
		out[k] = authorizationv1.ExtraValue(v)
	}
	return out
}

// Forbidden is kube-apiserver's message for a denied resource request:
// `jobs.batch "x" is forbidden: User "u" cannot get resource "jobs" in API
// group "batch" in the namespace "ns"`.
func Forbidden(attrs authorizationv1.SubjectAccessReviewSpec, reason string) error {
	ra := attrs.ResourceAttributes
	what := ra.Resource
	if ra.Subresource != "" {
		what += "/" + ra.Subresource
	}
	msg := fmt.Sprintf("User %q cannot %s resource %q in API group %q", attrs.User, ra.Verb, what, ra.Group)
	if ra.Namespace != "" {
		msg += fmt.Sprintf(" in the namespace %q", ra.Namespace)
	} else {
		msg += " at the cluster scope"
	}
	if reason != "" {
		msg += ": " + reason
	}
	return apierrors.NewForbidden(schema.GroupResource{Group: ra.Group, Resource: ra.Resource}, ra.Name, fmt.Errorf("%s", msg))
}

// requestKey keys the values the handler chain puts in a request's context.
type requestKey int

const (
	userKey requestKey = iota
	fieldManagerKey
)

// WithUser is ctx carrying the request's authenticated user.
func WithUser(ctx context.Context, user authenticationv1.UserInfo) context.Context {
	return context.WithValue(ctx, userKey, user)
}

// UserOf is the authenticated user of a request's context.
func UserOf(ctx context.Context) authenticationv1.UserInfo {
	u, _ := ctx.Value(userKey).(authenticationv1.UserInfo)
	return u
}

// WithFieldManager is ctx carrying the fieldManager a write records in
// managedFields ("": none, as for an apply, which records itself).
func WithFieldManager(ctx context.Context, manager string) context.Context {
	return context.WithValue(ctx, fieldManagerKey, manager)
}

// FieldManagerOf is the fieldManager of a request's context ("": none).
func FieldManagerOf(ctx context.Context) string {
	m, _ := ctx.Value(fieldManagerKey).(string)
	return m
}
