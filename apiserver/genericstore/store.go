package genericstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/batchlet/batchlet/apiserver/registry"
	"github.com/batchlet/batchlet/storage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Get reads one object.
func (s *Store) Get(ctx context.Context, res *registry.Resource, namespace, name string) (runtime.Object, storage.KeyValue, error) {
	kv, err := s.store.Get(ctx, ObjectKey(res, namespace, name))
	if err != nil {
		return nil, kv, s.storageError(err, res, name)
	}
	obj, err := decodeKV(res, kv)
	if err != nil {
		return nil, kv, apierrors.NewInternalError(err)
	}
	return obj, kv, nil
}

// GetShared reads one object as Get does, returning the shared
// decoded copy of its version (the one watches decoded): read-only.
func (s *Store) GetShared(ctx context.Context, res *registry.Resource, namespace, name string) (runtime.Object, storage.KeyValue, error) {
	kv, err := s.store.GetShared(ctx, ObjectKey(res, namespace, name)) // kv.Value is only decoded and compared
	if err != nil {
		return nil, kv, s.storageError(err, res, name)
	}
	obj, err := s.decCache.getSized(cacheKey(res, kv.Key), kv.ModRevision, len(kv.Value), func() (runtime.Object, error) { return decodeKV(res, kv) })
	if err != nil {
		return nil, kv, apierrors.NewInternalError(err)
	}
	return obj, kv, nil
}

// storageError maps storage errors to API errors.
func (s *Store) storageError(err error, res *registry.Resource, name string) error {
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return apierrors.NewNotFound(res.GroupResource(), name)
	case errors.Is(err, storage.ErrExists):
		return apierrors.NewAlreadyExists(res.GroupResource(), name)
	case errors.Is(err, storage.ErrConflict):
		return ConflictModified(res.GroupResource(), name)
	case errors.Is(err, storage.ErrCompacted):
		return apierrors.NewResourceExpired("The resourceVersion for the provided list is too old.")
	}
	return apierrors.NewInternalError(fmt.Errorf("storage: %w", err))
}

// ErrRetry is written's answer to a lost race: read again and retry.
var ErrRetry = errors.New("retry update")

// written finishes a conditional write of obj at revision rev: a lost race
// is ErrRetry, another storage error the API error for it, and success gives
// obj its new resourceVersion.
func (s *Store) written(res *registry.Resource, obj runtime.Object, rev int64, err error) (runtime.Object, error) {
	m := Accessor(obj)
	if errors.Is(err, storage.ErrConflict) {
		return nil, ErrRetry
	}
	if err != nil {
		return nil, s.storageError(err, res, m.GetName())
	}
	m.SetResourceVersion(strconv.FormatInt(rev, 10))
	return obj, nil
}

// ConflictModified is the 409 of a write that lost a race.
func ConflictModified(gr schema.GroupResource, name string) error {
	return apierrors.NewConflict(gr, name, fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
}

// KeyPrefix is the storage key prefix of res's objects in namespace (all
// namespaces when ""): /registry/<group>/<resource>/[<namespace>/].
func KeyPrefix(r *registry.Resource, namespace string) string {
	gvr := r.StorageGVR()
	group := gvr.Group
	if group == "" {
		group = "core"
	}
	p := "/registry/" + group + "/" + gvr.Resource + "/"
	if r.Namespaced && namespace != "" {
		p += namespace + "/"
	}
	return p
}

// ObjectKey is the storage key of one object.
func ObjectKey(r *registry.Resource, namespace, name string) string {
	return KeyPrefix(r, namespace) + name
}

// JSON is the served JSON of cur, an object as read from the store
// (its resourceVersion is its stored revision): shared with the watches
// that already encoded that version.
func (s *Store) JSON(res *registry.Resource, cur runtime.Object) ([]byte, error) {
	m := Accessor(cur)
	rev, err := strconv.ParseInt(m.GetResourceVersion(), 10, 64)
	if err != nil {
		return json.Marshal(cur)
	}
	key := objKey{viewOf(res), ObjectKey(res, m.GetNamespace(), m.GetName())}
	ent, err := s.entCache.get(key, rev, func() (*StoredEntry, error) {
		data, err := json.Marshal(cur)
		if err != nil {
			return nil, err
		}
		return &StoredEntry{data: data, labels: m.GetLabels()}, nil
	})
	if err != nil {
		return nil, err
	}
	return ent.data, nil
}

// UIDPreconditionFailed is the Conflict kube-apiserver answers when a
// request's UID precondition does not match the object.
func UIDPreconditionFailed(gr schema.GroupResource, name string, want, got types.UID) error {
	return apierrors.NewConflict(gr, name,
		//lint:ignore ST1005 upstream's exact message, shown to users in the Status
		fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", want, got))
}
