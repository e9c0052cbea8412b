package authn

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/batchlet/batchlet/apiserver/endpoints"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
	bootstrapsecrets "k8s.io/cluster-bootstrap/util/secrets"
	"k8s.io/utils/clock"
)

var secretsGVR = corev1.SchemeGroupVersion.WithResource("secrets")

// BootstrapTokens checks tokens of the form ID.SECRET against the
// bootstrap-token-ID Secret in kube-system, as kube-apiserver's
// --enable-bootstrap-token-auth does.
type BootstrapTokens struct {
	Objects Getter
	Clock   clock.PassiveClock
	Log     *slog.Logger
}

// AuthenticateToken implements Token.
func (b BootstrapTokens) AuthenticateToken(ctx context.Context, token string) (authenticationv1.UserInfo, bool) {
	if !bootstraputil.IsValidBootstrapToken(token) {
		return authenticationv1.UserInfo{}, false
	}
	id := token[:bootstrapapi.BootstrapTokenIDBytes]
	obj, err := b.Objects.Get(ctx, secretsGVR, metav1.NamespaceSystem, bootstraputil.BootstrapTokenSecretName(id))
	if err != nil {
		b.Log.Debug("bootstrap token rejected", "id", id, "err", err.Error())
		return authenticationv1.UserInfo{}, false
	}
	u, err := BootstrapTokenUser(obj.(*corev1.Secret), token, b.Clock.Now())
	if err != nil {
		b.Log.Debug("bootstrap token rejected", "id", id, "err", err.Error())
		return authenticationv1.UserInfo{}, false
	}
	return u, true
}

// BootstrapTokenUser is the user a bootstrap token Secret gives token:
// system:bootstrap:<id> in system:bootstrappers and the Secret's
// auth-extra-groups, provided the Secret is of the bootstrap type, allows
// authentication, has not expired and holds token's secret.
func BootstrapTokenUser(secret *corev1.Secret, token string, now time.Time) (authenticationv1.UserInfo, error) {
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
