package rbac

import (
	"context"
	"errors"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fakeSource serves fixed RBAC objects.
type fakeSource struct {
	crbs  []*rbacv1.ClusterRoleBinding
	rbs   []*rbacv1.RoleBinding
	crs   map[string]*rbacv1.ClusterRole
	roles map[string]*rbacv1.Role // namespace/name
}

var errNotFound = errors.New("not found")

func (f *fakeSource) ClusterRoleBindings(context.Context) ([]*rbacv1.ClusterRoleBinding, error) {
	return f.crbs, nil
}

func (f *fakeSource) RoleBindings(_ context.Context, ns string) ([]*rbacv1.RoleBinding, error) {
	var out []*rbacv1.RoleBinding
	for _, b := range f.rbs {
		if b.Namespace == ns {
			out = append(out, b)
		}
	}
	return out, nil
}

func (f *fakeSource) ClusterRole(_ context.Context, name string) (*rbacv1.ClusterRole, error) {
	if r, ok := f.crs[name]; ok {
		return r, nil
	}
	return nil, errNotFound
}

func (f *fakeSource) Role(_ context.Context, ns, name string) (*rbacv1.Role, error) {
	if r, ok := f.roles[ns+"/"+name]; ok {
		return r, nil
	}
	return nil, errNotFound
}

func newFakeSource() *fakeSource {
	f := &fakeSource{crs: map[string]*rbacv1.ClusterRole{}, roles: map[string]*rbacv1.Role{}, crbs: BootstrapClusterRoleBindings()}
	for _, r := range BootstrapClusterRoles() {
		f.crs[r.Name] = r
	}
	f.roles["team/pod-logger"] = &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "pod-logger", Namespace: "team"}, Rules: []rbacv1.PolicyRule{
		{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods/log"}},
		{Verbs: []string{"get", "update"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"settings"}},
	}}
	f.roles["team/anything"] = &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "anything", Namespace: "team"}, Rules: []rbacv1.PolicyRule{
		{Verbs: []string{"*"}, APIGroups: []string{"batch"}, Resources: []string{"*"}},
		{Verbs: []string{"get"}, APIGroups: []string{"*"}, Resources: []string{"*/status"}},
	}}
	f.crs["metrics-reader"] = &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader"}, Rules: []rbacv1.PolicyRule{
		{Verbs: []string{"get"}, NonResourceURLs: []string{"/metrics", "/debug/*"}}}}
	sa := func(ns, name string) rbacv1.Subject {
		return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}
	}
	f.rbs = []*rbacv1.RoleBinding{
		{ObjectMeta: metav1.ObjectMeta{Name: "viewers", Namespace: "team"},
			RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"}, Subjects: []rbacv1.Subject{sa("team", "reader")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "loggers", Namespace: "team"},
			RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "pod-logger"}, Subjects: []rbacv1.Subject{sa("", "logger")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "batchers", Namespace: "team"},
			RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "anything"}, Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, Name: "batch-team"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "dangling", Namespace: "team"},
			RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "missing"}, Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "alice"}}},
	}
	f.crbs = append(f.crbs, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "scrapers"},
		RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "metrics-reader"}, Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "prometheus"}}})
	return f
}

func saUser(ns, name string) (string, []string) {
	return "system:serviceaccount:" + ns + ":" + name, []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}
}

