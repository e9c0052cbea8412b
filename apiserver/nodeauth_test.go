package apiserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"slices"
	"testing"
	"time"

	"github.com/batchlet/batchlet/apiserver/endpoints"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestBootstrapTokenUser(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	secret := func(edit func(*corev1.Secret)) *corev1.Secret {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-abcdef", Namespace: "kube-system"},
			Type:       "bootstrap.kubernetes.io/token",
			Data: map[string][]byte{"token-id": []byte("abcdef"), "token-secret": []byte("0123456789abcdef"),
				"usage-bootstrap-authentication": []byte("true"), "expiration": []byte("2026-05-02T00:00:00Z"),
				"auth-extra-groups": []byte("system:bootstrappers:kubeadm:default-node-token")},
		}
		if edit != nil {
			edit(s)
		}
		return s
	}
	const token = "abcdef.0123456789abcdef"
	tests := []struct {
		name   string
		secret *corev1.Secret
		token  string
		ok     bool
	}{
		{"valid", secret(nil), token, true},
		{"wrong secret", secret(nil), "abcdef.0123456789abcdeX", false},
		{"expired", secret(func(s *corev1.Secret) { s.Data["expiration"] = []byte("2026-05-01T11:59:59Z") }), token, false},
		{"not for authentication", secret(func(s *corev1.Secret) { delete(s.Data, "usage-bootstrap-authentication") }), token, false},
		{"wrong type", secret(func(s *corev1.Secret) { s.Type = corev1.SecretTypeOpaque }), token, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u, err := bootstrapTokenUser(tc.secret, tc.token, now)
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v, want ok=%v", err, tc.ok)
			}
			if !tc.ok {
				return
			}
			want := []string{"system:bootstrappers", "system:bootstrappers:kubeadm:default-node-token", endpoints.GroupAuthenticated}
			if u.Username != "system:bootstrap:abcdef" || !slices.Equal(u.Groups, want) {
				t.Errorf("user = %s %v, want system:bootstrap:abcdef %v", u.Username, u.Groups, want)
			}
		})
	}
}

func TestX509User(t *testing.T) {
	cert := &x509.Certificate{Subject: pkix.Name{CommonName: "system:node:w1", Organization: []string{"system:nodes"}}}
	if _, ok := x509User(&tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}}); ok {
		t.Error("an unverified certificate authenticated")
	}
	u, ok := x509User(&tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{cert}}})
	if !ok || u.Username != "system:node:w1" || !slices.Equal(u.Groups, []string{"system:nodes", endpoints.GroupAuthenticated}) {
		t.Errorf("user = %v %v, want system:node:w1 in system:nodes", u, ok)
	}
}

// fakeGraph binds pods (namespace/name) to nodes.
type fakeGraph map[string]*corev1.Pod

func (g fakeGraph) podNode(_ context.Context, ns, name string) (string, error) {
	if p, ok := g[ns+"/"+name]; ok {
		return p.Spec.NodeName, nil
	}
	return "", nil
}

func (g fakeGraph) podsOn(_ context.Context, ns, node string) ([]*corev1.Pod, error) {
	var out []*corev1.Pod
	for _, p := range g {
		if p.Namespace == ns && p.Spec.NodeName == node {
			out = append(out, p)
		}
	}
	return out, nil
}

// denyAll is the RBAC a node has nothing from.
type denyAll struct{ endpoints.AllowAll }

func (denyAll) Authorize(context.Context, authorizationv1.SubjectAccessReviewSpec) (bool, string, error) {
	return false, "", nil
}

func TestNodeAuthorizer(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: corev1.PodSpec{NodeName: "w1",
		ServiceAccountName: "sa", Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}}},
		Containers: []corev1.Container{{Name: "c", EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}}}}}}
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "q"}, Spec: corev1.PodSpec{NodeName: "w2"}}
	authz := nodeAuthorizer{next: denyAll{}, graph: fakeGraph{"ns/p": pod, "ns/q": other}}
	tests := []struct {
		user                                     string
		verb, group, resource, sub, namespace, n string
		want                                     bool
	}{
		{"system:node:w1", "get", "", "secrets", "", "ns", "s", true},
		{"system:node:w2", "get", "", "secrets", "", "ns", "s", false},
		{"system:node:w1", "list", "", "secrets", "", "ns", "", false},
		{"system:node:w1", "get", "", "configmaps", "", "ns", "cm", true},
		{"system:node:w1", "create", "", "serviceaccounts", "token", "ns", "sa", true},
		{"system:node:w1", "update", "", "pods", "status", "ns", "p", true},
		{"system:node:w1", "update", "", "pods", "status", "ns", "q", false},
		{"system:node:w1", "delete", "", "pods", "", "ns", "q", false},
		{"system:node:w1", "watch", "", "pods", "", "", "", true},
		{"system:node:w1", "patch", "", "nodes", "status", "", "w1", true},
		{"system:node:w1", "delete", "", "nodes", "", "", "w2", false},
		{"system:node:w1", "update", "coordination.k8s.io", "leases", "", "kube-node-lease", "w1", true},
		{"system:node:w1", "update", "coordination.k8s.io", "leases", "", "kube-node-lease", "w2", false},
		{"system:node:w1", "create", "certificates.k8s.io", "certificatesigningrequests", "", "", "", true},
		{"system:node:w1", "get", "batch", "jobs", "", "ns", "j", false},
		{"someone", "get", "", "secrets", "", "ns", "s", false},
	}
	for _, tc := range tests {
		groups := []string{GroupNodes, endpoints.GroupAuthenticated}
		ok, _, err := authz.Authorize(context.Background(), authorizationv1.SubjectAccessReviewSpec{User: tc.user, Groups: groups,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: tc.verb, Group: tc.group, Resource: tc.resource,
				Subresource: tc.sub, Namespace: tc.namespace, Name: tc.n}})
		if err != nil || ok != tc.want {
			t.Errorf("%s %s %s/%s %s/%s = %v, %v; want %v", tc.user, tc.verb, tc.resource, tc.sub, tc.namespace, tc.n, ok, err, tc.want)
		}
	}
}
