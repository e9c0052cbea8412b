package apiserver

import (
	"context"
	"errors"
	"fmt"

	"github.com/batchlet/batchlet/apiserver/genericstore"

	"github.com/batchlet/batchlet/apiserver/registry"
	"github.com/batchlet/batchlet/apiserver/registry/strategy"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// deleteObject deletes or marks for deletion. deleted says the object is gone.
func (s *Server) deleteObject(ctx context.Context, res *registry.Resource, namespace, name string, opts *metav1.DeleteOptions) (runtime.Object, bool, error) {
	for attempt := 0; attempt < genericstore.MaxUpdateAttempts; attempt++ {
		cur, kv, err := s.objects.Get(ctx, res, namespace, name)
		if err != nil {
			return nil, false, err
		}
		if err := checkPreconditions(res, cur, opts.Preconditions); err != nil {
			return nil, false, err
		}
		obj := cur.DeepCopyObject()
		if res.GVR.Group == "" && res.GVR.Resource == "namespaces" {
			if err := s.admit.namespace.AdmitDelete(res, name); err != nil {
				return nil, false, err
			}
			out, err := s.markNamespaceDeleting(ctx, res, obj, kv, opts)
			if errors.Is(err, genericstore.ErrRetry) {
				continue
			}
			return out, false, err
		}
		pending := strategy.For(res, s.clock).PrepareForDelete(obj, opts)
		if len(opts.DryRun) > 0 {
			return obj, !pending, nil
		}
		if pending {
			out, err := s.objects.Write(ctx, res, obj, cur, kv)
			if errors.Is(err, genericstore.ErrRetry) {
				continue
			}
			if err != nil {
				return nil, false, err
			}
			return out, genericstore.Accessor(out).GetDeletionTimestamp() != nil && genericstore.DeletionDue(out), nil
		}
		out, err := s.objects.Delete(ctx, res, obj, kv)
		if errors.Is(err, genericstore.ErrRetry) {
			continue
		}
		if err != nil {
			return nil, false, err
		}
		return out, true, nil
	}
	return nil, false, genericstore.ConflictModified(res.GroupResource(), name)
}

func checkPreconditions(res *registry.Resource, obj runtime.Object, p *metav1.Preconditions) error {
	if p == nil {
		return nil
	}
	m := genericstore.Accessor(obj)
	if p.UID != nil && *p.UID != m.GetUID() {
		return genericstore.UIDPreconditionFailed(res.GroupResource(), m.GetName(), *p.UID, m.GetUID())
	}
	if p.ResourceVersion != nil && *p.ResourceVersion != m.GetResourceVersion() {
		return apierrors.NewConflict(res.GroupResource(), m.GetName(),
			//lint:ignore ST1005 upstream's exact message, shown to users in the Status
			fmt.Errorf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *p.ResourceVersion, m.GetResourceVersion()))
	}
	return nil
}
