package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/batchlet/batchlet/apiserver/registry"
	"github.com/batchlet/batchlet/storage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
)

// serveResource dispatches a resource request to its verb handler.
func (s *Server) serveResource(w http.ResponseWriter, r *http.Request, info requestInfo) {
	res := info.Res
	if res == nil || (!res.Namespaced && info.Namespace != "" && info.Resource != "namespaces") {
		s.writeError(w, errNotFoundPath())
		return
	}
	if res.CreateOnly {
		s.handleReview(w, r, info)
		return
	}
	if info.Subresource != "" {
		s.serveSubresource(w, r, info)
		return
	}
	if info.Name == "" && (info.Verb == "update" || info.Verb == "patch") {
		s.writeError(w, errMethodNotSupported(info.Resource, info.Verb))
		return
	}
	switch info.Verb {
	case "get":
		s.handleGet(w, r, info)
	case "list":
		s.handleList(w, r, info)
	case "watch":
		s.handleWatch(w, r, info)
	case "create":
		if info.Name != "" {
			s.writeError(w, errMethodNotSupported(info.Resource, "create"))
			return
		}
		s.handleCreate(w, r, info)
	case "update":
		s.handleUpdate(w, r, info, modeMain)
	case "patch":
		s.handlePatch(w, r, info, modeMain)
	case "delete":
		s.handleDelete(w, r, info)
	case "deletecollection":
		s.handleDeleteCollection(w, r, info)
	default:
		s.writeError(w, errMethodNotSupported(info.Resource, r.Method))
	}
}

func (s *Server) serveSubresource(w http.ResponseWriter, r *http.Request, info requestInfo) {
	res := info.Res
	if info.Name == "" || !res.HasSubresource(info.Subresource) {
		s.writeError(w, errNotFoundPath())
		return
	}
	switch {
	case info.Subresource == "finalize" && r.Method == http.MethodPut:
		s.handleFinalize(w, r, info)
	case info.Subresource == "status" || info.Subresource == "approval":
		switch info.Verb {
		case "get":
			s.handleGet(w, r, info)
		case "update":
			s.handleUpdate(w, r, info, modeStatus)
		case "patch":
			s.handlePatch(w, r, info, modeStatus)
		default:
			s.writeError(w, errMethodNotSupported(info.Resource+"/"+info.Subresource, info.Verb))
		}
	case info.Subresource == "binding" && r.Method == http.MethodPost:
		s.handleBinding(w, r, info)
	case info.Subresource == "eviction" && r.Method == http.MethodPost:
		s.handleEviction(w, r, info)
	case info.Subresource == "token" && r.Method == http.MethodPost:
		s.handleTokenRequest(w, r, info)
	case info.Subresource == "log" && r.Method == http.MethodGet:
		s.handleLog(w, r, info)
	case info.Subresource == "exec" || info.Subresource == "attach":
		s.handleExec(w, r, info)
	case info.Subresource == "proxy" && info.Resource == "nodes" && info.Group == "":
		s.handleNodeProxy(w, r, info)
	default:
		s.writeError(w, errMethodNotSupported(info.Resource+"/"+info.Subresource, info.Verb))
	}
}

// getObject reads one object.
func (s *Server) getObject(ctx context.Context, res *registry.Resource, namespace, name string) (runtime.Object, storage.KeyValue, error) {
	kv, err := s.store.Get(ctx, objectKey(res, namespace, name))
	if err != nil {
		return nil, kv, s.storageError(err, res, name)
	}
	obj, err := decodeKV(res, kv)
	if err != nil {
		return nil, kv, apierrors.NewInternalError(err)
	}
	return obj, kv, nil
}

// getShared reads one object as getObject does, returning the shared
// decoded copy of its version (the one watches decoded): read-only.
func (s *Server) getShared(ctx context.Context, res *registry.Resource, namespace, name string) (runtime.Object, storage.KeyValue, error) {
	kv, err := s.store.GetShared(ctx, objectKey(res, namespace, name)) // kv.Value is only decoded and compared
	if err != nil {
		return nil, kv, s.storageError(err, res, name)
	}
	obj, err := s.decCache.get(cacheKey(res, kv.Key), kv.ModRevision, func() (runtime.Object, error) { return decodeKV(res, kv) })
	if err != nil {
		return nil, kv, apierrors.NewInternalError(err)
	}
	return obj, kv, nil
}

// storageError maps storage errors to API errors.
func (s *Server) storageError(err error, res *registry.Resource, name string) error {
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return apierrors.NewNotFound(res.GroupResource(), name)
	case errors.Is(err, storage.ErrExists):
		return apierrors.NewAlreadyExists(res.GroupResource(), name)
	case errors.Is(err, storage.ErrConflict):
		return conflictModified(res.GroupResource(), name)
	case errors.Is(err, storage.ErrCompacted):
		return errGone("The resourceVersion for the provided list is too old.")
	}
	return apierrors.NewInternalError(fmt.Errorf("storage: %w", err))
}

func (s *Server) handleGet(w http.ResponseWriter, r *http.Request, info requestInfo) {
	obj, _, err := s.getObject(r.Context(), info.Res, info.Namespace, info.Name)
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.writeObject(w, r, info.Res, http.StatusOK, obj)
}
