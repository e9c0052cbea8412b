package authn

import (
	"context"
	"crypto/tls"
	"net/http"
	"strings"

	"github.com/batchlet/batchlet/apiserver/endpoints"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
)

// Who nodes, joining nodes and service accounts are, as kube-apiserver
// names them.
const (
	// GroupNodes is the group of every node's client certificate.
	GroupNodes = "system:nodes"
	// NodeUserPrefix begins a node's user name: system:node:<node>.
	NodeUserPrefix = "system:node:"
	// GroupBootstrappers is the group of every bootstrap token.
	GroupBootstrappers = bootstrapapi.BootstrapDefaultGroup
	// GroupServiceAccounts is the group of every service account.
	GroupServiceAccounts = "system:serviceaccounts"
)

// Getter reads one object the authenticators need (a bootstrap token's
// Secret, a token's service account and pod). What it returns is only
// read, so it may be shared with other readers; a missing object is an
// apierrors NotFound.
type Getter interface {
	Get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error)
}

// Token authenticates a bearer token that may need the store.
type Token interface {
	AuthenticateToken(ctx context.Context, token string) (authenticationv1.UserInfo, bool)
}

// Request authenticates an HTTP request: a verified client certificate
// comes first, as kube-apiserver orders x509 before tokens; then the
// bearer token is tried against Static and each of Tokens in order.
type Request struct {
	// Static is the configured token map; nil knows no token.
	Static endpoints.Authenticator
	// Tokens are tried after Static; the first that knows the token wins.
	Tokens []Token
}

// Authenticate returns the user of r, if any authenticator knows it.
func (a Request) Authenticate(r *http.Request) (authenticationv1.UserInfo, bool) {
	if u, ok := X509User(r.TLS); ok {
		return u, true
	}
	token, ok := bearerToken(r)
	if !ok {
		return authenticationv1.UserInfo{}, false
	}
	if a.Static != nil {
		if u, ok := a.Static.AuthenticateToken(token); ok {
			return u, true
		}
	}
	for _, t := range a.Tokens {
		if u, ok := t.AuthenticateToken(r.Context(), token); ok {
			return u, true
		}
	}
	return authenticationv1.UserInfo{}, false
}

// bearerToken is the token of an "Authorization: Bearer <token>" header.
func bearerToken(r *http.Request) (string, bool) {
	auth := r.Header.Get("Authorization")
	const prefix = "Bearer "
	if len(auth) <= len(prefix) || !strings.EqualFold(auth[:len(prefix)], prefix) {
		return "", false
	}
	return strings.TrimSpace(auth[len(prefix):]), true
}

// LoopbackUser is who in-process requests are, as kube-apiserver's own
// loopback client is.
func LoopbackUser() authenticationv1.UserInfo {
	return authenticationv1.UserInfo{Username: "system:apiserver", Groups: []string{endpoints.GroupMasters, endpoints.GroupAuthenticated}}
}

// X509User is the user of a client certificate the TLS handshake verified
// against the server's client CA: the subject's common name is the user
// and its organizations are the groups, as kube-apiserver's x509
// authenticator maps them.
func X509User(state *tls.ConnectionState) (authenticationv1.UserInfo, bool) {
	if state == nil || len(state.VerifiedChains) == 0 || len(state.VerifiedChains[0]) == 0 {
		return authenticationv1.UserInfo{}, false
	}
	subject := state.VerifiedChains[0][0].Subject
	if subject.CommonName == "" {
		return authenticationv1.UserInfo{}, false
	}
	groups := append([]string{}, subject.Organization...)
	return authenticationv1.UserInfo{Username: subject.CommonName, Groups: append(groups, endpoints.GroupAuthenticated)}, true
}
