package authn

import (
	"context"
	"net/http"
	"reflect"
	"testing"

	"github.com/batchlet/batchlet/apiserver/endpoints"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// allowImpersonating allows the impersonate verb on the listed
// "group/resource/subresource:name".
type allowImpersonating struct {
	endpoints.AllowAll
	allowed map[string]bool
}

func (a allowImpersonating) Authorize(_ context.Context, spec authorizationv1.SubjectAccessReviewSpec) (bool, string, error) {
	ra := spec.ResourceAttributes
	key := ra.Group + "/" + ra.Resource + "/" + ra.Subresource + ":" + ra.Name
	return ra.Verb == "impersonate" && a.allowed[key], "", nil
}

func TestImpersonate(t *testing.T) {
	alice := authenticationv1.UserInfo{Username: "alice", Groups: []string{"devs", endpoints.GroupAuthenticated}}
	everything := map[string]bool{
		"/users/:bob": true, "/users/:system:anonymous": true, "/groups/:g1": true, "/groups/:g2": true,
		"/groups/:system:unauthenticated": true, "/serviceaccounts/:bot": true,
		"authentication.k8s.io/uids/:u-1": true, "authentication.k8s.io/userextras/scopes:view": true,
		"authentication.k8s.io/userextras/scopes:edit": true, "authentication.k8s.io/userextras/a/b:x": true,
	}
	tests := map[string]struct {
		headers map[string][]string
		allowed map[string]bool
		want    authenticationv1.UserInfo
		wantErr string
		status  int32
	}{
		"no headers: the requester": {
			want: alice,
		},
		"a user": {
			headers: map[string][]string{"Impersonate-User": {"bob"}}, allowed: everything,
			want: authenticationv1.UserInfo{Username: "bob", Groups: []string{endpoints.GroupAuthenticated}},
		},
		"a user with groups, UID and extras": {
			headers: map[string][]string{"Impersonate-User": {"bob"}, "Impersonate-Group": {"g1", "g2"}, "Impersonate-Uid": {"u-1"},
				"Impersonate-Extra-Scopes": {"view", "edit"}, "Impersonate-Extra-A%2fb": {"x"}},
			allowed: everything,
			want: authenticationv1.UserInfo{Username: "bob", UID: "u-1", Groups: []string{"g1", "g2", endpoints.GroupAuthenticated},
				Extra: map[string]authenticationv1.ExtraValue{"scopes": {"view", "edit"}, "a/b": {"x"}}},
		},
		"a service account gets its groups": {
			headers: map[string][]string{"Impersonate-User": {"system:serviceaccount:default:bot"}}, allowed: everything,
			want: authenticationv1.UserInfo{Username: "system:serviceaccount:default:bot",
				Groups: []string{GroupServiceAccounts, GroupServiceAccounts + ":default", endpoints.GroupAuthenticated}},
		},
		"a service account with groups given gets those": {
			headers: map[string][]string{"Impersonate-User": {"system:serviceaccount:default:bot"}, "Impersonate-Group": {"g1"}}, allowed: everything,
			want: authenticationv1.UserInfo{Username: "system:serviceaccount:default:bot", Groups: []string{"g1", endpoints.GroupAuthenticated}},
		},
		"an invalid service account name is a user": {
			headers: map[string][]string{"Impersonate-User": {"system:serviceaccount:Default:bot"}},
			wantErr: `users "system:serviceaccount:Default:bot" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope`,
			status:  http.StatusForbidden,
		},
		"anonymous is unauthenticated": {
			headers: map[string][]string{"Impersonate-User": {UserAnonymous}}, allowed: everything,
			want: authenticationv1.UserInfo{Username: UserAnonymous, Groups: []string{GroupUnauthenticated}},
		},
		"an unauthenticated group is not made authenticated": {
			headers: map[string][]string{"Impersonate-User": {"bob"}, "Impersonate-Group": {GroupUnauthenticated}}, allowed: everything,
			want: authenticationv1.UserInfo{Username: "bob", Groups: []string{GroupUnauthenticated}},
		},
		"user not allowed": {
			headers: map[string][]string{"Impersonate-User": {"bob"}},
			wantErr: `users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope`,
			status:  http.StatusForbidden,
		},
		"service account not allowed": {
			headers: map[string][]string{"Impersonate-User": {"system:serviceaccount:default:bot"}},
			wantErr: `serviceaccounts "bot" is forbidden: User "alice" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "default"`,
			status:  http.StatusForbidden,
		},
		"group not allowed": {
			headers: map[string][]string{"Impersonate-User": {"bob"}, "Impersonate-Group": {"admins"}}, allowed: everything,
			wantErr: `groups "admins" is forbidden: User "alice" cannot impersonate resource "groups" in API group "" at the cluster scope`,
			status:  http.StatusForbidden,
		},
		"uid not allowed": {
			headers: map[string][]string{"Impersonate-User": {"bob"}, "Impersonate-Uid": {"u-2"}}, allowed: everything,
			wantErr: `uids.authentication.k8s.io "u-2" is forbidden: User "alice" cannot impersonate resource "uids" in API group "authentication.k8s.io" at the cluster scope`,
			status:  http.StatusForbidden,
		},
		"extra not allowed": {
			headers: map[string][]string{"Impersonate-User": {"bob"}, "Impersonate-Extra-Scopes": {"admin"}}, allowed: everything,
			wantErr: `userextras.authentication.k8s.io "admin" is forbidden: User "alice" cannot impersonate resource "userextras/scopes" in API group "authentication.k8s.io" at the cluster scope`,
			status:  http.StatusForbidden,
		},
		"group without a user": {
			headers: map[string][]string{"Impersonate-Group": {"g1"}}, allowed: everything,
			wantErr: `requested [{Group  g1    }] without impersonating a user`,
			status:  http.StatusBadRequest,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := http.Header{}
			for k, vs := range tc.headers {
				for _, v := range vs {
					h.Add(k, v)
				}
			}
			got, err := Impersonate(context.Background(), allowImpersonating{allowed: tc.allowed}, alice, h)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr || apierrors.ReasonForError(err) == "" || errCode(err) != tc.status {
					t.Fatalf("err = %v (code %d), want %q (code %d)", err, errCode(err), tc.wantErr, tc.status)
				}
				return
			}
			if err != nil {
				t.Fatalf("Impersonate: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("user = %+v, want %+v", got, tc.want)
			}
			if len(tc.headers) > 0 && len(h) != 0 {
				t.Errorf("impersonation headers left: %v", h)
			}
		})
	}
}

func errCode(err error) int32 {
	if s, ok := err.(apierrors.APIStatus); ok {
		return s.Status().Code
	}
	return 0
}
