package genericstore

import (
	"bytes"
	"context"
	"errors"
	"strconv"

	"github.com/batchlet/batchlet/apiserver/registry"
	"github.com/batchlet/batchlet/storage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
)

// MaxUpdateAttempts bounds the read-modify-write retries of one update or
// delete that keeps losing races.
const MaxUpdateAttempts = 16

// generateNameAttempts is how many names a create from generateName tries.
const generateNameAttempts = 9

// Create stores obj, a new object the caller admitted and validated, and
// gives it its resourceVersion. rename, when set (the name came from
// generateName), gives obj another name when its name is taken.
func (s *Store) Create(ctx context.Context, res *registry.Resource, obj runtime.Object, rename func()) (runtime.Object, error) {
	m := Accessor(obj)
	for attempt := 1; ; attempt++ {
		data, err := Encode(res, obj)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		rev, err := s.store.CreateOwned(ctx, ObjectKey(res, m.GetNamespace(), m.GetName()), data)
		if errors.Is(err, storage.ErrExists) && rename != nil && attempt < generateNameAttempts {
			rename()
			continue
		}
		if err != nil {
			return nil, s.storageError(err, res, m.GetName())
		}
		m.SetResourceVersion(strconv.FormatInt(rev, 10))
		return obj, nil
	}
}

// GuaranteedUpdate is a read-modify-write of one object, as the etcd3
// store's GuaranteedUpdate: it reads the object, has mutate build the new
// version from the current one (the shared decoded copy: read only, never
// to be returned), has prepare apply the caller's strategy and validation,
// and writes the result at the revision read. A write that loses a race is
// retried from a fresh read, unless mutate's result named a
// resourceVersion: that is a precondition, and a stale one is a conflict.
// With dryRun nothing is written.
func (s *Store) GuaranteedUpdate(ctx context.Context, res *registry.Resource, namespace, name string, dryRun bool,
	mutate func(cur runtime.Object) (runtime.Object, error), prepare func(obj, cur runtime.Object) (runtime.Object, error)) (runtime.Object, error) {
	for attempt := 0; attempt < MaxUpdateAttempts; attempt++ {
		cur, kv, err := s.GetShared(ctx, res, namespace, name)
		if err != nil {
			return nil, err
		}
		obj, err := mutate(cur)
		if err != nil {
			return nil, err
		}
		rv := Accessor(obj).GetResourceVersion()
		if rv != "" && rv != Accessor(cur).GetResourceVersion() {
			return nil, ConflictModified(res.GroupResource(), name)
		}
		if obj, err = prepare(obj, cur); err != nil {
			return nil, err
		}
		if dryRun {
			return obj, nil
		}
		out, err := s.Write(ctx, res, obj, cur, kv)
		if errors.Is(err, ErrRetry) {
			if rv == "" {
				continue
			}
			return nil, ConflictModified(res.GroupResource(), name)
		}
		return out, err
	}
	return nil, ConflictModified(res.GroupResource(), name)
}

// Write stores obj over cur (read at kv), or deletes it when its deletion
// is due (deletionTimestamp set, no finalizers left). An obj that encodes
// as kv's value changes nothing: a copy of cur comes back. ErrRetry: kv
// is no longer current.
func (s *Store) Write(ctx context.Context, res *registry.Resource, obj, cur runtime.Object, kv storage.KeyValue) (runtime.Object, error) {
	if DeletionDue(obj) {
		return s.Delete(ctx, res, obj, kv)
	}
	data, err := Encode(res, obj)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if bytes.Equal(data, kv.Value) {
		return cur.DeepCopyObject(), nil
	}
	rev, err := s.store.UpdateOwned(ctx, kv.Key, data, kv.ModRevision)
	return s.written(res, obj, rev, err)
}

// Replace stores obj over the version read at kv exactly as it is: no
// deletion when due, no skipping of an unchanged value (a namespace's own
// lifecycle writes). ErrRetry: kv is no longer current.
func (s *Store) Replace(ctx context.Context, res *registry.Resource, obj runtime.Object, kv storage.KeyValue) (runtime.Object, error) {
	data, err := Encode(res, obj)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	rev, err := s.store.Update(ctx, kv.Key, data, kv.ModRevision)
	return s.written(res, obj, rev, err)
}

// Delete removes obj, read at kv, from storage and gives it the revision
// of its deletion. ErrRetry: kv is no longer current.
func (s *Store) Delete(ctx context.Context, res *registry.Resource, obj runtime.Object, kv storage.KeyValue) (runtime.Object, error) {
	rev, _, err := s.store.Delete(ctx, kv.Key, kv.ModRevision)
	return s.written(res, obj, rev, err)
}

// DeletionDue: an object being deleted goes once its finalizers are gone,
// unless a graceful deletion is still pending (a pod waiting for its agent,
// which finishes it with a zero-grace delete).
func DeletionDue(obj runtime.Object) bool {
	m := Accessor(obj)
	if m.GetDeletionTimestamp() == nil || len(m.GetFinalizers()) > 0 {
		return false
	}
	g := m.GetDeletionGracePeriodSeconds()
	return g == nil || *g == 0
}
