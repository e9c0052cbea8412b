package handlers

import (
	"context"
	"fmt"
	"net/http"

	"github.com/batchlet/batchlet/apiserver/endpoints"

	"github.com/batchlet/batchlet/apiserver/genericstore"

	"github.com/batchlet/batchlet/apiserver/registry"
	"github.com/batchlet/batchlet/apiserver/registry/strategy"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
)

// Update answers PUT of an object (mode Main) or its status (Status).
func (h *Handlers) Update(w http.ResponseWriter, r *http.Request, info endpoints.RequestInfo, mode strategy.Mode) {
	res := info.Res
	body := res.New()
	if err := h.Codec.DecodeBody(w, r, res.GVK(), body); err != nil {
		endpoints.WriteError(w, err)
		return
	}
	m := genericstore.Accessor(body)
	if m.GetName() != info.Name {
		endpoints.WriteError(w, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", m.GetName(), info.Name)))
		return
	}
	if err := strategy.NamespaceOnUpdate(res, m, info.Namespace); err != nil {
		endpoints.WriteError(w, err)
		return
	}
	out, err := h.Writer.Update(r.Context(), res, info.Namespace, info.Name, mode, isDryRun(r), Replace(res, body))
	if err != nil {
		endpoints.WriteError(w, err)
		return
	}
	h.Codec.WriteObject(w, r, res, http.StatusOK, out)
}

// Replace is the mutate of an update that replaces the stored object with
// body. The body's UID is a precondition on the stored object, as
// kube-apiserver's update takes it: a different one is a Conflict (a patch
// that changes the UID fails validation instead).
func Replace(res *registry.Resource, body runtime.Object) Mutate {
	return func(cur runtime.Object) (runtime.Object, error) {
		want, got := genericstore.Accessor(body).GetUID(), genericstore.Accessor(cur).GetUID()
		if want != "" && want != got {
			return nil, genericstore.UIDPreconditionFailed(res.GroupResource(), genericstore.Accessor(cur).GetName(), want, got)
		}
		return body.DeepCopyObject(), nil
	}
}

// mayShare: the new object of the request's update may share parts with
// the current (shared) one (strategy.MayShare).
func mayShare(ctx context.Context, res *registry.Resource, mode strategy.Mode) bool {
	return strategy.MayShare(res, mode, endpoints.FieldManagerOf(ctx))
}
