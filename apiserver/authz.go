package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/batchlet/batchlet/apiserver/endpoints"

	"github.com/batchlet/batchlet/apiserver/genericstore"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/batchlet/batchlet/apiserver/rbac"
)

// rbacSource reads RBAC objects straight from the store for the RBAC
// authorizer.
type rbacSource struct{ s *Server }

func (r rbacSource) list(ctx context.Context, resource, namespace string) ([]runtime.Object, error) {
	res := r.s.resource(rbacv1.GroupName, "v1", resource)
	everything := genericstore.Everything(res)
	lr, err := r.s.objects.List(ctx, res, namespace, everything, 0, "", "", "")
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", resource, err)
	}
	return lr.Items, nil
}

func (r rbacSource) ClusterRoleBindings(ctx context.Context) ([]*rbacv1.ClusterRoleBinding, error) {
	items, err := r.list(ctx, "clusterrolebindings", "")
	out := make([]*rbacv1.ClusterRoleBinding, 0, len(items))
	for _, o := range items {
		out = append(out, o.(*rbacv1.ClusterRoleBinding))
	}
	return out, err
}

func (r rbacSource) RoleBindings(ctx context.Context, namespace string) ([]*rbacv1.RoleBinding, error) {
	items, err := r.list(ctx, "rolebindings", namespace)
	out := make([]*rbacv1.RoleBinding, 0, len(items))
	for _, o := range items {
		out = append(out, o.(*rbacv1.RoleBinding))
	}
	return out, err
}

func (r rbacSource) ClusterRole(ctx context.Context, name string) (*rbacv1.ClusterRole, error) {
	obj, err := r.get(ctx, "clusterroles", "clusterrole", "", name)
	if err != nil {
		return nil, err
	}
	return obj.(*rbacv1.ClusterRole), nil
}

func (r rbacSource) Role(ctx context.Context, namespace, name string) (*rbacv1.Role, error) {
	obj, err := r.get(ctx, "roles", "role", namespace, name)
	if err != nil {
		return nil, err
	}
	return obj.(*rbacv1.Role), nil
}

// get reads one role; a missing one is the lister's NotFound upstream's
// authorizer reports (`clusterrole.rbac.authorization.k8s.io "x" not
// found`).
func (r rbacSource) get(ctx context.Context, resource, singular, namespace, name string) (runtime.Object, error) {
	obj, _, err := r.s.objects.GetShared(ctx, r.s.resource(rbacv1.GroupName, "v1", resource), namespace, name)
	if apierrors.IsNotFound(err) {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: rbacv1.GroupName, Resource: singular}, name)
	}
	return obj, err
}

// bootstrapRBAC creates the bootstrap ClusterRoles and ClusterRoleBindings
// that are missing, as kube-apiserver's RBAC post-start hook does; ones an
// admin changed are left alone.
func (s *Server) bootstrapRBAC(ctx context.Context) error {
	if !s.cfg.RBAC {
		return nil
	}
	crRes := s.resource(rbacv1.GroupName, "v1", "clusterroles")
	for _, r := range rbac.BootstrapClusterRoles() {
		if _, err := s.createObject(ctx, crRes, r, false); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("apiserver: create clusterrole %s: %w", r.Name, err)
		}
	}
	crbRes := s.resource(rbacv1.GroupName, "v1", "clusterrolebindings")
	for _, b := range rbac.BootstrapClusterRoleBindings() {
		if _, err := s.createObject(ctx, crbRes, b, false); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("apiserver: create clusterrolebinding %s: %w", b.Name, err)
		}
	}
	return nil
}

// authorizeNonResource asks the Authorizer about a request for a path that
// is not a resource (discovery, /openapi, /metrics) and answers
// kube-apiserver's Forbidden error when it is denied.
func (s *Server) authorizeNonResource(ctx context.Context, r *http.Request) error {
	user := userOf(ctx)
	attrs := authorizationv1.SubjectAccessReviewSpec{
		User: user.Username, Groups: user.Groups, UID: user.UID, Extra: endpoints.Extra(user),
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: r.URL.Path, Verb: strings.ToLower(r.Method)},
	}
	allowed, reason, err := s.authorizer().Authorize(ctx, attrs)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("authorizing request: %w", err))
	}
	if allowed {
		return nil
	}
	msg := fmt.Sprintf("User %q cannot %s path %q", user.Username, attrs.NonResourceAttributes.Verb, r.URL.Path)
	if reason != "" {
		msg += ": " + reason
	}
	return apierrors.NewForbidden(schema.GroupResource{}, "", fmt.Errorf("%s", msg))
}

// isDiscoveryPath reports whether path is one serveDiscovery may answer.
func isDiscoveryPath(path string) bool {
	path = strings.TrimSuffix(path, "/")
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	switch {
	case path == "/api" || path == "/api/v1" || path == "/apis":
		return true
	case parts[0] == "apis" && (len(parts) == 2 || len(parts) == 3):
		return true
	}
	return false
}