func TestAuthorize(t *testing.T) {
	res := func(verb, group, resource, sub, ns, name string) *authorizationv1.ResourceAttributes {
		return &authorizationv1.ResourceAttributes{Verb: verb, Group: group, Resource: resource, Subresource: sub, Namespace: ns, Name: name}
	}
	reader, readerGroups := saUser("team", "reader")
	logger, loggerGroups := saUser("team", "logger")
	authed := []string{"system:authenticated"}
	cases := []struct {
		name       string
		user       string
		groups     []string
		ra         *authorizationv1.ResourceAttributes
		nra        *authorizationv1.NonResourceAttributes
		wantAllow  bool
		wantReason string
	}{
		{name: "masters get everything", user: "kubernetes-admin", groups: []string{"system:masters", "system:authenticated"},
			ra: res("delete", "", "nodes", "", "", "n"), wantAllow: true},
		{name: "plain user: no pods", user: "bob", groups: authed, ra: res("list", "", "pods", "", "team", "")},
		{name: "plain user: discovery", user: "bob", groups: authed, nra: &authorizationv1.NonResourceAttributes{Verb: "get", Path: "/apis/batch/v1"},
			wantAllow: true, wantReason: `RBAC: allowed by ClusterRoleBinding "system:discovery" of ClusterRole "system:discovery" to Group "system:authenticated"`},
		{name: "plain user: version", user: "bob", groups: authed, nra: &authorizationv1.NonResourceAttributes{Verb: "get", Path: "/version"}, wantAllow: true,
			wantReason: `RBAC: allowed by ClusterRoleBinding "system:discovery" of ClusterRole "system:discovery" to Group "system:authenticated"`},
		{name: "plain user: no metrics", user: "bob", groups: authed, nra: &authorizationv1.NonResourceAttributes{Verb: "get", Path: "/metrics"}},
		{name: "plain user: self review", user: "bob", groups: authed, ra: res("create", "authorization.k8s.io", "selfsubjectaccessreviews", "", "", ""), wantAllow: true,
			wantReason: `RBAC: allowed by ClusterRoleBinding "system:basic-user" of ClusterRole "system:basic-user" to Group "system:authenticated"`},
		{name: "view lists pods", user: reader, groups: readerGroups, ra: res("list", "", "pods", "", "team", ""), wantAllow: true,
			wantReason: `RBAC: allowed by RoleBinding "viewers/team" of ClusterRole "view" to ServiceAccount "reader/team"`},
		{name: "view only in its namespace", user: reader, groups: readerGroups, ra: res("list", "", "pods", "", "other", "")},
		{name: "view not cluster-wide", user: reader, groups: readerGroups, ra: res("list", "", "pods", "", "", "")},
		{name: "view reads pods/log", user: reader, groups: readerGroups, ra: res("get", "", "pods", "log", "team", "p"), wantAllow: true,
			wantReason: `RBAC: allowed by RoleBinding "viewers/team" of ClusterRole "view" to ServiceAccount "reader/team"`},
		{name: "view cannot exec", user: reader, groups: readerGroups, ra: res("create", "", "pods", "exec", "team", "p")},
		{name: "view cannot read secrets", user: reader, groups: readerGroups, ra: res("get", "", "secrets", "", "team", "s")},
		{name: "view cannot delete jobs", user: reader, groups: readerGroups, ra: res("delete", "batch", "jobs", "", "team", "j")},
		{name: "subresource rule is not the resource", user: logger, groups: loggerGroups, ra: res("get", "", "pods", "", "team", "p")},
		{name: "subresource rule", user: logger, groups: loggerGroups, ra: res("get", "", "pods", "log", "team", "p"), wantAllow: true,
			wantReason: `RBAC: allowed by RoleBinding "loggers/team" of Role "pod-logger" to ServiceAccount "logger/team"`},
		{name: "resourceNames match", user: logger, groups: loggerGroups, ra: res("update", "", "configmaps", "", "team", "settings"), wantAllow: true,
			wantReason: `RBAC: allowed by RoleBinding "loggers/team" of Role "pod-logger" to ServiceAccount "logger/team"`},
		{name: "resourceNames other name", user: logger, groups: loggerGroups, ra: res("update", "", "configmaps", "", "team", "other")},
		{name: "resourceNames and list", user: logger, groups: loggerGroups, ra: res("list", "", "configmaps", "", "team", "")},
		{name: "group subject, wildcard verb and resource", user: "carol", groups: []string{"batch-team", "system:authenticated"},
			ra: res("deletecollection", "batch", "jobs", "", "team", ""), wantAllow: true,
			wantReason: `RBAC: allowed by RoleBinding "batchers/team" of Role "anything" to Group "batch-team"`},
		{name: "wildcard resource covers subresources", user: "carol", groups: []string{"batch-team"},
			ra: res("update", "batch", "jobs", "status", "team", "j"), wantAllow: true,
			wantReason: `RBAC: allowed by RoleBinding "batchers/team" of Role "anything" to Group "batch-team"`},
		{name: "*/status", user: "carol", groups: []string{"batch-team"}, ra: res("get", "", "pods", "status", "team", "p"), wantAllow: true,
			wantReason: `RBAC: allowed by RoleBinding "batchers/team" of Role "anything" to Group "batch-team"`},
		{name: "*/status is not the resource", user: "carol", groups: []string{"batch-team"}, ra: res("get", "", "pods", "", "team", "p")},
		{name: "wildcard group only in its group", user: "carol", groups: []string{"batch-team"}, ra: res("get", "", "pods", "", "team", "p")},
		{name: "binding to a missing role", user: "alice", ra: res("get", "", "pods", "", "team", "p"), wantReason: "RBAC: not found"},
		{name: "nonResourceURL exact", user: "prometheus", nra: &authorizationv1.NonResourceAttributes{Verb: "get", Path: "/metrics"}, wantAllow: true,
			wantReason: `RBAC: allowed by ClusterRoleBinding "scrapers" of ClusterRole "metrics-reader" to User "prometheus"`},
		{name: "nonResourceURL prefix", user: "prometheus", nra: &authorizationv1.NonResourceAttributes{Verb: "get", Path: "/debug/pprof"}, wantAllow: true,
			wantReason: `RBAC: allowed by ClusterRoleBinding "scrapers" of ClusterRole "metrics-reader" to User "prometheus"`},
		{name: "nonResourceURL verb", user: "prometheus", nra: &authorizationv1.NonResourceAttributes{Verb: "post", Path: "/metrics"}},
		{name: "service account name in another namespace", user: "system:serviceaccount:other:reader", groups: authed, ra: res("list", "", "pods", "", "team", "")},
	}
	a := New(newFakeSource())
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			allowed, reason, err := a.Authorize(context.Background(), authorizationv1.SubjectAccessReviewSpec{
				User: tc.user, Groups: tc.groups, ResourceAttributes: tc.ra, NonResourceAttributes: tc.nra})
			if err != nil {
				t.Fatalf("Authorize: %v", err)
			}
			if allowed != tc.wantAllow || reason != tc.wantReason {
				t.Errorf("allowed=%v reason=%q, want allowed=%v reason=%q", allowed, reason, tc.wantAllow, tc.wantReason)
			}
		})
	}
}

func TestRulesFor(t *testing.T) {
	a := New(newFakeSource())
	user, groups := saUser("team", "logger")
	got := a.RulesFor(context.Background(), authenticationv1.UserInfo{Username: user, Groups: groups}, "team")
	var resources, urls []string
	for _, r := range got.ResourceRules {
		resources = append(resources, r.Resources...)
	}
	for _, r := range got.NonResourceRules {
		urls = append(urls, r.NonResourceURLs...)
	}
	wantResources := []string{"selfsubjectaccessreviews", "selfsubjectrulesreviews", "selfsubjectreviews", "pods/log", "configmaps"}
	if len(resources) != len(wantResources) {
		t.Fatalf("resources = %v, want %v", resources, wantResources)
	}
	for i := range resources {
		if resources[i] != wantResources[i] {
			t.Errorf("resources = %v, want %v", resources, wantResources)
			break
		}
	}
	if len(urls) == 0 || urls[0] != "/api" || got.Incomplete {
		t.Errorf("nonResourceRules = %v, incomplete %v", got.NonResourceRules, got.Incomplete)
	}
}
