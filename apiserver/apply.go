package apiserver

import (
	"context"
	"net/http"

	"github.com/batchlet/batchlet/apiserver/endpoints"

	"github.com/batchlet/batchlet/apiserver/genericstore"

	"github.com/batchlet/batchlet/apiserver/patch"
	"github.com/batchlet/batchlet/apiserver/query"
	"github.com/batchlet/batchlet/apiserver/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
)

// handleApply serves application/apply-patch+yaml (server-side apply):
// merge the applied configuration into the live object with managed-field
// ownership, creating the object when it does not exist.
func (s *Server) handleApply(w http.ResponseWriter, r *http.Request, info endpoints.RequestInfo, mode updateMode) {
	res := info.Res
	q := r.URL.Query()
	manager := q.Get("fieldManager")
	if manager == "" {
		endpoints.WriteError(w, apierrors.NewBadRequest("PATCH /apply requires fieldManager"))
		return
	}
	force := query.Bool(q, "force")
	// The field manager records the Apply itself; no extra Update entry.
	r = r.WithContext(context.WithValue(r.Context(), ctxFieldManager, ""))
	body, err := s.codec.ReadBody(r)
	if err != nil {
		endpoints.WriteError(w, err)
		return
	}
	applied, err := patch.ParseApply(body, res.GVK(), info.Name)
	if err != nil {
		endpoints.WriteError(w, err)
		return
	}
	// A custom resource's configuration loses the fields its schema does
	// not declare before it is applied, so no one owns them.
	if err := endpoints.PruneRaw(w, res, applied.Object, q.Get("fieldValidation")); err != nil {
		endpoints.WriteError(w, err)
		return
	}
	sub := ""
	if mode == modeStatus {
		sub = "status"
	}
	apply := func(live runtime.Object) (runtime.Object, error) {
		return s.fieldManagers.Apply(res, sub, live, applied, manager, force)
	}
	out, err := s.updateObject(r.Context(), res, info.Namespace, info.Name, mode, isDryRun(r), func(cur runtime.Object) (runtime.Object, error) {
		obj, err := apply(cur)
		if err != nil {
			return nil, err
		}
		if applied.GetResourceVersion() == "" {
			genericstore.Accessor(obj).SetResourceVersion("")
		}
		return obj, nil
	})
	if apierrors.IsNotFound(err) && mode == modeMain {
		live := res.New()
		live.GetObjectKind().SetGroupVersionKind(res.GVK())
		genericstore.Accessor(live).SetName(info.Name)
		genericstore.Accessor(live).SetNamespace(info.Namespace)
		obj, err := apply(live)
		if err != nil {
			endpoints.WriteError(w, err)
			return
		}
		genericstore.Accessor(obj).SetNamespace(info.Namespace)
		created, err := s.createObject(r.Context(), res, obj, isDryRun(r))
		if err != nil {
			endpoints.WriteError(w, err)
			return
		}
		s.codec.WriteObject(w, r, res, http.StatusCreated, created)
		return
	}
	if err != nil {
		endpoints.WriteError(w, err)
		return
	}
	s.codec.WriteObject(w, r, res, http.StatusOK, out)
}

// withFieldManager carries a request's fieldManager to the write path.
func withFieldManager(ctx context.Context, r *http.Request) context.Context {
	if m := r.URL.Query().Get("fieldManager"); m != "" {
		return context.WithValue(ctx, ctxFieldManager, m)
	}
	return ctx
}

// trackManager records an Update operation in managedFields when the
// request named a fieldManager (kubectl does; controllers usually do not,
// and skip the cost). Failures leave the object as it was.
func (s *Server) trackManager(ctx context.Context, res *registry.Resource, status bool, cur, obj runtime.Object) runtime.Object {
	manager, _ := ctx.Value(ctxFieldManager).(string)
	if manager == "" {
		return obj
	}
	sub := ""
	if status {
		sub = "status"
	}
	return s.fieldManagers.Update(res, sub, cur, obj, manager)
}
