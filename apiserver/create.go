package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/batchlet/batchlet/apiserver/endpoints"
	certificatesv1 "k8s.io/api/certificates/v1"

	"github.com/batchlet/batchlet/apiserver/genericstore"

	"github.com/batchlet/batchlet/apiserver/registry"
	"github.com/batchlet/batchlet/apiserver/validation"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func (s *Server) handleCreate(w http.ResponseWriter, r *http.Request, info endpoints.RequestInfo) {
	res := info.Res
	obj := res.New()
	if err := s.codec.DecodeBody(w, r, res.GVK(), obj); err != nil {
		endpoints.WriteError(w, err)
		return
	}
	m := genericstore.Accessor(obj)
	if res.Namespaced {
		if m.GetNamespace() == "" {
			m.SetNamespace(info.Namespace)
		}
		if m.GetNamespace() != info.Namespace {
			endpoints.WriteError(w, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request"))
			return
		}
	} else {
		m.SetNamespace("")
	}
	if csr, ok := obj.(*certificatesv1.CertificateSigningRequest); ok {
		stampRequester(csr, userOf(r.Context()))
	}
	out, err := s.createObject(r.Context(), res, obj, isDryRun(r))
	if err != nil {
		endpoints.WriteError(w, err)
		return
	}
	s.codec.WriteObject(w, r, res, http.StatusCreated, out)
}

func isDryRun(r *http.Request) bool {
	for _, v := range r.URL.Query()["dryRun"] {
		if v == "All" {
			return true
		}
	}
	return false
}

// createObject runs admission, defaulting and validation and stores obj.
func (s *Server) createObject(ctx context.Context, res *registry.Resource, obj runtime.Object, dryRun bool) (runtime.Object, error) {
	m := genericstore.Accessor(obj)
	if res.CustomResource && s.served.isTerminating(res.Definition) {
		return nil, apierrors.NewForbidden(res.GroupResource(), m.GetName(), errors.New("create not allowed while custom resource definition is terminating"))
	}
	if res.Namespaced {
		if err := s.admitNamespace(ctx, res, m.GetNamespace(), m.GetName()); err != nil {
			return nil, err
		}
	}
	generated := false
	if m.GetName() == "" && m.GetGenerateName() != "" {
		m.SetName(m.GetGenerateName() + utilrand.String(5))
		generated = true
	}
	m.SetUID(uuid.NewUUID())
	m.SetCreationTimestamp(metav1.NewTime(s.clock.Now()))
	m.SetResourceVersion("")
	m.SetDeletionTimestamp(nil)
	m.SetDeletionGracePeriodSeconds(nil)
	m.SetGeneration(0)
	if res.HasSpec {
		m.SetGeneration(1)
	}
	// The request's manager owns what it sent, not what the strategy adds
	// (a Job's generated selector and template labels): kube-apiserver
	// records managedFields before the strategy, and an applier taking
	// over would otherwise drop those fields.
	empty := res.New()
	empty.GetObjectKind().SetGroupVersionKind(res.GVK())
	obj = s.trackManager(ctx, res, false, empty, obj)
	m = genericstore.Accessor(obj)
	if res.PrepareForCreate != nil {
		res.PrepareForCreate(obj)
	}
	if pod, ok := obj.(*corev1.Pod); ok {
		if err := s.admitServiceAccount(ctx, pod); err != nil {
			return nil, err
		}
	}
	if errs := s.validateCreate(res, obj); len(errs) > 0 {
		return nil, apierrors.NewInvalid(res.GVK().GroupKind(), m.GetName(), errs)
	}
	if svc, ok := obj.(*corev1.Service); ok {
		unlock, err := s.allocateClusterIP(ctx, svc)
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
		rename = func() { m.SetName(m.GetGenerateName() + utilrand.String(5)) }
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

func (s *Server) validateCreate(res *registry.Resource, obj runtime.Object) field.ErrorList {
	if res.ValidateChecksMeta {
		// Validate makes the metadata checks itself; as upstream's
		// BeforeCreate, its errors are the answer, each listed once.
		return res.Validate(obj)
	}
	errs := s.metaErrors(res, obj)
	if res.Validate != nil {
		errs = append(errs, res.Validate(obj)...)
	}
	return errs
}

// metaErrors are the object-meta checks of a create.
func (s *Server) metaErrors(res *registry.Resource, obj runtime.Object) field.ErrorList {
	m := genericstore.Accessor(obj)
	var om *metav1.ObjectMeta
	if oma, ok := obj.(metav1.ObjectMetaAccessor); ok {
		om, _ = oma.GetObjectMeta().(*metav1.ObjectMeta)
	}
	var errs field.ErrorList
	if om != nil {
		// The same checks basicNameErrors makes (same name rule).
		errs = append(errs, validation.ValidateObjectMeta(om, res.Namespaced, !res.NameIsLabel, field.NewPath("metadata"))...)
	} else {
		errs = append(errs, basicNameErrors(res, m)...)
	}
	return errs
}

// admitNamespace rejects content in missing or terminating namespaces.
func (s *Server) admitNamespace(ctx context.Context, res *registry.Resource, namespace, name string) error {
	if namespace == "" {
		return apierrors.NewBadRequest("the server could not find the requested resource: namespace is required")
	}
	nsRes := s.resource("", "v1", "namespaces")
	obj, _, err := s.objects.GetShared(ctx, nsRes, "", namespace) // only read: no decode per create
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

// basicNameErrors is apimachinery's object-meta validation, the fallback
// when the validation package reports nothing.
func basicNameErrors(res *registry.Resource, m metav1.Object) field.ErrorList {
	nameFn := apivalidation.NameIsDNSSubdomain
	if res.NameIsLabel {
		nameFn = apivalidation.NameIsDNSLabel
	}
	return apivalidation.ValidateObjectMetaAccessor(m, res.Namespaced, nameFn, field.NewPath("metadata"))
}
