package registry

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestRBACValidation(t *testing.T) {
	pods := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	view := rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"}
	cases := []struct {
		name string
		res  *Resource
		obj  runtime.Object
		want string
	}{
		{"valid role", Roles(), &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "system:r", Namespace: "ns"}, Rules: []rbacv1.PolicyRule{pods}}, ""},
		{"no verbs", Roles(), &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}}}},
			"rules[0].verbs: Required value: verbs must contain at least one value"},
		{"no api group", ClusterRoles(), &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "r"},
			Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, Resources: []string{"pods"}}}},
			"rules[0].apiGroups: Required value: resource rules must supply at least one api group"},
		{"urls in a role", Roles(), &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns"},
			Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/x"}}}},
			`rules[0].nonResourceURLs: Invalid value: ["/x"]: namespaced rules cannot apply to non-resource URLs`},
		{"slash in name", ClusterRoles(), &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "a/b"}},
			`metadata.name: Invalid value: "a/b": may not contain '/'`},
		{"cluster binding to a role", ClusterRoleBindings(), &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"},
			RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "r"}},
			`roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"`},
		{"service account without namespace", ClusterRoleBindings(), &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"},
			RoleRef: view, Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default"}}},
			"subjects[0].namespace: Required value"},
		{"unknown subject kind", RoleBindings(), &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns"},
			RoleRef: view, Subjects: []rbacv1.Subject{{Kind: "Robot", Name: "r2"}}},
			`subjects[0].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"`},
		{"user subject defaults its group", RoleBindings(), &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns"},
			RoleRef: view, Subjects: []rbacv1.Subject{{Kind: "User", Name: "alice"}}}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.res.PrepareForCreate != nil {
				tc.res.PrepareForCreate(tc.obj)
			}
			errs := tc.res.Validate(tc.obj)
			got := ""
			if len(errs) > 0 {
				got = errs.ToAggregate().Error()
			}
			if got != tc.want {
				t.Errorf("errors = %q, want %q", got, tc.want)
			}
		})
	}
}
