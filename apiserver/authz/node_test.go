package authz

import (
	"context"
	"testing"

	"github.com/batchlet/batchlet/apiserver/authn"
	"github.com/batchlet/batchlet/apiserver/endpoints"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fakeGraph binds pods (namespace/name) to nodes.
type fakeGraph map[string]*corev1.Pod

func (g fakeGraph) PodNode(_ context.Context, ns, name string) (string, error) {
	if p, ok := g[ns+"/"+name]; ok {
		return p.Spec.NodeName, nil
	}
	return "", nil
}

func (g fakeGraph) PodsOn(_ context.Context, ns, node string) ([]*corev1.Pod, error) {
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
	authz := Node{Next: denyAll{}, Graph: fakeGraph{"ns/p": pod, "ns/q": other}}
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
		groups := []string{authn.GroupNodes, endpoints.GroupAuthenticated}
		ok, _, err := authz.Authorize(context.Background(), authorizationv1.SubjectAccessReviewSpec{User: tc.user, Groups: groups,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: tc.verb, Group: tc.group, Resource: tc.resource,
				Subresource: tc.sub, Namespace: tc.namespace, Name: tc.n}})
		if err != nil || ok != tc.want {
			t.Errorf("%s %s %s/%s %s/%s = %v, %v; want %v", tc.user, tc.verb, tc.resource, tc.sub, tc.namespace, tc.n, ok, err, tc.want)
		}
	}
}
