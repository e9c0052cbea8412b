package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/batchlet/batchlet/apiserver/endpoints"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/batchlet/batchlet/apiserver/rbac"
)

// loopbackUser is who in-process requests are, as kube-apiserver's own
// loopback client is.
func loopbackUser() authenticationv1.UserInfo {
	return authenticationv1.UserInfo{Username: "system:apiserver", Groups: []string{endpoints.GroupMasters, endpoints.GroupAuthenticated}}
}

// authenticate returns the user of an in-process request, of a client
// certificate signed by the server's CA, or of a valid bearer token (the
// Authenticator's, a bootstrap token, a service-account token).
func (s *Server) authenticate(r *http.Request) (authenticationv1.UserInfo, bool) {
	if r.Context().Value(ctxInProcess) != nil {
		return loopbackUser(), true
	}
	// A client certificate comes first, as kube-apiserver's union of
	// authenticators orders x509 before tokens.
	if u, ok := x509User(r.TLS); ok {
		return u, true
	}
	auth := r.Header.Get("Authorization")
	const prefix = "Bearer "
	if len(auth) <= len(prefix) || !strings.EqualFold(auth[:len(prefix)], prefix) {
		return authenticationv1.UserInfo{}, false
	}
	token := strings.TrimSpace(auth[len(prefix):])
	if s.cfg.Authenticator != nil {
		if u, ok := s.cfg.Authenticator.AuthenticateToken(token); ok {
			return u, true
		}
	}
	if u, ok := s.authenticateBootstrapToken(r.Context(), token); ok {
		return u, true
	}
	return s.authenticateServiceAccount(r.Context(), token)
}

// userOf is the authenticated user of a request.
func userOf(ctx context.Context) authenticationv1.UserInfo {
	u, _ := ctx.Value(ctxUser).(authenticationv1.UserInfo)
	return u
}

// authorizeResource asks the Authorizer about a resource request and
// answers kube-apiserver's Forbidden error when it is denied.
func (s *Server) authorizeResource(ctx context.Context, info endpoints.RequestInfo) error {
	attrs := endpoints.ResourceAttributes(userOf(ctx), info)
	allowed, reason, err := s.authorizer().Authorize(ctx, attrs)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("authorizing request: %w", err))
	}
	if allowed {
		return nil
	}
	return endpoints.Forbidden(attrs, reason)
}

func (s *Server) authorizer() endpoints.Authorizer {
	if s.cfg.RBAC {
		return nodeAuthorizer{next: rbac.New(rbacSource{s}), graph: storeGraph{s}}
	}
	if s.cfg.Authorizer == nil {
		return endpoints.AllowAll{}
	}
	return s.cfg.Authorizer
}
