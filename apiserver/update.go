package apiserver

import (
	"context"

	"github.com/batchlet/batchlet/apiserver/endpoints"

	"github.com/batchlet/batchlet/apiserver/genericstore"

	"github.com/batchlet/batchlet/apiserver/patch"
	"github.com/batchlet/batchlet/apiserver/registry"
	"github.com/batchlet/batchlet/apiserver/registry/strategy"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
)

// updateMode selects the strategy hooks of an update.
type updateMode = strategy.Mode

const (
	modeMain   = strategy.Main   // PUT/PATCH of the main resource
	modeStatus = strategy.Status // the status subresource
	modeRaw    = strategy.Raw    // server-internal writes (binding): no strategy
)

// mutateFunc builds the new object from (a copy of) the current one. A
// resourceVersion left on the result is a precondition.
type mutateFunc func(cur runtime.Object) (runtime.Object, error)

// updateObject is a guaranteed update: read, mutate, prepare, validate and
// write with the read revision, retrying unconditional updates on conflict.
// The current object is the shared decoded copy of its version: it is only
// read (mutate gets a deep copy) and never returned.
func (s *Server) updateObject(ctx context.Context, res *registry.Resource, namespace, name string, mode updateMode, dryRun bool, mutate mutateFunc) (runtime.Object, error) {
	return s.updateReading(ctx, res, namespace, name, mode, dryRun, func(cur runtime.Object) (runtime.Object, error) {
		return mutate(cur.DeepCopyObject())
	})
}

// updateReading is updateObject for a mutate that only reads the current
// object (the shared copy) and returns a new one; it must not return cur
// itself, and what it shares with cur must survive the strategy (see
// mayShare).
func (s *Server) updateReading(ctx context.Context, res *registry.Resource, namespace, name string, mode updateMode, dryRun bool, mutate mutateFunc) (runtime.Object, error) {
	return s.objects.GuaranteedUpdate(ctx, res, namespace, name, dryRun, mutate, func(obj, cur runtime.Object) (runtime.Object, error) {
		if endpoints.FieldManagerOf(ctx) == "" && mode != modeRaw {
			patch.KeepManagedFields(cur, obj)
		}
		if err := s.prepareUpdate(res, obj, cur, mode); err != nil {
			return nil, err
		}
		if mode != modeRaw {
			obj = s.trackManager(ctx, res, mode == modeStatus, cur, obj)
		}
		return obj, nil
	})
}

// prepareUpdate keeps immutable metadata, applies the strategy and validates.
func (s *Server) prepareUpdate(res *registry.Resource, obj, cur runtime.Object, mode updateMode) error {
	st := strategy.For(res, s.clock)
	specChanged := st.PrepareForUpdate(obj, cur, mode)
	if errs := st.ValidateUpdate(obj, cur, mode, specChanged); len(errs) > 0 {
		return apierrors.NewInvalid(res.GVK().GroupKind(), genericstore.Accessor(cur).GetName(), errs)
	}
	return nil
}
