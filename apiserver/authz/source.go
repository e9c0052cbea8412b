package authz

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// rbacSource reads RBAC objects for the RBAC authorizer.
type rbacSource struct{ r Reader }

func (s rbacSource) list(ctx context.Context, resource, namespace string) ([]runtime.Object, error) {
	items, err := s.r.List(ctx, rbacv1.SchemeGroupVersion.WithResource(resource), namespace, fields.Everything())
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", resource, err)
	}
	return items, nil
}

func (s rbacSource) ClusterRoleBindings(ctx context.Context) ([]*rbacv1.ClusterRoleBinding, error) {
	items, err := s.list(ctx, "clusterrolebindings", "")
	out := make([]*rbacv1.ClusterRoleBinding, 0, len(items))
	for _, o := range items {
		out = append(out, o.(*rbacv1.ClusterRoleBinding))
	}
	return out, err
}

func (s rbacSource) RoleBindings(ctx context.Context, namespace string) ([]*rbacv1.RoleBinding, error) {
	items, err := s.list(ctx, "rolebindings", namespace)
	out := make([]*rbacv1.RoleBinding, 0, len(items))
	for _, o := range items {
		out = append(out, o.(*rbacv1.RoleBinding))
	}
	return out, err
}

func (s rbacSource) ClusterRole(ctx context.Context, name string) (*rbacv1.ClusterRole, error) {
	obj, err := s.get(ctx, "clusterroles", "clusterrole", "", name)
	if err != nil {
		return nil, err
	}
	return obj.(*rbacv1.ClusterRole), nil
}

func (s rbacSource) Role(ctx context.Context, namespace, name string) (*rbacv1.Role, error) {
	obj, err := s.get(ctx, "roles", "role", namespace, name)
	if err != nil {
		return nil, err
	}
	return obj.(*rbacv1.Role), nil
}

// get reads one role; a missing one is the lister's NotFound upstream's
// authorizer reports (`clusterrole.rbac.authorization.k8s.io "x" not
// found`).
func (s rbacSource) get(ctx context.Context, resource, singular, namespace, name string) (runtime.Object, error) {
	obj, err := s.r.Get(ctx, rbacv1.SchemeGroupVersion.WithResource(resource), namespace, name)
	if apierrors.IsNotFound(err) {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: rbacv1.GroupName, Resource: singular}, name)
	}
	return obj, err
}

// readerGraph answers NodeGraph from a Reader.
type readerGraph struct{ r Reader }

var podsGVR = corev1.SchemeGroupVersion.WithResource("pods")

func (g readerGraph) PodNode(ctx context.Context, namespace, name string) (string, error) {
	obj, err := g.r.Get(ctx, podsGVR, namespace, name)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("get pod %s/%s: %w", namespace, name, err)
	}
	return obj.(*corev1.Pod).Spec.NodeName, nil
}

func (g readerGraph) PodsOn(ctx context.Context, namespace, node string) ([]*corev1.Pod, error) {
	items, err := g.r.List(ctx, podsGVR, namespace, fields.OneTermEqualSelector("spec.nodeName", node))
	if err != nil {
		return nil, fmt.Errorf("list pods of node %s: %w", node, err)
	}
	out := make([]*corev1.Pod, 0, len(items))
	for _, o := range items {
		out = append(out, o.(*corev1.Pod))
	}
	return out, nil
}
