package admission

import (
	"context"
	"errors"
	"fmt"

	"github.com/batchlet/batchlet/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NamespaceLifecycle rejects new content in missing or terminating
// namespaces (events excepted, so the deletion can still be reported).
type NamespaceLifecycle struct {
	Objects Objects
}

// Admit checks the create of name, of namespaced resource res, in namespace.
func (p NamespaceLifecycle) Admit(ctx context.Context, res *registry.Resource, namespace, name string) error {
	if namespace == "" {
		return apierrors.NewBadRequest("the server could not find the requested resource: namespace is required")
	}
	obj, err := p.Objects.Get(ctx, corev1.SchemeGroupVersion.WithResource("namespaces"), "", namespace)
	if err != nil {
		return err
	}
	ns := obj.(*corev1.Namespace)
	if ns.DeletionTimestamp != nil || ns.Status.Phase == corev1.NamespaceTerminating {
		if res.GVR.Resource == "events" {
			return nil
		}
		return apierrors.NewForbidden(res.GroupResource(), name,
			fmt.Errorf("unable to create new content in namespace %s because it is being terminated", namespace))
	}
	return nil
}

// AdmitDelete refuses the delete of the namespaces the cluster cannot do
// without (default, kube-system, kube-public), as NamespaceLifecycle's
// immortal namespaces upstream.
func (NamespaceLifecycle) AdmitDelete(res *registry.Resource, name string) error {
	if res.GVR.Group != "" || res.GVR.Resource != "namespaces" {
		return nil
	}
	switch name {
	case metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic:
		return apierrors.NewForbidden(res.GroupResource(), name, errors.New("this namespace may not be deleted"))
	}
	return nil
}
