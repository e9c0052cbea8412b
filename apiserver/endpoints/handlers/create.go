package handlers

import (
	"net/http"

	"github.com/batchlet/batchlet/apiserver/endpoints"
	"github.com/batchlet/batchlet/apiserver/registry/strategy"

	"github.com/batchlet/batchlet/apiserver/genericstore"
)

// Create answers POST of a new object.
func (h *Handlers) Create(w http.ResponseWriter, r *http.Request, info endpoints.RequestInfo) {
	res := info.Res
	obj := res.New()
	if err := h.Codec.DecodeBody(w, r, res.GVK(), obj); err != nil {
		endpoints.WriteError(w, err)
		return
	}
	if err := strategy.NamespaceOnCreate(res, genericstore.Accessor(obj), info.Namespace); err != nil {
		endpoints.WriteError(w, err)
		return
	}
	out, err := h.Writer.Create(r.Context(), res, obj, isDryRun(r))
	if err != nil {
		endpoints.WriteError(w, err)
		return
	}
	h.Codec.WriteObject(w, r, res, http.StatusCreated, out)
}
