package reviews

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
)

// onlyAlice allows alice and fails for the user "broken".
type onlyAlice struct{}

func (onlyAlice) Authorize(_ context.Context, attrs authorizationv1.SubjectAccessReviewSpec) (bool, string, error) {
	switch attrs.User {
	case "alice":
		return true, "alice may", nil
	case "broken":
		return false, "", errors.New("no rules loaded")
	}
	return false, "", nil
}

func (onlyAlice) RulesFor(_ context.Context, user authenticationv1.UserInfo, namespace string) authorizationv1.SubjectRulesReviewStatus {
	return authorizationv1.SubjectRulesReviewStatus{EvaluationError: user.Username + " in " + namespace}
}

func TestReview(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	get := &authorizationv1.ResourceAttributes{Verb: "get", Resource: "pods"}
	for _, tc := range []struct {
		name, user string
		in         runtime.Object
		wantStatus any
		wantErr    string
	}{
		{"who am I", "bob", &authenticationv1.SelfSubjectReview{},
			authenticationv1.SelfSubjectReviewStatus{UserInfo: authenticationv1.UserInfo{Username: "bob"}}, ""},
		{"allowed", "alice", &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: get}},
			authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: "alice may"}, ""},
		{"not allowed", "bob", &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: get}},
			authorizationv1.SubjectAccessReviewStatus{}, ""},
		{"evaluation error", "broken", &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: get}},
			authorizationv1.SubjectAccessReviewStatus{EvaluationError: "no rules loaded"}, ""},
		{"no attributes", "alice", &authorizationv1.SelfSubjectAccessReview{TypeMeta: metav1.TypeMeta{APIVersion: "authorization.k8s.io/v1", Kind: "SelfSubjectAccessReview"}}, nil,
			`SelfSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes: Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be specified`},
		{"rules", "bob", &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "ns"}},
			authorizationv1.SubjectRulesReviewStatus{EvaluationError: "bob in ns"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &Handler{Authorizer: onlyAlice{}, Clock: clocktesting.NewFakePassiveClock(now),
				UserOf: func(context.Context) authenticationv1.UserInfo { return authenticationv1.UserInfo{Username: tc.user} }}
			out, err := h.review(context.Background(), tc.in)
			if got := errString(err); got != tc.wantErr {
				t.Fatalf("review error %q, want %q", got, tc.wantErr)
			}
			if err != nil {
				return
			}
			var status any
			switch o := out.(type) {
			case *authenticationv1.SelfSubjectReview:
				status = o.Status
				if !o.CreationTimestamp.Equal(&metav1.Time{Time: now}) {
					t.Errorf("creationTimestamp %v, want %v", o.CreationTimestamp, now)
				}
			case *authorizationv1.SelfSubjectAccessReview:
				status = o.Status
			case *authorizationv1.SelfSubjectRulesReview:
				status = o.Status
			}
			if !reflect.DeepEqual(status, tc.wantStatus) {
				t.Errorf("status %+v, want %+v", status, tc.wantStatus)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
