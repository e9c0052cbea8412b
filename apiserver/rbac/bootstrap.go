package rbac

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Verb sets of upstream's bootstrap policy.
var (
	read      = []string{"get", "list", "watch"}
	write     = []string{"create", "delete", "deletecollection", "patch", "update"}
	readWrite = append(append([]string{}, read...), write...)
)

func rule(verbs []string, group string, resources ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, APIGroups: []string{group}, Resources: resources}
}

func urls(verbs []string, paths ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, NonResourceURLs: paths}
}

// bootstrapMeta is the metadata upstream's bootstrap roles carry.
func bootstrapMeta(name string, labels map[string]string) metav1.ObjectMeta {
	l := map[string]string{"kubernetes.io/bootstrapping": "rbac-defaults"}
	for k, v := range labels {
		l[k] = v
	}
	return metav1.ObjectMeta{Name: name, Labels: l, Annotations: map[string]string{"rbac.authorization.kubernetes.io/autoupdate": "true"}}
}

// viewRules is upstream's view role for the resources batchlet serves.
func viewRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		rule(read, "", "pods", "serviceaccounts", "services", "services/status", "endpoints", "configmaps"),
		rule(read, "", "bindings", "events", "pods/status", "namespaces/status", "pods/log"),
		rule(read, "", "namespaces"),
		rule(read, "discovery.k8s.io", "endpointslices"),
		rule(read, "batch", "jobs", "jobs/status"),
		rule(read, "policy", "poddisruptionbudgets", "poddisruptionbudgets/status"),
		// batchlet's records of terminated containers (install's
		// batchlet:results-view aggregates the same into a real cluster's view).
		rule(read, "results.batchlet.dev", "containerresults"),
		rule(read, "batchlet.dev", "workqueues"),
	}
}

// editRules adds upstream's edit role's writes to view.
func editRules() []rbacv1.PolicyRule {
	return append([]rbacv1.PolicyRule{
		rule([]string{"impersonate"}, "", "serviceaccounts"),
		rule(readWrite, "", "pods", "pods/attach", "pods/proxy", "pods/exec", "pods/portforward"),
		rule([]string{"create"}, "", "pods/eviction"),
		rule(readWrite, "", "services", "services/proxy", "endpoints", "configmaps", "secrets", "serviceaccounts"),
		rule([]string{"create"}, "", "serviceaccounts/token"),
		rule(readWrite, "batch", "jobs"),
		rule(readWrite, "policy", "poddisruptionbudgets"),
		rule(readWrite, "discovery.k8s.io", "endpointslices"),
		rule([]string{"delete", "deletecollection"}, "results.batchlet.dev", "containerresults"),
		rule([]string{"delete", "deletecollection"}, "batchlet.dev", "workqueues"),
	}, viewRules()...)
}

// adminRules adds upstream's admin role's RBAC and access reviews to edit.
func adminRules() []rbacv1.PolicyRule {
	return append([]rbacv1.PolicyRule{
		rule(readWrite, rbacv1.GroupName, "roles", "rolebindings"),
		rule([]string{"create"}, "authorization.k8s.io", "localsubjectaccessreviews"),
	}, editRules()...)
}

// BootstrapClusterRoles are the ClusterRoles a new cluster has: the
// user-facing cluster-admin, admin, edit and view (for the resources
// batchlet serves), and the discovery, basic-user and public-info roles
// every authenticated user is bound to.
func BootstrapClusterRoles() []*rbacv1.ClusterRole {
	all := []string{"*"}
	return []*rbacv1.ClusterRole{
		{ObjectMeta: bootstrapMeta("cluster-admin", nil), Rules: []rbacv1.PolicyRule{
			{Verbs: all, APIGroups: all, Resources: all}, urls(all, "*")}},
		{ObjectMeta: bootstrapMeta("admin", nil), Rules: adminRules()},
		{ObjectMeta: bootstrapMeta("edit", map[string]string{"rbac.authorization.k8s.io/aggregate-to-admin": "true"}), Rules: editRules()},
		{ObjectMeta: bootstrapMeta("view", map[string]string{"rbac.authorization.k8s.io/aggregate-to-edit": "true"}), Rules: viewRules()},
		{ObjectMeta: bootstrapMeta("system:discovery", nil), Rules: []rbacv1.PolicyRule{
			urls([]string{"get"}, "/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*", "/readyz", "/version", "/version/")}},
		{ObjectMeta: bootstrapMeta("system:basic-user", nil), Rules: []rbacv1.PolicyRule{
			rule([]string{"create"}, "authorization.k8s.io", "selfsubjectaccessreviews", "selfsubjectrulesreviews"),
			rule([]string{"create"}, "authentication.k8s.io", "selfsubjectreviews")}},
		{ObjectMeta: bootstrapMeta("system:public-info-viewer", nil), Rules: []rbacv1.PolicyRule{
			urls([]string{"get"}, "/healthz", "/livez", "/readyz", "/version", "/version/")}},
		// What a joining node's bootstrap token may do: ask for its client
		// certificate and watch for it.
		{ObjectMeta: bootstrapMeta("system:node-bootstrapper", nil), Rules: []rbacv1.PolicyRule{
			rule([]string{"create", "get", "list", "watch"}, "certificates.k8s.io", "certificatesigningrequests")}},
	}
}

// NodeBootstrapTokenGroup is the extra group of the bootstrap tokens nodes
// join with (kubeadm's default-node-token group).
const NodeBootstrapTokenGroup = "system:bootstrappers:kubeadm:default-node-token"

// BootstrapClusterRoleBindings bind the bootstrap roles as upstream does.
func BootstrapClusterRoleBindings() []*rbacv1.ClusterRoleBinding {
	group := func(name string) rbacv1.Subject {
		return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: name}
	}
	bind := func(role string, subjects ...rbacv1.Subject) *rbacv1.ClusterRoleBinding {
		return &rbacv1.ClusterRoleBinding{ObjectMeta: bootstrapMeta(role, nil),
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}, Subjects: subjects}
	}
	return []*rbacv1.ClusterRoleBinding{
		bind("cluster-admin", group(GroupMasters)),
		bind("system:discovery", group("system:authenticated")),
		bind("system:basic-user", group("system:authenticated")),
		bind("system:public-info-viewer", group("system:authenticated"), group("system:unauthenticated")),
		// kubeadm's binding of the tokens `batchlet token create` makes.
		{ObjectMeta: bootstrapMeta("kubeadm:kubelet-bootstrap", nil),
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:node-bootstrapper"},
			Subjects: []rbacv1.Subject{group(NodeBootstrapTokenGroup)}},
	}
}
