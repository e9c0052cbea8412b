package runner

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
)

// submitted is one object the runner created.
type submitted struct {
	obj     *unstructured.Unstructured
	mapping *meta.RESTMapping
}

// InputError is a manifest the API refused (validation, unknown kind, name
// clash). It maps to exit code 2.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// submit creates every object in order. On the first refusal it deletes what
// it already created, so a bad manifest changes nothing.
func submit(ctx context.Context, dyn dynamic.Interface, mapper meta.RESTMapper, objs []*unstructured.Unstructured, namespace, source string) ([]submitted, error) {
	var done []submitted
	for _, obj := range objs {
		gvk := obj.GroupVersionKind()
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			cleanup(context.Background(), dyn, done)
			return nil, &InputError{fmt.Errorf("resource mapping not found for name: %q namespace: %q from %q: no matches for kind %q in version %q\nensure CRDs are installed first", obj.GetName(), obj.GetNamespace(), source, gvk.Kind, gvk.GroupVersion().String())}
		}
		ri := dyn.Resource(mapping.Resource)
		var created *unstructured.Unstructured
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			if obj.GetNamespace() == "" {
				obj.SetNamespace(namespace)
			}
			created, err = ri.Namespace(obj.GetNamespace()).Create(ctx, obj, metav1.CreateOptions{})
		} else {
			created, err = ri.Create(ctx, obj, metav1.CreateOptions{})
		}
		if err != nil {
			cleanup(context.Background(), dyn, done)
			return nil, describeCreateError(err, source)
		}
		done = append(done, submitted{obj: created, mapping: mapping})
	}
	return done, nil
}

// describeCreateError renders a refusal the way kubectl does.
func describeCreateError(err error, source string) error {
	if status, ok := err.(apierrors.APIStatus); ok {
		reason := status.Status().Reason
		if reason == "" {
			reason = metav1.StatusReasonUnknown
		}
		wrapped := fmt.Errorf("Error from server (%s): error when creating %q: %w", reason, source, err)
		switch {
		case apierrors.IsInvalid(err), apierrors.IsAlreadyExists(err), apierrors.IsBadRequest(err),
			apierrors.IsNotFound(err), apierrors.IsRequestEntityTooLargeError(err), apierrors.IsForbidden(err):
			return &InputError{wrapped}
		}
		return wrapped
	}
	return fmt.Errorf("error when creating %q: %w", source, err)
}

// cleanup deletes created objects and their dependents (background
// propagation), ignoring objects already gone.
func cleanup(ctx context.Context, dyn dynamic.Interface, objs []submitted) {
	policy := metav1.DeletePropagationBackground
	for i := len(objs) - 1; i >= 0; i-- {
		o := objs[i]
		ri := dyn.Resource(o.mapping.Resource)
		var err error
		if o.mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			err = ri.Namespace(o.obj.GetNamespace()).Delete(ctx, o.obj.GetName(), metav1.DeleteOptions{PropagationPolicy: &policy})
		} else {
			err = ri.Delete(ctx, o.obj.GetName(), metav1.DeleteOptions{PropagationPolicy: &policy})
		}
		_ = err // best effort: the object may be gone already (TTL)
	}
}
