package authn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/batchlet/batchlet/apiserver/endpoints"
	"github.com/batchlet/batchlet/apiserver/satoken"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/clock"
)

// The extras a service-account user carries, as kube-apiserver names them.
const (
	extraPodName      = "authentication.kubernetes.io/pod-name"
	extraPodUID       = "authentication.kubernetes.io/pod-uid"
	extraNodeName     = "authentication.kubernetes.io/node-name"
	extraNodeUID      = "authentication.kubernetes.io/node-uid"
	extraCredentialID = "authentication.kubernetes.io/credential-id"
)

// deletedTokenGrace is how long a token bound to a deleted (but not yet
// removed) pod or service account keeps authenticating.
const deletedTokenGrace = time.Minute

// ServiceAccountTokens accepts service-account tokens Issuer signed whose
// service account, and pod when bound, still exist with the UIDs they
// name.
type ServiceAccountTokens struct {
	Issuer  *satoken.Issuer
	Objects Getter
	Clock   clock.PassiveClock
	Log     *slog.Logger
}

// APIAudiences are the audiences a token must have to authenticate
// against this API: the issuer, as kube-apiserver defaults --api-audiences.
func APIAudiences(issuer *satoken.Issuer) []string {
	return []string{issuer.Issuer()}
}

// AuthenticateToken implements Token.
func (a ServiceAccountTokens) AuthenticateToken(ctx context.Context, token string) (authenticationv1.UserInfo, bool) {
	if !satoken.LooksLikeJWT(token) {
		return authenticationv1.UserInfo{}, false
	}
	v, err := a.Issuer.Verify(token, APIAudiences(a.Issuer))
	if err == nil {
		err = a.checkBindings(ctx, v)
	}
	if err != nil {
		if !errors.Is(err, satoken.ErrNotServiceAccountToken) {
			a.Log.Debug("service-account token rejected", "err", err.Error())
		}
		return authenticationv1.UserInfo{}, false
	}
	return ServiceAccountUser(v), true
}

// ServiceAccountUser is the user a verified token names: the service
// account in its groups, with the bound pod, node and token ID as extras.
func ServiceAccountUser(v satoken.Verified) authenticationv1.UserInfo {
	u := authenticationv1.UserInfo{
		Username: satoken.Subject(v.Namespace, v.ServiceAccount.Name), UID: string(v.ServiceAccount.UID),
		Groups: []string{GroupServiceAccounts, GroupServiceAccounts + ":" + v.Namespace, endpoints.GroupAuthenticated},
		Extra:  map[string]authenticationv1.ExtraValue{},
	}
	if v.Pod != nil {
		u.Extra[extraPodName] = authenticationv1.ExtraValue{v.Pod.Name}
		u.Extra[extraPodUID] = authenticationv1.ExtraValue{string(v.Pod.UID)}
	}
	if v.Node != nil {
		u.Extra[extraNodeName] = authenticationv1.ExtraValue{v.Node.Name}
		u.Extra[extraNodeUID] = authenticationv1.ExtraValue{string(v.Node.UID)}
	}
	if v.ID != "" {
		u.Extra[extraCredentialID] = authenticationv1.ExtraValue{"JTI=" + v.ID}
	}
	return u
}

// checkBindings is upstream's bound-token check: the service account and
// the bound pod exist with the claimed UIDs and were not deleted more than
// a minute ago.
func (a ServiceAccountTokens) checkBindings(ctx context.Context, v satoken.Verified) error {
	if err := a.checkBound(ctx, "serviceaccounts", v.Namespace, *v.ServiceAccount); err != nil {
		return err
	}
	if v.Pod != nil {
		return a.checkBound(ctx, "pods", v.Namespace, *v.Pod)
	}
	return nil
}

func (a ServiceAccountTokens) checkBound(ctx context.Context, resource, namespace string, ref satoken.Ref) error {
	obj, err := a.Objects.Get(ctx, corev1.SchemeGroupVersion.WithResource(resource), namespace, ref.Name)
	if err != nil {
		return fmt.Errorf("%s %s/%s: %w", resource, namespace, ref.Name, err)
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return fmt.Errorf("%s %s/%s: %w", resource, namespace, ref.Name, err)
	}
	if m.GetUID() != ref.UID {
		return fmt.Errorf("%s %s/%s UID (%s) does not match claim (%s)", resource, namespace, ref.Name, m.GetUID(), ref.UID)
	}
	if dt := m.GetDeletionTimestamp(); dt != nil && dt.Add(deletedTokenGrace).Before(a.Clock.Now()) {
		return fmt.Errorf("%s %s/%s has been deleted", resource, namespace, ref.Name)
	}
	return nil
}
