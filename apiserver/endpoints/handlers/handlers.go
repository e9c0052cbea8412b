// Package handlers holds the REST verb handlers of the API server, as
// k8s.io/apiserver's endpoints/handlers does: get, list, watch, create,
// update, patch (server-side apply included), delete and deletecollection
// of any served resource. They decode requests, negotiate answers and
// leave storage to Store (the generic store's reads, lists and watches)
// and Writer (the write path: admission, strategy, managed fields).
package handlers

import (
	"context"
	"net/http"
	"time"

	"github.com/batchlet/batchlet/apiserver/endpoints"
	"github.com/batchlet/batchlet/apiserver/genericstore"
	"github.com/batchlet/batchlet/apiserver/patch"
	"github.com/batchlet/batchlet/apiserver/query"
	"github.com/batchlet/batchlet/apiserver/registry"
	"github.com/batchlet/batchlet/apiserver/registry/strategy"
	"github.com/batchlet/batchlet/storage"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// Store is what the handlers read of the generic store: objects, lists
// in their three shapes (streamed, stored entries, decoded) and watches.
type Store interface {
	Get(ctx context.Context, res *registry.Resource, namespace, name string) (runtime.Object, storage.KeyValue, error)
	List(ctx context.Context, res *registry.Resource, namespace string, f *genericstore.Filter, limit int64, cont, rv, rvMatch string) (*genericstore.ListResult, error)
	ListStored(ctx context.Context, res *registry.Resource, namespace string, f *genericstore.Filter, limit int64, cont, rv, rvMatch string) (*genericstore.ListResult, error)
	ListEntries(ctx context.Context, res *registry.Resource, namespace string, f *genericstore.Filter, limit int64, cont, rv, rvMatch string) ([]genericstore.ListItem, metav1.ListMeta, error)
	StreamList(w http.ResponseWriter, r *http.Request, res *registry.Resource, namespace string, f *genericstore.Filter, rv, rvMatch string) error
	WriteList(w http.ResponseWriter, res *registry.Resource, items []genericstore.ListItem, lm metav1.ListMeta) error
	ProtobufList(ctx context.Context, w http.ResponseWriter, res *registry.Resource, namespace string, f *genericstore.Filter, limit int64, cont, rv, rvMatch string) error
	DecodeItems(res *registry.Resource, lr *genericstore.ListResult) error
	// MetadataItems is DecodeItems for readers of the metadata alone.
	MetadataItems(res *registry.Resource, lr *genericstore.ListResult) error
	// JSON is the stored JSON of a current object (a patch's base).
	JSON(res *registry.Resource, cur runtime.Object) ([]byte, error)
	Watch(ctx context.Context, res *registry.Resource, namespace string, f *genericstore.Filter, rv string, sendInitial bool) (genericstore.WatchStart, error)
	Pump(ctx context.Context, ch <-chan []storage.Event, bookmarks bool, sink genericstore.EventSink)
	Classify(res *registry.Resource, f *genericstore.Filter, ev storage.Event) (watch.EventType, runtime.Object, error)
	Entry(res *registry.Resource, kv storage.KeyValue, obj runtime.Object) (*genericstore.StoredEntry, error)
}

// Mutate builds the new object of an update from the current one.
type Mutate = func(cur runtime.Object) (runtime.Object, error)

// Writer is the server's write path: admission, defaulting, strategy,
// validation and managed fields around the generic store's writes.
type Writer interface {
	// Create admits, prepares, validates and stores obj (only the first
	// three on a dry run).
	Create(ctx context.Context, res *registry.Resource, obj runtime.Object, dryRun bool) (runtime.Object, error)
	// Update is a guaranteed update in mode. mutate gets the shared
	// current object: it only reads it and returns a new one.
	Update(ctx context.Context, res *registry.Resource, namespace, name string, mode strategy.Mode, dryRun bool, mutate Mutate) (runtime.Object, error)
	// Delete deletes, or marks for deletion; deleted says the object is gone.
	Delete(ctx context.Context, res *registry.Resource, namespace, name string, opts *metav1.DeleteOptions) (obj runtime.Object, deleted bool, err error)
}

// Handlers serves the REST verbs of every resource.
type Handlers struct {
	Store  Store
	Writer Writer
	Codec  *endpoints.Codec
	// FieldManagers runs server-side apply.
	FieldManagers *patch.FieldManagers
	// Watchers counts the open watches by group, version and kind.
	Watchers *prometheus.GaugeVec
}

// Get answers GET of one object (or its status).
func (h *Handlers) Get(w http.ResponseWriter, r *http.Request, info endpoints.RequestInfo) {
	obj, _, err := h.Store.Get(r.Context(), info.Res, info.Namespace, info.Name)
	if err != nil {
		endpoints.WriteError(w, err)
		return
	}
	h.Codec.WriteObject(w, r, info.Res, http.StatusOK, obj)
}

// WithFieldManager carries a request's fieldManager to the write path.
func WithFieldManager(ctx context.Context, r *http.Request) context.Context {
	if m := r.URL.Query().Get("fieldManager"); m != "" {
		return endpoints.WithFieldManager(ctx, m)
	}
	return ctx
}

// updateCopy is Writer.Update for a mutate that changes (a deep copy of)
// the current object.
func (h *Handlers) updateCopy(ctx context.Context, res *registry.Resource, namespace, name string, mode strategy.Mode, dryRun bool, mutate Mutate) (runtime.Object, error) {
	return h.Writer.Update(ctx, res, namespace, name, mode, dryRun, func(cur runtime.Object) (runtime.Object, error) {
		return mutate(cur.DeepCopyObject())
	})
}

func isDryRun(r *http.Request) bool { return query.DryRun(r.URL.Query()) }

func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}
