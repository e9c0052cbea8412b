package apiserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/batchlet/batchlet/apiserver/registry"
	"github.com/batchlet/batchlet/storage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// continueToken is the opaque pagination state.
type continueToken struct {
	Rev   int64  `json:"rv"`
	Start string `json:"start"`
}

func encodeContinue(rev int64, lastKey string) string {
	b, _ := json.Marshal(continueToken{Rev: rev, Start: lastKey})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeContinue(s string) (continueToken, error) {
	var t continueToken
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &t)
	}
	if err != nil || t.Rev <= 0 {
		return t, apierrors.NewBadRequest("continue key is not valid: invalid continue token")
	}
	return t, nil
}

// listResult is one page of matching objects.
type listResult struct {
	items     []runtime.Object
	rev       int64
	cont      string
	remaining *int64
}

// listObjects lists res in namespace honouring selectors, limit, continue
// and resourceVersion semantics.
func (s *Server) listObjects(ctx context.Context, res *registry.Resource, namespace string, f *filter, limit int64, cont, rv, rvMatch string) (*listResult, error) {
	prefix := keyPrefix(res, namespace)
	opts := storage.ListOptions{}
	if cont != "" {
		tok, err := decodeContinue(cont)
		if err != nil {
			return nil, err
		}
		opts.Revision, opts.After = tok.Rev, tok.Start
	} else if rv != "" && rv != "0" {
		n, err := strconv.ParseInt(rv, 10, 64)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version: %s", rv))
		}
		if err := s.waitForRevision(ctx, n); err != nil {
			return nil, err
		}
		if rvMatch == string(metav1.ResourceVersionMatchExact) {
			opts.Revision = n
		}
	}
	out := &listResult{}
	for {
		batch := opts
		if limit > 0 {
			batch.Limit = limit - int64(len(out.items))
			if !f.empty() && batch.Limit < 64 {
				batch.Limit = 64
			}
		}
		page, err := s.store.List(ctx, prefix, batch)
		if errors.Is(err, storage.ErrCompacted) && cont != "" && opts.Revision != 0 {
			// History for the token's revision is gone: go on at the current
			// revision rather than failing the whole list.
			opts.Revision = 0
			continue
		}
		if err != nil {
			if errors.Is(err, storage.ErrFuture) {
				return nil, apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", opts.Revision, s.store.CurrentRevision()), 1)
			}
			return nil, s.storageError(err, res, "")
		}
		out.rev = page.Revision
		opts.Revision = page.Revision
		for i, kv := range page.Items {
			obj, err := decodeKV(res, kv)
			if err != nil {
				return nil, apierrors.NewInternalError(err)
			}
			opts.After = kv.Key
			if !f.matches(obj) {
				continue
			}
			out.items = append(out.items, obj)
			if limit > 0 && int64(len(out.items)) >= limit {
				more := page.More || i < len(page.Items)-1
				if more {
					out.cont = encodeContinue(page.Revision, kv.Key)
					if f.empty() && page.Remaining >= 0 {
						rem := page.Remaining + int64(len(page.Items)-1-i)
						out.remaining = &rem
					}
				}
				return out, nil
			}
		}
		if !page.More {
			return out, nil
		}
	}
}

func (s *Server) handleList(w http.ResponseWriter, r *http.Request, info requestInfo) {
	q := r.URL.Query()
	f, err := parseFilter(info.Res, q)
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
	lr, err := s.listObjects(r.Context(), info.Res, info.Namespace, f, limit, q.Get("continue"), q.Get("resourceVersion"), q.Get("resourceVersionMatch"))
	if err != nil {
		s.writeError(w, err)
		return
	}
	lm := metav1.ListMeta{ResourceVersion: strconv.FormatInt(lr.rev, 10), Continue: lr.cont, RemainingItemCount: lr.remaining}
	format, err := negotiate(r)
	if err != nil {
		s.writeError(w, err)
		return
	}
	switch format {
	case formatTable:
		writeJSON(w, http.StatusOK, s.table(r, info.Res, lr.items, lm))
	case formatMetadata:
		pl := &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadataList"}, ListMeta: lm}
		for _, obj := range lr.items {
			pl.Items = append(pl.Items, *partialMetadata(obj))
		}
		if pl.Items == nil {
			pl.Items = []metav1.PartialObjectMetadata{}
		}
		writeJSON(w, http.StatusOK, pl)
	default:
		if info.Res.GVR.Group != "jobset.x-k8s.io" {
			// Built-in lists carry no apiVersion/kind on their items
			// (custom resources do, being unstructured upstream).
			for _, obj := range lr.items {
				obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
			}
		}
		list := info.Res.NewList()
		list.GetObjectKind().SetGroupVersionKind(info.Res.GroupVersion().WithKind(info.Res.Kind + "List"))
		if err := meta.SetList(list, lr.items); err != nil {
			s.writeError(w, apierrors.NewInternalError(err))
			return
		}
		la, _ := meta.ListAccessor(list)
		la.SetResourceVersion(lm.ResourceVersion)
		la.SetContinue(lm.Continue)
		la.SetRemainingItemCount(lm.RemainingItemCount)
		writeJSON(w, http.StatusOK, list)
	}
}

// revisionWait is how long a request naming a future resourceVersion waits
// for the store to catch up, as kube-apiserver's watch cache does.
const revisionWait = 3 * time.Second

// waitForRevision waits until the store has reached rev, or answers 504
// "Too large resource version".
func (s *Server) waitForRevision(ctx context.Context, rev int64) error {
	deadline := s.clock.Now().Add(revisionWait)
	for s.store.CurrentRevision() < rev {
		if !s.clock.Now().Before(deadline) {
			return apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", rev, s.store.CurrentRevision()), 1)
		}
		select {
		case <-ctx.Done():
			return apierrors.NewTimeoutError("request canceled while waiting for resource version", 1)
		case <-s.clock.After(10 * time.Millisecond):
		}
	}
	return nil
}
