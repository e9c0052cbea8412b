package authn

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/batchlet/batchlet/apiserver/endpoints"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
)

// Names impersonation gives users, as kube-apiserver names them.
const (
	// UserAnonymous is the user of unauthenticated requests.
	UserAnonymous = "system:anonymous"
	// GroupUnauthenticated is the group of unauthenticated requests.
	GroupUnauthenticated = "system:unauthenticated"
	serviceAccountPrefix = "system:serviceaccount:"
)

// Kinds of impersonation request, each authorized as the impersonate verb
// on its own resource.
const (
	kindServiceAccount = "ServiceAccount"
	kindUser           = "User"
	kindGroup          = "Group"
	kindUserExtra      = "UserExtra"
	kindUID            = "UID"
)

// Impersonate is kube-apiserver's impersonation filter: when h asks to act
// as another user (Impersonate-User, -Group, -Uid, -Extra-*), requester
// must be allowed the impersonate verb on each thing asked for, and the
// request then runs as the user the headers describe. Without those
// headers requester is returned unchanged. The headers are removed once
// honoured so that nothing forwards them. A denied request is upstream's
// Forbidden; groups, extras or a UID without a user are a BadRequest.
func Impersonate(ctx context.Context, a endpoints.Authorizer, requester authenticationv1.UserInfo, h http.Header) (authenticationv1.UserInfo, error) {
	wanted, err := impersonationRequests(h)
	if err != nil || len(wanted) == 0 {
		return requester, err
	}
	groupsGiven := len(h.Values(authenticationv1.ImpersonateGroupHeader)) > 0
	var u authenticationv1.UserInfo
	u.Groups = []string{}
	for _, ref := range wanted {
		ra := impersonateAttributes(&u, ref, groupsGiven)
		attrs := authorizationv1.SubjectAccessReviewSpec{
			User: requester.Username, Groups: requester.Groups, UID: requester.UID, Extra: endpoints.Extra(requester),
			ResourceAttributes: ra,
		}
		allowed, reason, err := a.Authorize(ctx, attrs)
		if err != nil || !allowed {
			return authenticationv1.UserInfo{}, endpoints.Forbidden(attrs, reason)
		}
	}
	u.Groups = withAllGroup(u.Username, u.Groups)
	removeImpersonationHeaders(h)
	return u, nil
}

// impersonateAttributes is what must be allowed to impersonate ref; it
// adds what ref asks for to u.
func impersonateAttributes(u *authenticationv1.UserInfo, ref corev1.ObjectReference, groupsGiven bool) *authorizationv1.ResourceAttributes {
	ra := &authorizationv1.ResourceAttributes{Verb: "impersonate", Namespace: ref.Namespace, Name: ref.Name}
	switch ref.Kind {
	case kindServiceAccount:
		ra.Resource = "serviceaccounts"
		u.Username = serviceAccountPrefix + ref.Namespace + ":" + ref.Name
		if !groupsGiven { // a service account's groups follow from its namespace
			u.Groups = []string{GroupServiceAccounts, GroupServiceAccounts + ":" + ref.Namespace}
		}
	case kindUser:
		ra.Resource = "users"
		u.Username = ref.Name
	case kindGroup:
		ra.Resource = "groups"
		u.Groups = append(u.Groups, ref.Name)
	case kindUserExtra:
		ra.Group, ra.Version = authenticationv1.GroupName, "v1"
		ra.Resource, ra.Subresource = "userextras", ref.FieldPath
		if u.Extra == nil {
			u.Extra = map[string]authenticationv1.ExtraValue{}
		}
		u.Extra[ref.FieldPath] = append(u.Extra[ref.FieldPath], ref.Name)
	case kindUID:
		ra.Group, ra.Version = authenticationv1.GroupName, "v1"
		ra.Resource = "uids"
		u.UID = ref.Name
	}
	return ra
}

// withAllGroup adds system:authenticated to the groups of an impersonated
// user, or system:unauthenticated to those of system:anonymous, unless the
// groups asked for already settle which it is.
func withAllGroup(username string, groups []string) []string {
	all, settled := endpoints.GroupAuthenticated, []string{endpoints.GroupAuthenticated, GroupUnauthenticated}
	if username == UserAnonymous {
		all, settled = GroupUnauthenticated, []string{GroupUnauthenticated}
	}
	for _, g := range groups {
		for _, s := range settled {
			if g == s {
				return groups
			}
		}
	}
	return append(groups, all)
}

// impersonationRequests lists what the headers ask to impersonate, in
// upstream's order: the user (or service account), groups, extras, UID.
func impersonationRequests(h http.Header) ([]corev1.ObjectReference, error) {
	var refs []corev1.ObjectReference
	name := h.Get(authenticationv1.ImpersonateUserHeader)
	if name != "" {
		if ns, sa, ok := splitServiceAccount(name); ok {
			refs = append(refs, corev1.ObjectReference{Kind: kindServiceAccount, Namespace: ns, Name: sa})
		} else {
			refs = append(refs, corev1.ObjectReference{Kind: kindUser, Name: name})
		}
	}
	others := false
	for _, g := range h.Values(authenticationv1.ImpersonateGroupHeader) {
		others = true
		refs = append(refs, corev1.ObjectReference{Kind: kindGroup, Name: g})
	}
	for header, values := range h {
		if !strings.HasPrefix(header, authenticationv1.ImpersonateUserExtraHeaderPrefix) {
			continue
		}
		others = true
		key := extraKey(header[len(authenticationv1.ImpersonateUserExtraHeaderPrefix):])
		for _, v := range values {
			refs = append(refs, corev1.ObjectReference{Kind: kindUserExtra, APIVersion: authenticationv1.SchemeGroupVersion.String(), Name: v, FieldPath: key})
		}
	}
	if uid := h.Get(authenticationv1.ImpersonateUIDHeader); uid != "" {
		others = true
		refs = append(refs, corev1.ObjectReference{Kind: kindUID, APIVersion: authenticationv1.SchemeGroupVersion.String(), Name: uid})
	}
	if others && name == "" {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("requested %v without impersonating a user", refs))
	}
	return refs, nil
}

// extraKey is an extra's key from its header suffix: lower case and
// %-decoded (kept as sent when it does not decode), as upstream reads it.
func extraKey(suffix string) string {
	lower := strings.ToLower(suffix)
	key, err := url.PathUnescape(lower)
	if err != nil {
		return lower
	}
	return key
}

// splitServiceAccount reads system:serviceaccount:<ns>:<name> when both
// parts are valid names, as upstream's serviceaccount.SplitUsername does.
func splitServiceAccount(user string) (namespace, name string, ok bool) {
	rest, found := strings.CutPrefix(user, serviceAccountPrefix)
	if !found {
		return "", "", false
	}
	parts := strings.Split(rest, ":")
	if len(parts) != 2 ||
		len(apimachineryvalidation.ValidateNamespaceName(parts[0], false)) != 0 ||
		len(apimachineryvalidation.ValidateServiceAccountName(parts[1], false)) != 0 {
		return "", "", false
	}
	return parts[0], parts[1], true
}

// removeImpersonationHeaders drops the headers once honoured.
func removeImpersonationHeaders(h http.Header) {
	h.Del(authenticationv1.ImpersonateUserHeader)
	h.Del(authenticationv1.ImpersonateGroupHeader)
	h.Del(authenticationv1.ImpersonateUIDHeader)
	for header := range h {
		if strings.HasPrefix(header, authenticationv1.ImpersonateUserExtraHeaderPrefix) {
			delete(h, header)
		}
	}
}
