package handlers

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/batchlet/batchlet/apiserver/endpoints"

	"github.com/batchlet/batchlet/apiserver/genericstore"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// List answers GET of a collection: protobuf from the stored bytes,
// streamed JSON, stored entries, a Table or PartialObjectMetadata, as
// negotiated.
func (h *Handlers) List(w http.ResponseWriter, r *http.Request, info endpoints.RequestInfo) {
	q := r.URL.Query()
	f, err := genericstore.ParseFilter(info.Res, q)
	if err != nil {
		endpoints.WriteError(w, err)
		return
	}
	var limit int64
	if l := q.Get("limit"); l != "" {
		if limit, err = strconv.ParseInt(l, 10, 64); err != nil || limit < 0 {
			endpoints.WriteError(w, apierrors.NewBadRequest(fmt.Sprintf("invalid limit: %s", l)))
			return
		}
	}
	cont, rv, rvMatch := q.Get("continue"), q.Get("resourceVersion"), q.Get("resourceVersionMatch")
	if endpoints.WantsProtobuf(r) && genericstore.ServesProtobufList(info.Res) {
		if err := h.Store.ProtobufList(r.Context(), w, info.Res, info.Namespace, f, limit, cont, rv, rvMatch); err != nil {
			endpoints.WriteError(w, err)
		}
		return
	}
	format, err := endpoints.Negotiate(r)
	if err != nil {
		endpoints.WriteError(w, err)
		return
	}
	if format == endpoints.FormatObject && limit == 0 && cont == "" {
		if err := h.Store.StreamList(w, r, info.Res, info.Namespace, f, rv, rvMatch); err != nil {
			endpoints.WriteError(w, err)
		}
		return
	}
	if format == endpoints.FormatObject {
		items, lm, err := h.Store.ListEntries(r.Context(), info.Res, info.Namespace, f, limit, cont, rv, rvMatch)
		if err != nil {
			endpoints.WriteError(w, err)
			return
		}
		if err := h.Store.WriteList(w, info.Res, items, lm); err != nil {
			endpoints.WriteError(w, err)
		}
		return
	}
	lr, err := h.Store.ListStored(r.Context(), info.Res, info.Namespace, f, limit, cont, rv, rvMatch)
	if err != nil {
		endpoints.WriteError(w, err)
		return
	}
	lm := lr.ListMeta()
	decode := h.Store.DecodeItems
	if format != endpoints.FormatTable {
		decode = h.Store.MetadataItems // a metadata list: no item decoded whole that need not be
	}
	if err := decode(info.Res, lr); err != nil {
		endpoints.WriteError(w, err)
		return
	}
	switch format {
	case endpoints.FormatTable:
		h.Codec.WriteTable(w, r, info.Res, lr.Items, lm)
	default:
		pl := &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadataList"}, ListMeta: lm}
		for _, obj := range lr.Items {
			pl.Items = append(pl.Items, *endpoints.PartialMetadata(obj))
		}
		if pl.Items == nil {
			pl.Items = []metav1.PartialObjectMetadata{}
		}
		endpoints.WriteJSON(w, http.StatusOK, pl)
	}
}
