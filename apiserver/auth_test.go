package apiserver

import (
	"context"
	"testing"

	"github.com/batchlet/batchlet/apiserver/endpoints"

	"reflect"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// denyJobs allows everything except the jobs resource.
type denyJobs struct{ endpoints.AllowAll }

func (denyJobs) Authorize(_ context.Context, a authorizationv1.SubjectAccessReviewSpec) (bool, string, error) {
	if a.ResourceAttributes != nil && a.ResourceAttributes.Resource == "jobs" {
		return false, "jobs are off limits", nil
	}
	return true, "", nil
}

func TestSelfSubjectReviewAnswersTheCaller(t *testing.T) {
	env := newTestEnv(t)
	got, err := env.client.AuthenticationV1().SelfSubjectReviews().Create(env.ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create SelfSubjectReview: %v", err)
	}
	if !reflect.DeepEqual(got.Status.UserInfo, endpoints.AdminUser()) {
		t.Errorf("userInfo = %+v, want %+v", got.Status.UserInfo, endpoints.AdminUser())
	}
}

func TestAccessDecisionsGoThroughTheAuthorizer(t *testing.T) {
	cases := map[string]struct {
		authz       endpoints.Authorizer
		wantAllowed bool
		wantReason  string
	}{
		"default allows everything": {authz: nil, wantAllowed: true},
		"a denying authorizer":      {authz: denyJobs{}, wantAllowed: false, wantReason: "jobs are off limits"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			env := newTestEnvWith(t, func(c *Config) { c.Authorizer = tc.authz })
			review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "default", Verb: "create", Group: "batch", Resource: "jobs"},
			}}
			got, err := env.client.AuthorizationV1().SelfSubjectAccessReviews().Create(env.ctx, review, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create SelfSubjectAccessReview: %v", err)
			}
			if got.Status.Allowed != tc.wantAllowed || got.Status.Denied || got.Status.Reason != tc.wantReason { // never an explicit deny
				t.Errorf("status = %+v, want allowed=%v reason=%q", got.Status, tc.wantAllowed, tc.wantReason)
			}
			_, err = env.client.BatchV1().Jobs("default").Create(env.ctx, testJob("j"), metav1.CreateOptions{})
			if tc.wantAllowed && err != nil {
				t.Fatalf("create job: %v", err)
			}
			if !tc.wantAllowed {
				const want = `jobs.batch is forbidden: User "kubernetes-admin" cannot create resource "jobs" in API group "batch" in the namespace "default": jobs are off limits`
				if !apierrors.IsForbidden(err) || err.Error() != want {
					t.Errorf("create job: err = %v, want Forbidden %q", err, want)
				}
			}
		})
	}
}

func TestSelfSubjectAccessReviewNeedsOneKindOfAttributes(t *testing.T) {
	env := newTestEnv(t)
	_, err := env.client.AuthorizationV1().SelfSubjectAccessReviews().Create(env.ctx, &authorizationv1.SelfSubjectAccessReview{}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Errorf("empty review: err = %v, want Invalid", err)
	}
}

func TestImpersonationGoesThroughRBAC(t *testing.T) {
	env := newTestEnvWith(t, func(c *Config) {
		c.RBAC = true
		c.Authenticator = endpoints.TokenMap{testToken: endpoints.AdminUser(), "alice-token": authenticationv1.UserInfo{Username: "alice", Groups: []string{endpoints.GroupAuthenticated}}}
	})
	asClient := func(token string, as rest.ImpersonationConfig) kubernetes.Interface {
		cfg := rest.CopyConfig(env.cfg)
		cfg.BearerToken, cfg.Impersonate = token, as
		return kubernetes.NewForConfigOrDie(cfg)
	}
	bot := rest.ImpersonationConfig{UserName: "system:serviceaccount:default:bot"}

	t.Run("the admin acts as the service account", func(t *testing.T) {
		c := asClient(testToken, bot)
		who, err := c.AuthenticationV1().SelfSubjectReviews().Create(env.ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create SelfSubjectReview: %v", err)
		}
		want := authenticationv1.UserInfo{Username: bot.UserName, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:default", endpoints.GroupAuthenticated}}
		if !reflect.DeepEqual(who.Status.UserInfo, want) {
			t.Errorf("userInfo = %+v, want %+v", who.Status.UserInfo, want)
		}
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "default", Verb: "get", Resource: "pods"},
		}}
		got, err := c.AuthorizationV1().SelfSubjectAccessReviews().Create(env.ctx, review, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create SelfSubjectAccessReview: %v", err)
		}
		if got.Status.Allowed || got.Status.Denied { // RBAC gives no rule: not allowed, not denied either
			t.Errorf("status = %+v, want allowed=false denied=false", got.Status)
		}
		_, err = c.CoreV1().Pods("default").List(env.ctx, metav1.ListOptions{})
		const msg = `pods is forbidden: User "system:serviceaccount:default:bot" cannot list resource "pods" in API group "" in the namespace "default"`
		if !apierrors.IsForbidden(err) || err.Error() != msg {
			t.Errorf("list pods: err = %v, want Forbidden %q", err, msg)
		}
	})
	t.Run("a user without the impersonate verb is forbidden", func(t *testing.T) {
		_, err := asClient("alice-token", rest.ImpersonationConfig{UserName: "bob"}).CoreV1().Pods("default").List(env.ctx, metav1.ListOptions{})
		const msg = `users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope`
		if !apierrors.IsForbidden(err) || err.Error() != msg {
			t.Errorf("list pods: err = %v, want Forbidden %q", err, msg)
		}
	})
}
