package e2e

import (
	"strings"
	"testing"
)

// TestImpersonation: kubectl's --as and --as-group act as another user
// only for a requester RBAC allows the impersonate verb, with upstream's
// 403 otherwise; a service account impersonated gets its groups.
func TestImpersonation(t *testing.T) {
	s := startServer(t)
	const sa = "system:serviceaccount:default:default"
	const who = "jsonpath={.status.userInfo.username} {.status.userInfo.groups}"
	if got := s.kubectl("auth", "whoami", "--as", sa, "-o", who); got != sa+` ["system:serviceaccounts","system:serviceaccounts:default","system:authenticated"]` {
		t.Errorf("whoami --as %s = %q", sa, got)
	}
	if got, err := s.kubectlErr("auth", "can-i", "get", "pods", "--as", sa); err == nil || strings.TrimSpace(got) != "no" {
		t.Errorf("can-i get pods --as %s = %q (err %v), want no", sa, got, err)
	}
	if got := strings.TrimSpace(s.kubectl("auth", "can-i", "get", "pods")); got != "yes" {
		t.Errorf("can-i get pods as the admin = %q, want yes", got)
	}
	const forbidden = `Error from server (Forbidden): pods is forbidden: User "` + sa + `" cannot list resource "pods" in API group "" in the namespace "default"`
	if out, err := s.kubectlErr("get", "pods", "--as", sa); err == nil || strings.TrimSpace(out) != forbidden {
		t.Errorf("get pods --as %s: err=%v\n%s\nwant %s", sa, err, out, forbidden)
	}
	if got := s.kubectl("auth", "whoami", "--as", "bob", "--as-group", "devs", "-o", who); got != `bob ["devs","system:authenticated"]` {
		t.Errorf("whoami --as bob --as-group devs = %q", got)
	}

	// The service account may impersonate users only once RBAC says so.
	token := strings.TrimSpace(s.kubectl("create", "token", "default"))
	const cannot = `Error from server (Forbidden): users "bob" is forbidden: User "` + sa + `" cannot impersonate resource "users" in API group "" at the cluster scope`
	if out, err := s.kubectlErr("--token", token, "get", "pods", "--as", "bob"); err == nil || strings.TrimSpace(out) != cannot {
		t.Errorf("get pods --as bob with the token: err=%v\n%s\nwant %s", err, out, cannot)
	}
	const role = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: impersonate-users}
rules:
- {apiGroups: [""], resources: [users], verbs: [impersonate]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: default-impersonates}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: impersonate-users}
subjects:
- {kind: ServiceAccount, name: default, namespace: default}
`
	if out, err := s.kubectlStdin(role, "apply", "-f", "-"); err != nil {
		t.Fatalf("apply the impersonator role: %v\n%s", err, out)
	}
	if got := s.kubectl("--token", token, "auth", "whoami", "--as", "bob", "-o", who); got != `bob ["system:authenticated"]` {
		t.Errorf("whoami --as bob with the token = %q", got)
	}
	const noGroup = `Error from server (Forbidden): groups "system:masters" is forbidden: User "` + sa + `" cannot impersonate resource "groups" in API group "" at the cluster scope`
	if out, err := s.kubectlErr("--token", token, "get", "pods", "--as", "bob", "--as-group", "system:masters"); err == nil || strings.TrimSpace(out) != noGroup {
		t.Errorf("get pods --as-group system:masters with the token: err=%v\n%s\nwant %s", err, out, noGroup)
	}
}
