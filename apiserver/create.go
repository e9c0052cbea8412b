package apiserver

import (
	"context"
	"errors"
	"net/http"

	"github.com/batchlet/batchlet/apiserver/endpoints"
	"github.com/batchlet/batchlet/apiserver/query"

	"github.com/batchlet/batchlet/apiserver/genericstore"

	"github.com/batchlet/batchlet/apiserver/registry"
	"github.com/batchlet/batchlet/apiserver/registry/strategy"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
)

func isDryRun(r *http.Request) bool { return query.DryRun(r.URL.Query()) }

// createObject runs admission, defaulting and validation and stores obj.
func (s *Server) createObject(ctx context.Context, res *registry.Resource, obj runtime.Object, dryRun bool) (runtime.Object, error) {
	m := genericstore.Accessor(obj)
	if res.CustomResource && s.served.IsTerminating(res.Definition) {
		return nil, apierrors.NewForbidden(res.GroupResource(), m.GetName(), errors.New("create not allowed while custom resource definition is terminating"))
	}
	if res.Namespaced {
		if err := s.admit.namespace.Admit(ctx, res, m.GetNamespace(), m.GetName()); err != nil {
			return nil, err
		}
	}
	strategy.SetRequester(obj, endpoints.UserOf(ctx))
	st := strategy.For(res, s.clock)
	generated := st.InitMeta(obj)
	// The request's manager owns what it sent, not what the strategy adds
	// (a Job's generated selector and template labels): kube-apiserver
	// records managedFields before the strategy, and an applier taking
	// over would otherwise drop those fields.
	empty := res.New()
	empty.GetObjectKind().SetGroupVersionKind(res.GVK())
	obj = s.trackManager(ctx, res, false, empty, obj)
	m = genericstore.Accessor(obj)
	st.PrepareForCreate(obj)
	if pod, ok := obj.(*corev1.Pod); ok && s.admit.serviceAccount != nil {
		if err := s.admit.serviceAccount.Admit(ctx, pod); err != nil {
			return nil, err
		}
	}
	if errs := st.Validate(obj); len(errs) > 0 {
		return nil, apierrors.NewInvalid(res.GVK().GroupKind(), m.GetName(), errs)
	}
	if svc, ok := obj.(*corev1.Service); ok {
		unlock, err := s.admit.clusterIPs.Allocate(ctx, svc)
		if err != nil {
			return nil, err
		}
		defer unlock()
	}
	if dryRun {
		return obj, nil
	}
	var rename func()
	if generated {
		rename = func() { m.SetName(strategy.GenerateName(m)) }
	}
	obj, err := s.objects.Create(ctx, res, obj, rename)
	if err != nil {
		return nil, err
	}
	if res.GVR.Resource == "namespaces" && res.GVR.Group == "" {
		s.ensureDefaultServiceAccount(ctx, m.GetName())
	}
	return obj, nil
}
