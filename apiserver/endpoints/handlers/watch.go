package handlers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/batchlet/batchlet/apiserver/endpoints"

	"github.com/batchlet/batchlet/apiserver/genericstore"
	"github.com/batchlet/batchlet/apiserver/query"
	"k8s.io/utils/ptr"

	"github.com/batchlet/batchlet/apiserver/registry"
	"github.com/batchlet/batchlet/storage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// watcher streams one watch response.
type watcher struct {
	h       *Handlers
	w       http.ResponseWriter
	r       *http.Request
	res     *registry.Resource
	f       *genericstore.Filter
	format  endpoints.OutputFormat
	lastRev int64
}

// Watch answers a watch of a collection (or of one object by name).
func (h *Handlers) Watch(w http.ResponseWriter, r *http.Request, info endpoints.RequestInfo) {
	q := r.URL.Query()
	f, err := genericstore.ParseFilter(info.Res, q)
	if err != nil {
		endpoints.WriteError(w, err)
		return
	}
	if info.Name != "" {
		f.AndName(info.Name)
	}
	format, err := endpoints.Negotiate(r)
	if err != nil {
		endpoints.WriteError(w, err)
		return
	}
	var timeout time.Duration
	if t := q.Get("timeoutSeconds"); t != "" {
		n, err := strconv.ParseInt(t, 10, 64)
		if err != nil {
			endpoints.WriteError(w, apierrors.NewBadRequest(fmt.Sprintf("invalid timeoutSeconds: %s", t)))
			return
		}
		timeout = time.Duration(n) * time.Second
	}
	ctx, cancel := withTimeout(r.Context(), timeout)
	defer cancel()
	wt := &watcher{h: h, w: w, r: r, res: info.Res, f: f, format: format}
	rv := q.Get("resourceVersion")
	sendInitialEvents := query.OptionalBool(q, "sendInitialEvents")
	sendInitial := ptr.Deref(sendInitialEvents, rv == "" || rv == "0")
	st, err := h.Store.Watch(ctx, info.Res, info.Namespace, f, rv, sendInitial)
	if err == nil && st.Initial != nil && format != endpoints.FormatObject {
		err = h.Store.DecodeItems(info.Res, st.Initial)
	}
	if err != nil {
		endpoints.WriteError(w, err)
		return
	}
	initial := st.Initial
	wt.lastRev = st.LastRev
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache, private")
	w.WriteHeader(http.StatusOK)
	if st.Failed != nil {
		wt.writeError(st.Failed)
		return
	}
	ch := st.Events
	if initial != nil && !wt.writeInitial(initial) {
		return
	}
	bookmarks := query.Bool(q, "allowWatchBookmarks")
	if ptr.Deref(sendInitialEvents, false) && bookmarks {
		wt.writeBookmark(true)
	}
	wt.Flush()
	g := h.Watchers.WithLabelValues(info.Group, info.Version, info.Res.Kind)
	g.Inc()
	defer g.Dec()
	h.Store.Pump(ctx, ch, bookmarks, wt)
}

func (wt *watcher) Event(ev storage.Event) bool { return wt.writeEvent(ev) }
func (wt *watcher) Bookmark() bool              { return wt.writeBookmark(false) }

// writeEvent sends one storage event as the watch event it is for this
// watcher, if any.
func (wt *watcher) writeEvent(ev storage.Event) bool {
	wt.lastRev = ev.KV.ModRevision
	typ, obj, err := wt.h.Store.Classify(wt.res, wt.f, ev)
	if err != nil {
		return wt.writeError(apierrors.NewInternalError(err))
	}
	if typ == "" {
		return true
	}
	if wt.format != endpoints.FormatObject {
		return wt.writeObject(typ, obj)
	}
	ent, err := wt.h.Store.Entry(wt.res, ev.KV, obj)
	if err != nil {
		return wt.writeError(apierrors.NewInternalError(err))
	}
	return wt.writeFrame(typ, ent.JSON())
}

// writeInitial sends the ADDED events of the initial list.
func (wt *watcher) writeInitial(lr *genericstore.ListResult) bool {
	for i, kv := range lr.KVs {
		if wt.format != endpoints.FormatObject {
			if !wt.writeObject(watch.Added, lr.Items[i]) {
				return false
			}
			continue
		}
		ent, err := wt.h.Store.Entry(wt.res, kv, lr.Items[i])
		if err != nil {
			return wt.writeError(apierrors.NewInternalError(err))
		}
		if !wt.writeFrame(watch.Added, ent.JSON()) {
			return false
		}
	}
	return true
}

func (wt *watcher) writeObject(typ watch.EventType, obj runtime.Object) bool {
	var out interface{} = obj
	switch wt.format {
	case endpoints.FormatTable:
		out = wt.h.Codec.Table(wt.r, wt.res, []runtime.Object{obj}, metav1.ListMeta{ResourceVersion: genericstore.Accessor(obj).GetResourceVersion()})
	case endpoints.FormatMetadata:
		out = endpoints.PartialMetadata(obj)
	}
	data, err := json.Marshal(out)
	if err != nil {
		return wt.writeError(apierrors.NewInternalError(err))
	}
	return wt.writeFrame(typ, data)
}

func (wt *watcher) writeBookmark(initialEnd bool) bool {
	obj := wt.res.New()
	obj.GetObjectKind().SetGroupVersionKind(wt.res.GVK())
	m := genericstore.Accessor(obj)
	m.SetResourceVersion(strconv.FormatInt(wt.lastRev, 10))
	if initialEnd {
		m.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	}
	var out interface{} = obj
	if wt.format == endpoints.FormatMetadata {
		out = endpoints.PartialMetadata(obj)
	}
	data, err := json.Marshal(out)
	if err != nil {
		return false
	}
	return wt.writeFrame(watch.Bookmark, data)
}

func (wt *watcher) writeError(err error) bool {
	data, _ := json.Marshal(endpoints.StatusOf(err))
	wt.writeFrame(watch.Error, data)
	wt.Flush()
	return false
}

func (wt *watcher) writeFrame(typ watch.EventType, obj []byte) bool {
	buf := make([]byte, 0, len(obj)+32)
	buf = append(buf, `{"type":"`...)
	buf = append(buf, typ...)
	buf = append(buf, `","object":`...)
	buf = append(buf, obj...)
	buf = append(buf, "}\n"...)
	_, err := wt.w.Write(buf)
	return err == nil
}

func (wt *watcher) Flush() {
	if f, ok := wt.w.(http.Flusher); ok {
		f.Flush()
	}
}
