package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/batchlet/batchlet/apiserver/registry"
	"github.com/batchlet/batchlet/storage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"
)

// InitialEventsEndAnnotation marks the bookmark that ends a WatchList's
// initial events.
const InitialEventsEndAnnotation = "k8s.io/initial-events-end"

// watcher streams one watch response.
type watcher struct {
	s       *Server
	w       http.ResponseWriter
	r       *http.Request
	res     *registry.Resource
	f       *filter
	format  outputFormat
	lastRev int64
}

func (s *Server) handleWatch(w http.ResponseWriter, r *http.Request, info requestInfo) {
	q := r.URL.Query()
	f, err := parseFilter(info.Res, q)
	if err != nil {
		s.writeError(w, err)
		return
	}
	if info.Name != "" {
		f.fields = fields.AndSelectors(f.fields, fields.OneTermEqualSelector("metadata.name", info.Name))
	}
	format, err := negotiate(r)
	if err != nil {
		s.writeError(w, err)
		return
	}
	var timeout time.Duration
	if t := q.Get("timeoutSeconds"); t != "" {
		n, err := strconv.ParseInt(t, 10, 64)
		if err != nil {
			s.writeError(w, apierrors.NewBadRequest(fmt.Sprintf("invalid timeoutSeconds: %s", t)))
			return
		}
		timeout = time.Duration(n) * time.Second
	}
	ctx, cancel := withTimeout(r.Context(), timeout)
	defer cancel()
	wt := &watcher{s: s, w: w, r: r, res: info.Res, f: f, format: format}
	rv := q.Get("resourceVersion")
	sendInitial := q.Get("sendInitialEvents") == "true" || (q.Get("sendInitialEvents") == "" && (rv == "" || rv == "0"))
	var initial *listResult
	if sendInitial {
		lr, err := s.listStored(ctx, info.Res, info.Namespace, f, 0, "", "", "")
		if err == nil && format != formatObject {
			err = s.decodeItems(info.Res, lr)
		}
		if err != nil {
			s.writeError(w, err)
			return
		}
		initial, wt.lastRev = lr, lr.rev
	} else if rv == "" || rv == "0" {
		wt.lastRev = s.store.CurrentRevision()
	} else if wt.lastRev, err = strconv.ParseInt(rv, 10, 64); err != nil {
		s.writeError(w, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version: %s", rv)))
		return
	} else if err := s.waitForRevision(ctx, wt.lastRev); err != nil {
		s.writeError(w, err)
		return
	}
	ch, err := s.store.Watch(ctx, keyPrefix(info.Res, info.Namespace), wt.lastRev)
	if errors.Is(err, storage.ErrFuture) {
		s.writeError(w, apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", wt.lastRev, s.store.CurrentRevision()), 1))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache, private")
	w.WriteHeader(http.StatusOK)
	if errors.Is(err, storage.ErrCompacted) {
		wt.writeError(errGone(fmt.Sprintf("too old resource version: %d (%d)", wt.lastRev, s.store.CompactRevision())))
		return
	}
	if err != nil {
		wt.writeError(apierrors.NewInternalError(err))
		return
	}
	if initial != nil && !wt.writeInitial(initial) {
		return
	}
	bookmarks := q.Get("allowWatchBookmarks") == "true"
	if q.Get("sendInitialEvents") == "true" && bookmarks {
		wt.writeBookmark(true)
	}
	wt.flush()
	g := s.metrics.watchers.WithLabelValues(info.Group, info.Version, info.Res.Kind)
	g.Inc()
	defer g.Dec()
	wt.stream(ctx, ch, bookmarks)
}

// stream copies storage events to the client until ctx ends or the storage
// watch closes.
func (wt *watcher) stream(ctx context.Context, ch <-chan []storage.Event, bookmarks bool) {
	var tick <-chan time.Time
	var timer clock.Timer
	if bookmarks {
		timer = wt.s.clock.NewTimer(wt.s.cfg.BookmarkInterval)
		defer timer.Stop()
		tick = timer.C()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			if !wt.writeBookmark(false) {
				return
			}
			wt.flush()
			timer.Reset(wt.s.cfg.BookmarkInterval)
		case batch, ok := <-ch:
			if !ok {
				return
			}
			for _, ev := range batch {
				if !wt.writeEvent(ev) {
					return
				}
			}
			wt.flush()
		}
	}
}

// writeEvent turns one storage event into ADDED/MODIFIED/DELETED, with
// selector transitions: starts matching → ADDED, stops matching → DELETED.
func (wt *watcher) writeEvent(ev storage.Event) bool {
	wt.lastRev = ev.KV.ModRevision
	obj, err := wt.decoded(ev.KV)
	if err != nil {
		return wt.writeError(apierrors.NewInternalError(err))
	}
	typ := watch.EventType("")
	switch {
	case wt.f.empty():
		typ = map[storage.EventType]watch.EventType{storage.EventCreated: watch.Added, storage.EventUpdated: watch.Modified, storage.EventDeleted: watch.Deleted}[ev.Type]
	default:
		matches, prevMatches := wt.f.matches(obj), false
		if ev.PrevKV != nil {
			prev, err := wt.decoded(*ev.PrevKV)
			if err != nil {
				return wt.writeError(apierrors.NewInternalError(err))
			}
			prevMatches = wt.f.matches(prev)
		}
		typ = transition(ev.Type, matches, prevMatches)
	}
	if typ == "" {
		return true
	}
	if wt.format != formatObject {
		return wt.writeObject(typ, obj)
	}
	ent, err := wt.s.entry(wt.res, ev.KV, obj)
	if err != nil {
		return wt.writeError(apierrors.NewInternalError(err))
	}
	return wt.writeFrame(typ, ent.data)
}

// transition maps a storage event and whether the object matches the
// selectors after and before it to the watch event to send ("" for none).
func transition(t storage.EventType, matches, prevMatches bool) watch.EventType {
	switch {
	case t == storage.EventCreated && matches:
		return watch.Added
	case t == storage.EventDeleted && (prevMatches || matches):
		return watch.Deleted
	case t == storage.EventUpdated && matches && prevMatches:
		return watch.Modified
	case t == storage.EventUpdated && matches:
		return watch.Added
	case t == storage.EventUpdated && prevMatches:
		return watch.Deleted
	}
	return ""
}

// decoded returns the (shared, read-only) object of a stored version.
func (wt *watcher) decoded(kv storage.KeyValue) (runtime.Object, error) {
	return wt.s.decCache.get(cacheKey(wt.res, kv.Key), kv.ModRevision, func() (runtime.Object, error) { return decodeKV(wt.res, kv) })
}

// writeInitial sends the ADDED events of the initial list.
func (wt *watcher) writeInitial(lr *listResult) bool {
	for i, kv := range lr.kvs {
		if wt.format != formatObject {
			if !wt.writeObject(watch.Added, lr.items[i]) {
				return false
			}
			continue
		}
		ent, err := wt.s.entry(wt.res, kv, lr.items[i])
		if err != nil {
			return wt.writeError(apierrors.NewInternalError(err))
		}
		if !wt.writeFrame(watch.Added, ent.data) {
			return false
		}
	}
	return true
}

func (wt *watcher) writeObject(typ watch.EventType, obj runtime.Object) bool {
	var out interface{} = obj
	switch wt.format {
	case formatTable:
		out = wt.s.table(wt.r, wt.res, []runtime.Object{obj}, metav1.ListMeta{ResourceVersion: accessor(obj).GetResourceVersion()})
	case formatMetadata:
		out = partialMetadata(obj)
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
	m := accessor(obj)
	m.SetResourceVersion(strconv.FormatInt(wt.lastRev, 10))
	if initialEnd {
		m.SetAnnotations(map[string]string{InitialEventsEndAnnotation: "true"})
	}
	var out interface{} = obj
	if wt.format == formatMetadata {
		out = partialMetadata(obj)
	}
	data, err := json.Marshal(out)
	if err != nil {
		return false
	}
	return wt.writeFrame(watch.Bookmark, data)
}

func (wt *watcher) writeError(err error) bool {
	data, _ := json.Marshal(statusOf(err))
	wt.writeFrame(watch.Error, data)
	wt.flush()
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

func (wt *watcher) flush() {
	if f, ok := wt.w.(http.Flusher); ok {
		f.Flush()
	}
}
