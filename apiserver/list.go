package apiserver

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/batchlet/batchlet/apiserver/genericstore"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func (s *Server) handleList(w http.ResponseWriter, r *http.Request, info requestInfo) {
	q := r.URL.Query()
	f, err := genericstore.ParseFilter(info.Res, q)
	if err != nil {
		s.writeError(w, err)
		return
	}
	var limit int64
	if l := q.Get("limit"); l != "" {
		if limit, err = strconv.ParseInt(l, 10, 64); err != nil || limit < 0 {
			s.writeError(w, apierrors.NewBadRequest(fmt.Sprintf("invalid limit: %s", l)))
			return
		}
	}
	format, err := negotiate(r)
	if err != nil {
		s.writeError(w, err)
		return
	}
	cont, rv, rvMatch := q.Get("continue"), q.Get("resourceVersion"), q.Get("resourceVersionMatch")
	if format == formatObject && limit == 0 && cont == "" {
		if err := s.objects.StreamList(w, r, info.Res, info.Namespace, f, rv, rvMatch); err != nil {
			s.writeError(w, err)
		}
		return
	}
	if format == formatObject {
		items, lm, err := s.objects.ListEntries(r.Context(), info.Res, info.Namespace, f, limit, cont, rv, rvMatch)
		if err != nil {
			s.writeError(w, err)
			return
		}
		if err := s.objects.WriteList(w, info.Res, items, lm); err != nil {
			s.writeError(w, err)
		}
		return
	}
	lr, err := s.objects.ListStored(r.Context(), info.Res, info.Namespace, f, limit, cont, rv, rvMatch)
	if err != nil {
		s.writeError(w, err)
		return
	}
	lm := lr.ListMeta()
	if err := s.objects.DecodeItems(info.Res, lr); err != nil {
		s.writeError(w, err)
		return
	}
	switch format {
	case formatTable:
		writeJSON(w, http.StatusOK, s.table(r, info.Res, lr.Items, lm))
	default:
		pl := &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadataList"}, ListMeta: lm}
		for _, obj := range lr.Items {
			pl.Items = append(pl.Items, *partialMetadata(obj))
		}
		if pl.Items == nil {
			pl.Items = []metav1.PartialObjectMetadata{}
		}
		writeJSON(w, http.StatusOK, pl)
	}
}
