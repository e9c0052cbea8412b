package handlers

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/batchlet/batchlet/apiserver/endpoints"

	"github.com/batchlet/batchlet/apiserver/genericstore"
	"github.com/batchlet/batchlet/apiserver/query"

	"github.com/batchlet/batchlet/apiserver/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// deleteOptions reads DeleteOptions from the body or the query.
func (h *Handlers) deleteOptions(w http.ResponseWriter, r *http.Request) (*metav1.DeleteOptions, error) {
	opts := &metav1.DeleteOptions{}
	data, err := h.Codec.ReadBody(r)
	if err != nil {
		return nil, err
	}
	if len(data) > 0 {
		if err := h.Codec.DecodeLoose(r, data, opts); err != nil {
			return nil, err
		}
	}
	q := r.URL.Query()
	if v := q.Get("gracePeriodSeconds"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid gracePeriodSeconds: %s", v))
		}
		opts.GracePeriodSeconds = &n
	}
	if v := q.Get("propagationPolicy"); v != "" {
		p := metav1.DeletionPropagation(v)
		opts.PropagationPolicy = &p
	}
	if b := query.OptionalBool(q, "orphanDependents"); b != nil {
		//lint:ignore SA1019 kube-apiserver still honours the deprecated orphanDependents for older clients; so do we
		opts.OrphanDependents = b
	}
	if isDryRun(r) {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	if p := opts.PropagationPolicy; p != nil {
		switch *p {
		case metav1.DeletePropagationOrphan, metav1.DeletePropagationBackground, metav1.DeletePropagationForeground:
		default:
			return nil, apierrors.NewBadRequest(fmt.Sprintf("DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: %q: supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\"", *p))
		}
	}
	return opts, nil
}

// Delete answers DELETE of one object.
func (h *Handlers) Delete(w http.ResponseWriter, r *http.Request, info endpoints.RequestInfo) {
	opts, err := h.deleteOptions(w, r)
	if err != nil {
		endpoints.WriteError(w, err)
		return
	}
	obj, deleted, err := h.Writer.Delete(r.Context(), info.Res, info.Namespace, info.Name, opts)
	if err != nil {
		endpoints.WriteError(w, err)
		return
	}
	h.writeDeleteResult(w, r, info.Res, obj, deleted, opts)
}

func (h *Handlers) writeDeleteResult(w http.ResponseWriter, r *http.Request, res *registry.Resource, obj runtime.Object, deleted bool, opts *metav1.DeleteOptions) {
	code := http.StatusOK
	//lint:ignore SA1019 kube-apiserver still honours the deprecated orphanDependents for older clients; so do we
	if !deleted && opts.OrphanDependents != nil && !*opts.OrphanDependents {
		code = http.StatusAccepted
	}
	if deleted && !returnsDeletedObject(res) {
		m := genericstore.Accessor(obj)
		endpoints.WriteJSON(w, code, endpoints.SuccessStatus(0, &metav1.StatusDetails{Name: m.GetName(), Group: res.GVR.Group, Kind: res.GVR.Resource, UID: m.GetUID()}))
		return
	}
	h.Codec.WriteObject(w, r, res, code, obj)
}

// returnsDeletedObject: like kube-apiserver, pods and namespaces answer a
// delete with the object, others with a Status.
func returnsDeletedObject(res *registry.Resource) bool {
	return res.GVR.Group == "" && (res.GVR.Resource == "pods" || res.GVR.Resource == "namespaces")
}

// DeleteCollection answers DELETE of the objects a list selects, with
// the list of what was deleted.
func (h *Handlers) DeleteCollection(w http.ResponseWriter, r *http.Request, info endpoints.RequestInfo) {
	res := info.Res
	if res.GVR.Resource == "namespaces" && res.GVR.Group == "" {
		endpoints.WriteError(w, endpoints.ErrMethodNotSupported("namespaces", "deletecollection"))
		return
	}
	f, err := genericstore.ParseFilter(res, r.URL.Query())
	if err != nil {
		endpoints.WriteError(w, err)
		return
	}
	opts, err := h.deleteOptions(w, r)
	if err != nil {
		endpoints.WriteError(w, err)
		return
	}
	lr, err := h.Store.List(r.Context(), res, info.Namespace, f, 0, "", "", "")
	if err != nil {
		endpoints.WriteError(w, err)
		return
	}
	deleted := make([]runtime.Object, 0, len(lr.Items))
	for _, obj := range lr.Items {
		m := genericstore.Accessor(obj)
		out, _, err := h.Writer.Delete(r.Context(), res, m.GetNamespace(), m.GetName(), opts)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			endpoints.WriteError(w, err)
			return
		}
		deleted = append(deleted, out)
	}
	// Like kube-apiserver, answer with the list of what was deleted.
	list := res.NewList()
	list.GetObjectKind().SetGroupVersionKind(res.GroupVersion().WithKind(res.Kind + "List"))
	if err := meta.SetList(list, deleted); err != nil {
		endpoints.WriteError(w, apierrors.NewInternalError(err))
		return
	}
	endpoints.WriteJSON(w, http.StatusOK, list)
}
