package runner

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
)

// submitted is one object the runner created (or is about to).
type submitted struct {
	obj     *unstructured.Unstructured
	mapping *meta.RESTMapping
}

func (s submitted) client(dyn dynamic.Interface) dynamic.ResourceInterface {
	ri := dyn.Resource(s.mapping.Resource)
	if s.mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		return ri.Namespace(s.obj.GetNamespace())
	}
	return ri
}

// InputError is a manifest the API refused (validation, unknown kind or
// field, name clash). It maps to exit code 2.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// strictCreate is how every object is created: unknown and duplicate fields
// are refused, as kubectl's default --validate=strict asks the server to.
func strictCreate(dryRun bool) metav1.CreateOptions {
	opts := metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	return opts
}

// submit creates every object in order. A bad manifest changes nothing: the
// whole manifest is first checked by the server in a dry run, and should a
// create still be refused, what was already created is deleted again.
func submit(ctx context.Context, dyn dynamic.Interface, mapper meta.RESTMapper, objs []*unstructured.Unstructured, namespace, source string) ([]submitted, error) {
	plan, err := mapAll(mapper, objs, namespace, source)
	if err != nil {
		return nil, err
	}
	if err := dryRun(ctx, dyn, plan, source); err != nil {
		return nil, err
	}
	var done []submitted
	for _, s := range plan {
		created, err := s.client(dyn).Create(ctx, s.obj, strictCreate(false))
		if err != nil {
			cleanup(context.WithoutCancel(ctx), dyn, done, false)
			return nil, describeCreateError(err, source)
		}
		done = append(done, submitted{obj: created, mapping: s.mapping})
	}
	return done, nil
}

// mapAll finds the resource of every object and gives namespaced objects
// that name no namespace the run's namespace.
func mapAll(mapper meta.RESTMapper, objs []*unstructured.Unstructured, namespace, source string) ([]submitted, error) {
	plan := make([]submitted, 0, len(objs))
	for _, obj := range objs {
		gvk := obj.GroupVersionKind()
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return nil, &InputError{fmt.Errorf("resource mapping not found for name: %q namespace: %q from %q: no matches for kind %q in version %q\nensure CRDs are installed first", obj.GetName(), obj.GetNamespace(), source, gvk.Kind, gvk.GroupVersion().String())}
		}
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace && obj.GetNamespace() == "" {
			obj.SetNamespace(namespace)
		}
		plan = append(plan, submitted{obj: obj, mapping: mapping})
	}
	return plan, nil
}

// dryRun has the server decode, default, validate and admit every object
// without storing it. Objects in a namespace the manifest itself creates
// cannot be checked before it exists; their create is still strict.
func dryRun(ctx context.Context, dyn dynamic.Interface, plan []submitted, source string) error {
	created := map[string]bool{}
	for _, s := range plan {
		if s.obj.GetKind() == "Namespace" && s.obj.GetAPIVersion() == "v1" {
			created[s.obj.GetName()] = true
		}
	}
	for _, s := range plan {
		if created[s.obj.GetNamespace()] {
			continue
		}
		if _, err := s.client(dyn).Create(ctx, s.obj, strictCreate(true)); err != nil {
			return describeCreateError(err, source)
		}
	}
	return nil
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

// goneTimeout bounds how long cleanup waits for deleted objects to go.
const goneTimeout = 60 * time.Second

// cleanup deletes created objects, newest first, with their dependents
// (pods of a Job, Jobs of a JobSet), ignoring objects already gone (TTL).
// With wait it deletes in the foreground and returns once the objects and
// their dependents are gone, so the same manifest can be submitted again at
// once; it reports what is still there when goneTimeout passes.
func cleanup(ctx context.Context, dyn dynamic.Interface, objs []submitted, wait bool) []string {
	policy := metav1.DeletePropagationBackground
	if wait {
		policy = metav1.DeletePropagationForeground
	}
	var deleting []submitted
	for i := len(objs) - 1; i >= 0; i-- {
		o := objs[i]
		err := o.client(dyn).Delete(ctx, o.obj.GetName(), metav1.DeleteOptions{PropagationPolicy: &policy})
		if err == nil {
			deleting = append(deleting, o)
		}
	}
	if !wait {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, goneTimeout)
	defer cancel()
	var left []string
	for _, o := range deleting {
		if err := waitGone(ctx, o.client(dyn), o.obj); err != nil {
			left = append(left, fmt.Sprintf("%s/%s", kindResource(o), o.obj.GetName()))
		}
	}
	return left
}

// waitGone watches obj until it is deleted (a foreground deletion ends once
// its dependents are gone).
func waitGone(ctx context.Context, ri dynamic.ResourceInterface, obj *unstructured.Unstructured) error {
	sel := fields.OneTermEqualSelector("metadata.name", obj.GetName()).String()
	list, err := ri.List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return err
	}
	if !stillThere(list.Items, obj) {
		return nil
	}
	w, err := ri.Watch(ctx, metav1.ListOptions{FieldSelector: sel, ResourceVersion: list.GetResourceVersion()})
	if err != nil {
		return err
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev, ok := <-w.ResultChan():
			if !ok {
				return fmt.Errorf("watch of %s ended", obj.GetName())
			}
			if u, isObj := ev.Object.(*unstructured.Unstructured); ev.Type == watch.Deleted && isObj && u.GetUID() == obj.GetUID() {
				return nil
			}
		}
	}
}

func stillThere(items []unstructured.Unstructured, obj *unstructured.Unstructured) bool {
	for _, it := range items {
		if it.GetUID() == obj.GetUID() {
			return true
		}
	}
	return false
}
