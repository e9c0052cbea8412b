package apiserver

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"github.com/batchlet/batchlet/apiserver/endpoints"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
	bootstrapsecrets "k8s.io/cluster-bootstrap/util/secrets"
)

// Who nodes and joining nodes are, as kube-apiserver names them.
const (
	// GroupNodes is the group of every node's client certificate.
	GroupNodes = "system:nodes"
	// NodeUserPrefix begins a node's user name: system:node:<node>.
	NodeUserPrefix = "system:node:"
	// GroupBootstrappers is the group of every bootstrap token.
	GroupBootstrappers = bootstrapapi.BootstrapDefaultGroup
)

// x509User is the user of a client certificate the TLS handshake verified
// against the server's client CA: the subject's common name is the user
// and its organizations are the groups, as kube-apiserver's x509
// authenticator maps them.
func x509User(state *tls.ConnectionState) (authenticationv1.UserInfo, bool) {
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

// authenticateBootstrapToken checks a token of the form ID.SECRET against
// the bootstrap-token-ID Secret in kube-system, as kube-apiserver's
// --enable-bootstrap-token-auth does.
func (s *Server) authenticateBootstrapToken(ctx context.Context, token string) (authenticationv1.UserInfo, bool) {
	if !bootstraputil.IsValidBootstrapToken(token) {
		return authenticationv1.UserInfo{}, false
	}
	id := token[:bootstrapapi.BootstrapTokenIDBytes]
	obj, _, err := s.objects.Get(ctx, s.resource("", "v1", "secrets"), metav1.NamespaceSystem,
		bootstraputil.BootstrapTokenSecretName(id))
	if err != nil {
		s.log.Debug("bootstrap token rejected", "id", id, "err", err.Error())
		return authenticationv1.UserInfo{}, false
	}
	u, err := bootstrapTokenUser(obj.(*corev1.Secret), token, s.clock.Now())
	if err != nil {
		s.log.Debug("bootstrap token rejected", "id", id, "err", err.Error())
		return authenticationv1.UserInfo{}, false
	}
	return u, true
}

// bootstrapTokenUser is the user a bootstrap token Secret gives token:
// system:bootstrap:<id> in system:bootstrappers and the Secret's
// auth-extra-groups, provided the Secret is of the bootstrap type, allows
// authentication, has not expired and holds token's secret.
func bootstrapTokenUser(secret *corev1.Secret, token string, now time.Time) (authenticationv1.UserInfo, error) {
	id, tokenSecret := token[:bootstrapapi.BootstrapTokenIDBytes], token[bootstrapapi.BootstrapTokenIDBytes+1:]
	switch {
	case secret.Type != bootstrapapi.SecretTypeBootstrapToken:
		return authenticationv1.UserInfo{}, fmt.Errorf("secret %s is of type %q", secret.Name, secret.Type)
	case secret.DeletionTimestamp != nil:
		return authenticationv1.UserInfo{}, errors.New("token is being deleted")
	case bootstrapsecrets.GetData(secret, bootstrapapi.BootstrapTokenIDKey) != id:
		return authenticationv1.UserInfo{}, errors.New("token id does not match its secret")
	case subtle.ConstantTimeCompare([]byte(bootstrapsecrets.GetData(secret, bootstrapapi.BootstrapTokenSecretKey)), []byte(tokenSecret)) != 1:
		return authenticationv1.UserInfo{}, errors.New("token secret does not match")
	case bootstrapsecrets.HasExpired(secret, now):
		return authenticationv1.UserInfo{}, errors.New("token has expired")
	case bootstrapsecrets.GetData(secret, bootstrapapi.BootstrapTokenUsageAuthentication) != "true":
		return authenticationv1.UserInfo{}, errors.New("token is not for authentication")
	}
	groups, err := bootstrapsecrets.GetGroups(secret)
	if err != nil {
		return authenticationv1.UserInfo{}, fmt.Errorf("token groups: %w", err)
	}
	return authenticationv1.UserInfo{
		Username: bootstrapapi.BootstrapUserPrefix + id,
		Groups:   append(groups, endpoints.GroupAuthenticated),
	}, nil
}

// stampRequester records who asks for a certificate in the request's spec,
// as kube-apiserver's CSR strategy does on create: signers and approvers
// trust these fields, never what the client sent.
func stampRequester(csr *certificatesv1.CertificateSigningRequest, u authenticationv1.UserInfo) {
	csr.Spec.Username, csr.Spec.UID, csr.Spec.Groups = u.Username, u.UID, u.Groups
	csr.Spec.Extra = nil
	for k, v := range u.Extra {
		if csr.Spec.Extra == nil {
			csr.Spec.Extra = map[string]certificatesv1.ExtraValue{}
		}
		csr.Spec.Extra[k] = certificatesv1.ExtraValue(v)
	}
}
