package registry

import (
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// reviewVerbs: a review is only ever created, and nothing is stored.
var reviewVerbs = []string{"create"}

// SelfSubjectReviews is authentication.k8s.io/v1 selfsubjectreviews
// (`kubectl auth whoami`): the answer is the caller's identity.
func SelfSubjectReviews() *Resource {
	return &Resource{
		GVR:  authenticationv1.SchemeGroupVersion.WithResource("selfsubjectreviews"),
		Kind: "SelfSubjectReview", Singular: "selfsubjectreview", Verbs: reviewVerbs, CreateOnly: true,
		New:     func() runtime.Object { return &authenticationv1.SelfSubjectReview{} },
		NewList: func() runtime.Object { return &authenticationv1.SelfSubjectReview{} },
	}
}

// SelfSubjectAccessReviews is authorization.k8s.io/v1
// selfsubjectaccessreviews (`kubectl auth can-i VERB RESOURCE`).
func SelfSubjectAccessReviews() *Resource {
	return &Resource{
		GVR:  authorizationv1.SchemeGroupVersion.WithResource("selfsubjectaccessreviews"),
		Kind: "SelfSubjectAccessReview", Singular: "selfsubjectaccessreview", Verbs: reviewVerbs, CreateOnly: true,
		New:     func() runtime.Object { return &authorizationv1.SelfSubjectAccessReview{} },
		NewList: func() runtime.Object { return &authorizationv1.SelfSubjectAccessReview{} },
	}
}

// SelfSubjectRulesReviews is authorization.k8s.io/v1
// selfsubjectrulesreviews (`kubectl auth can-i --list`).
func SelfSubjectRulesReviews() *Resource {
	return &Resource{
		GVR:  authorizationv1.SchemeGroupVersion.WithResource("selfsubjectrulesreviews"),
		Kind: "SelfSubjectRulesReview", Singular: "selfsubjectrulesreview", Verbs: reviewVerbs, CreateOnly: true,
		New:     func() runtime.Object { return &authorizationv1.SelfSubjectRulesReview{} },
		NewList: func() runtime.Object { return &authorizationv1.SelfSubjectRulesReview{} },
	}
}
