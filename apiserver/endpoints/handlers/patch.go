package handlers

import (
	"mime"
	"net/http"

	"github.com/batchlet/batchlet/apiserver/endpoints"
	"github.com/batchlet/batchlet/apiserver/registry/strategy"

	"github.com/batchlet/batchlet/apiserver/patch"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// Patch answers PATCH of an object (mode Main) or its status (Status):
// JSON, merge and strategic-merge patches here, apply patches in apply.
func (h *Handlers) Patch(w http.ResponseWriter, r *http.Request, info endpoints.RequestInfo, mode strategy.Mode) {
	res := info.Res
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	pt := types.PatchType(mt)
	if err := patch.Check(res, pt, info.Name); err != nil {
		endpoints.WriteError(w, err)
		return
	}
	if pt == types.ApplyPatchType {
		h.apply(w, r, info, mode)
		return
	}
	body, err := h.Codec.ReadBody(r)
	if err != nil {
		endpoints.WriteError(w, err)
		return
	}
	p, err := patch.Parse(pt, body)
	if err != nil {
		endpoints.WriteError(w, err)
		return
	}
	codec := patch.Codec{
		CurrentJSON: func(cur runtime.Object) ([]byte, error) { return h.Store.JSON(res, cur) },
		Decode: func(data []byte, into runtime.Object) error {
			return h.Codec.DecodeJSON(w, r, data, res.GVK(), into)
		},
	}
	// patch.Apply only reads cur, but the typed merge shares cur's unpatched
	// parts with its result.
	share := mayShare(r.Context(), res, mode)
	out, err := h.Writer.Update(r.Context(), res, info.Namespace, info.Name, mode, isDryRun(r), func(cur runtime.Object) (runtime.Object, error) {
		if !share {
			cur = cur.DeepCopyObject()
		}
		return patch.Apply(res, p, cur, codec)
	})
	if err != nil {
		endpoints.WriteError(w, err)
		return
	}
	h.Codec.WriteObject(w, r, res, http.StatusOK, out)
}
