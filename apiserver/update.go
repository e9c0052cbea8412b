package apiserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"

	"github.com/batchlet/batchlet/apiserver/patch"
	"github.com/batchlet/batchlet/apiserver/registry"
	"github.com/batchlet/batchlet/apiserver/validation"
	"github.com/batchlet/batchlet/storage"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const maxUpdateAttempts = 16

// updateMode selects the strategy hooks of an update.
type updateMode int

const (
	modeMain   updateMode = iota // PUT/PATCH of the main resource
	modeStatus                   // the status subresource
	modeRaw                      // server-internal writes (binding): no strategy
)

func (s *Server) handleUpdate(w http.ResponseWriter, r *http.Request, info requestInfo, mode updateMode) {
	res := info.Res
	body := res.New()
	if err := s.decodeBody(w, r, res.GVK(), body); err != nil {
		s.writeError(w, err)
		return
	}
	m := accessor(body)
	if m.GetName() != info.Name {
		s.writeError(w, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", m.GetName(), info.Name)))
		return
	}
	if res.Namespaced && m.GetNamespace() != "" && m.GetNamespace() != info.Namespace {
		s.writeError(w, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request"))
		return
	}
	out, err := s.updateReading(r.Context(), res, info.Namespace, info.Name, mode, isDryRun(r), func(runtime.Object) (runtime.Object, error) {
		return body.DeepCopyObject(), nil
	})
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.writeObject(w, r, res, http.StatusOK, out)
}

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
	for attempt := 0; attempt < maxUpdateAttempts; attempt++ {
		cur, kv, err := s.getShared(ctx, res, namespace, name)
		if err != nil {
			return nil, err
		}
		obj, err := mutate(cur)
		if err != nil {
			return nil, err
		}
		nm, cm := accessor(obj), accessor(cur)
		if rv := nm.GetResourceVersion(); rv != "" && rv != cm.GetResourceVersion() {
			return nil, conflictModified(res.GroupResource(), name)
		}
		unconditional := nm.GetResourceVersion() == ""
		if manager, _ := ctx.Value(ctxFieldManager).(string); manager == "" && mode != modeRaw {
			patch.KeepManagedFields(cur, obj)
		}
		if err := s.prepareUpdate(res, obj, cur, mode); err != nil {
			return nil, err
		}
		if mode != modeRaw {
			obj = s.trackManager(ctx, res, mode == modeStatus, cur, obj)
		}
		if dryRun {
			return obj, nil
		}
		out, err := s.writeUpdate(ctx, res, obj, cur, kv)
		if errors.Is(err, errRetry) {
			if unconditional {
				continue
			}
			return nil, conflictModified(res.GroupResource(), name)
		}
		return out, err
	}
	return nil, conflictModified(res.GroupResource(), name)
}

var errRetry = errors.New("retry update")

// mayShare: the new object of a status update may share parts with the
// current (shared) one. Status strategies only put the old spec back and
// status validation only reads; a main-resource update defaults in place
// (pod spec, namespace labels), and the field manager rewrites the object.
func mayShare(ctx context.Context, mode updateMode) bool {
	manager, _ := ctx.Value(ctxFieldManager).(string)
	return mode == modeStatus && manager == ""
}

// prepareUpdate keeps immutable metadata, applies the strategy and validates.
func (s *Server) prepareUpdate(res *registry.Resource, obj, cur runtime.Object, mode updateMode) error {
	nm, cm := accessor(obj), accessor(cur)
	obj.GetObjectKind().SetGroupVersionKind(res.GVK())
	nm.SetName(cm.GetName())
	nm.SetNamespace(cm.GetNamespace())
	nm.SetUID(cm.GetUID())
	nm.SetCreationTimestamp(cm.GetCreationTimestamp())
	nm.SetDeletionTimestamp(cm.GetDeletionTimestamp())
	nm.SetDeletionGracePeriodSeconds(cm.GetDeletionGracePeriodSeconds())
	nm.SetGeneration(cm.GetGeneration())
	nm.SetResourceVersion(cm.GetResourceVersion())
	var errs field.ErrorList
	switch mode {
	case modeRaw:
	case modeStatus:
		if res.PrepareForStatusUpdate != nil {
			res.PrepareForStatusUpdate(obj, cur)
		}
		if res.ValidateStatusUpdate != nil {
			errs = res.ValidateStatusUpdate(obj, cur)
		}
	default:
		if res.PrepareForUpdate != nil {
			res.PrepareForUpdate(obj, cur)
		}
		changed := res.HasSpec && specChanged(obj, cur)
		if changed {
			nm.SetGeneration(cm.GetGeneration() + 1)
		}
		switch {
		case res.HasSpec && res.ValidateUpdateSpecKnown != nil:
			errs = res.ValidateUpdateSpecKnown(obj, cur, !changed)
		case res.ValidateUpdate != nil:
			errs = res.ValidateUpdate(obj, cur)
		}
	}
	if !res.ValidateUpdateChecksMeta || mode == modeRaw {
		errs = append(apivalidation.ValidateObjectMetaAccessorUpdate(validation.UnchangedHidden(nm, cm), cm, field.NewPath("metadata")), errs...)
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(res.GVK().GroupKind(), cm.GetName(), errs)
	}
	return nil
}

func specChanged(a, b runtime.Object) bool {
	av := reflect.ValueOf(a).Elem().FieldByName("Spec")
	bv := reflect.ValueOf(b).Elem().FieldByName("Spec")
	if !av.IsValid() || !bv.IsValid() {
		return false
	}
	return !equality.Semantic.DeepEqual(av.Interface(), bv.Interface())
}

// writeUpdate stores obj over cur (read at kv), or deletes it when its
// deletion is due (deletionTimestamp set, no finalizers left).
func (s *Server) writeUpdate(ctx context.Context, res *registry.Resource, obj, cur runtime.Object, kv storage.KeyValue) (runtime.Object, error) {
	if s.deletionDue(res, obj) {
		rev, _, err := s.store.Delete(ctx, kv.Key, kv.ModRevision)
		return s.written(res, obj, rev, err)
	}
	data, err := encodeForStorage(res, obj)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if bytes.Equal(data, kv.Value) {
		return cur.DeepCopyObject(), nil
	}
	rev, err := s.store.UpdateOwned(ctx, kv.Key, data, kv.ModRevision)
	return s.written(res, obj, rev, err)
}

// written finishes a conditional write of obj at revision rev: a lost race
// is errRetry, another storage error the API error for it, and success gives
// obj its new resourceVersion.
func (s *Server) written(res *registry.Resource, obj runtime.Object, rev int64, err error) (runtime.Object, error) {
	m := accessor(obj)
	if errors.Is(err, storage.ErrConflict) {
		return nil, errRetry
	}
	if err != nil {
		return nil, s.storageError(err, res, m.GetName())
	}
	m.SetResourceVersion(strconv.FormatInt(rev, 10))
	return obj, nil
}

// deletionDue: an object being deleted goes once its finalizers are gone,
// unless a graceful deletion is still pending (a pod waiting for its agent,
// which finishes it with a zero-grace delete).
func (s *Server) deletionDue(res *registry.Resource, obj runtime.Object) bool {
	m := accessor(obj)
	if m.GetDeletionTimestamp() == nil || len(m.GetFinalizers()) > 0 {
		return false
	}
	g := m.GetDeletionGracePeriodSeconds()
	return g == nil || *g == 0
}
