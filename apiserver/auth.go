package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/batchlet/batchlet/apiserver/authn"
	"github.com/batchlet/batchlet/apiserver/authz"
	"github.com/batchlet/batchlet/apiserver/endpoints"
	"github.com/batchlet/batchlet/apiserver/genericstore"
	authenticationv1 "k8s.io/api/authentication/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/batchlet/batchlet/apiserver/rbac"
)

// newAuthenticator is the server's authenticator chain: the configured
// token map, bootstrap tokens, and service-account tokens when an issuer
// is configured.
func (s *Server) newAuthenticator() authn.Request {
	objects := storeReader{s}
	tokens := []authn.Token{authn.BootstrapTokens{Objects: objects, Clock: s.clock, Log: s.log}}
	if s.cfg.ServiceAccountIssuer != nil {
		tokens = append(tokens, authn.ServiceAccountTokens{Issuer: s.cfg.ServiceAccountIssuer, Objects: objects, Clock: s.clock, Log: s.log})
	}
	return authn.Request{Static: s.cfg.Authenticator, Tokens: tokens}
}

// authenticate returns the user of an in-process request, or the one the
// authenticator chain finds.
func (s *Server) authenticate(r *http.Request) (authenticationv1.UserInfo, bool) {
	if r.Context().Value(ctxInProcess) != nil {
		return authn.LoopbackUser(), true
	}
	return s.authn.Authenticate(r)
}

// authorizeResource asks the Authorizer about a resource request.
func (s *Server) authorizeResource(ctx context.Context, info endpoints.RequestInfo) error {
	return authz.Resource(ctx, s.authz, endpoints.UserOf(ctx), info)
}

// authorizeNonResource asks the Authorizer about a request for a path
// that is not a resource.
func (s *Server) authorizeNonResource(ctx context.Context, r *http.Request) error {
	return authz.NonResource(ctx, s.authz, endpoints.UserOf(ctx), r.URL.Path, strings.ToLower(r.Method))
}

// storeReader reads objects for the authenticators and authorizers from
// the store's shared decoded objects (they only read them).
type storeReader struct{ s *Server }

var (
	_ authn.Getter = storeReader{}
	_ authz.Reader = storeReader{}
)

func (r storeReader) Get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error) {
	obj, _, err := r.s.objects.GetShared(ctx, r.s.served.Get(gvr), namespace, name)
	return obj, err
}

func (r storeReader) List(ctx context.Context, gvr schema.GroupVersionResource, namespace string, fieldSelector fields.Selector) ([]runtime.Object, error) {
	res := r.s.served.Get(gvr)
	lr, err := r.s.objects.List(ctx, res, namespace, genericstore.NewFilter(res, labels.Everything(), fieldSelector), 0, "", "", "")
	if err != nil {
		return nil, err
	}
	return lr.Items, nil
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
