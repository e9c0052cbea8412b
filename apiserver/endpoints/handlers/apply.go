package handlers

import (
	"net/http"

	"github.com/batchlet/batchlet/apiserver/endpoints"
	"github.com/batchlet/batchlet/apiserver/registry/strategy"

	"github.com/batchlet/batchlet/apiserver/genericstore"

	"github.com/batchlet/batchlet/apiserver/patch"
	"github.com/batchlet/batchlet/apiserver/query"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
)

// apply serves application/apply-patch+yaml (server-side apply):
// merge the applied configuration into the live object with managed-field
// ownership, creating the object when it does not exist.
func (h *Handlers) apply(w http.ResponseWriter, r *http.Request, info endpoints.RequestInfo, mode strategy.Mode) {
	res := info.Res
	q := r.URL.Query()
	manager := q.Get("fieldManager")
	if manager == "" {
		endpoints.WriteError(w, apierrors.NewBadRequest("PATCH /apply requires fieldManager"))
		return
	}
	force := query.Bool(q, "force")
	// The field manager records the Apply itself; no extra Update entry.
	r = r.WithContext(endpoints.WithFieldManager(r.Context(), ""))
	body, err := h.Codec.ReadBody(r)
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
	if mode == strategy.Status {
		sub = "status"
	}
	apply := func(live runtime.Object) (runtime.Object, error) {
		return h.FieldManagers.Apply(res, sub, live, applied, manager, force)
	}
	out, err := h.updateCopy(r.Context(), res, info.Namespace, info.Name, mode, isDryRun(r), func(cur runtime.Object) (runtime.Object, error) {
		obj, err := apply(cur)
		if err != nil {
			return nil, err
		}
		if applied.GetResourceVersion() == "" {
			genericstore.Accessor(obj).SetResourceVersion("")
		}
		return obj, nil
	})
	if apierrors.IsNotFound(err) && mode == strategy.Main {
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
		created, err := h.Writer.Create(r.Context(), res, obj, isDryRun(r))
		if err != nil {
			endpoints.WriteError(w, err)
			return
		}
		h.Codec.WriteObject(w, r, res, http.StatusCreated, created)
		return
	}
	if err != nil {
		endpoints.WriteError(w, err)
		return
	}
	h.Codec.WriteObject(w, r, res, http.StatusOK, out)
}
