package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/batchlet/batchlet/apiserver/query"
	"k8s.io/utils/ptr"
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
	sendInitialEvents := query.OptionalBool(q, "sendInitialEvents")
	sendInitial := ptr.Deref(sendInitialEvents, rv == "" || rv == "0")
	st, err := s.startWatch(ctx, info.Res, info.Namespace, f, rv, sendInitial)
	if err == nil && st.initial != nil && format != formatObject {
		err = s.decodeItems(info.Res, st.initial)
	}
	if err != nil {
		s.writeError(w, err)
		return
	}
	initial := st.initial
	wt.lastRev = st.lastRev
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache, private")
	w.WriteHeader(http.StatusOK)
	if st.failed != nil {
		wt.writeError(st.failed)
		return
	}
	ch := st.ch
	if initial != nil && !wt.writeInitial(initial) {
		return
	}
	bookmarks := query.Bool(q, "allowWatchBookmarks")
	if ptr.Deref(sendInitialEvents, false) && bookmarks {
		wt.writeBookmark(true)
	}
	wt.flush()
	g := s.metrics.watchers.WithLabelValues(info.Group, info.Version, info.Res.Kind)
	g.Inc()
	defer g.Dec()
	s.pump(ctx, ch, bookmarks, wt)
}

// watchStart is where a watch begins: the initial list to send (with
// sendInitialEvents), the revision it starts after, and the storage events
// that follow. failed is an error to send as the watch's only event (the
// requested revision is compacted away, or the store failed).
type watchStart struct {
	initial *listResult
	lastRev int64
	ch      <-chan []storage.Event
	failed  error
}

// startWatch resolves a watch's resourceVersion and sendInitialEvents into
// a starting point; errors are API errors to answer the request with.
func (s *Server) startWatch(ctx context.Context, res *registry.Resource, namespace string, f *filter, rv string, sendInitial bool) (watchStart, error) {
	var st watchStart
	var err error
	switch {
	case sendInitial:
		lr, err := s.listStored(ctx, res, namespace, f, 0, "", "", "")
		if err != nil {
			return st, err
		}
		st.initial, st.lastRev = lr, lr.rev
	case rv == "" || rv == "0":
		st.lastRev = s.store.CurrentRevision()
	default:
		if st.lastRev, err = strconv.ParseInt(rv, 10, 64); err != nil {
			return st, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version: %s", rv))
		}
		if err := s.waitForRevision(ctx, st.lastRev); err != nil {
			return st, err
		}
	}
	st.ch, err = s.store.Watch(ctx, keyPrefix(res, namespace), st.lastRev)
	switch {
	case errors.Is(err, storage.ErrFuture):
		return st, apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", st.lastRev, s.store.CurrentRevision()), 1)
	case errors.Is(err, storage.ErrCompacted):
		st.failed = errGone(fmt.Sprintf("too old resource version: %d (%d)", st.lastRev, s.store.CompactRevision()))
	case err != nil:
		st.failed = apierrors.NewInternalError(err)
	}
	return st, nil
}

// eventSink is where a watch's events go: an HTTP stream (watcher) or an
// in-process channel (localWatch).
type eventSink interface {
	// event sends what one storage event is for this watch, if anything.
	event(storage.Event) bool
	// bookmark sends a BOOKMARK at the last revision sent.
	bookmark() bool
	// flush pushes what was sent to the client.
	flush()
}

// pump feeds storage events to sink, with a bookmark every
// BookmarkInterval when asked, until ctx ends, the storage watch closes or
// the sink fails.
func (s *Server) pump(ctx context.Context, ch <-chan []storage.Event, bookmarks bool, sink eventSink) {
	var tick <-chan time.Time
	var timer clock.Timer
	if bookmarks {
		timer = s.clock.NewTimer(s.cfg.BookmarkInterval)
		defer timer.Stop()
		tick = timer.C()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			if !sink.bookmark() {
				return
			}
			sink.flush()
			timer.Reset(s.cfg.BookmarkInterval)
		case batch, ok := <-ch:
			if !ok {
				return
			}
			for _, ev := range batch {
				if !sink.event(ev) {
					return
				}
			}
			sink.flush()
		}
	}
}

func (wt *watcher) event(ev storage.Event) bool { return wt.writeEvent(ev) }
func (wt *watcher) bookmark() bool              { return wt.writeBookmark(false) }

// writeEvent sends one storage event as the watch event it is for this
// watcher, if any.
func (wt *watcher) writeEvent(ev storage.Event) bool {
	wt.lastRev = ev.KV.ModRevision
	typ, obj, err := wt.s.classify(wt.res, wt.f, ev)
	if err != nil {
		return wt.writeError(apierrors.NewInternalError(err))
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

// classify turns one storage event into ADDED/MODIFIED/DELETED for a
// watcher with filter f, with selector transitions: starts matching →
// ADDED, stops matching → DELETED; "" when the watcher gets nothing. obj
// is the shared decoded object: read-only.
func (s *Server) classify(res *registry.Resource, f *filter, ev storage.Event) (watch.EventType, runtime.Object, error) {
	obj, err := s.decodedShared(res, ev.KV)
	if err != nil {
		return "", nil, err
	}
	if f.empty() {
		return map[storage.EventType]watch.EventType{storage.EventCreated: watch.Added, storage.EventUpdated: watch.Modified, storage.EventDeleted: watch.Deleted}[ev.Type], obj, nil
	}
	matches, prevMatches := f.matches(obj), false
	if ev.PrevKV != nil {
		prev, err := s.decodedShared(res, *ev.PrevKV)
		if err != nil {
			return "", nil, err
		}
		prevMatches = f.matches(prev)
	}
	return transition(ev.Type, matches, prevMatches), obj, nil
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

// decodedShared returns the (shared, read-only) object of a stored version.
func (s *Server) decodedShared(res *registry.Resource, kv storage.KeyValue) (runtime.Object, error) {
	return s.decCache.get(cacheKey(res, kv.Key), kv.ModRevision, func() (runtime.Object, error) { return decodeKV(res, kv) })
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
