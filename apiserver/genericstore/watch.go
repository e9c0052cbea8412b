package genericstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/batchlet/batchlet/apiserver/registry"
	"github.com/batchlet/batchlet/storage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"
	kjson "sigs.k8s.io/json"
)

// WatchStart is where a watch begins: the initial list to send (with
// sendInitialEvents), the revision it starts after, and the storage events
// that follow. Failed is an error to send as the watch's only event (the
// requested revision is compacted away, or the store failed).
type WatchStart struct {
	Initial *ListResult
	LastRev int64
	Events  <-chan []storage.Event
	Failed  error
}

// Watch resolves a watch's resourceVersion and sendInitialEvents into
// a starting point; errors are API errors to answer the request with.
func (s *Store) Watch(ctx context.Context, res *registry.Resource, namespace string, f *Filter, rv string, sendInitial bool) (WatchStart, error) {
	var st WatchStart
	var err error
	switch {
	case sendInitial:
		lr, err := s.ListStored(ctx, res, namespace, f, 0, "", "", "")
		if err != nil {
			return st, err
		}
		st.Initial, st.LastRev = lr, lr.Rev
	case rv == "" || rv == "0":
		st.LastRev = s.store.CurrentRevision()
	default:
		if st.LastRev, err = strconv.ParseInt(rv, 10, 64); err != nil {
			return st, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version: %s", rv))
		}
		if err := s.waitForRevision(ctx, st.LastRev); err != nil {
			return st, err
		}
	}
	st.Events, err = s.store.Watch(ctx, KeyPrefix(res, namespace), st.LastRev)
	switch {
	case errors.Is(err, storage.ErrFuture):
		return st, apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", st.LastRev, s.store.CurrentRevision()), 1)
	case errors.Is(err, storage.ErrCompacted):
		st.Failed = apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", st.LastRev, s.store.CompactRevision()))
	case err != nil:
		st.Failed = apierrors.NewInternalError(err)
	}
	return st, nil
}

// EventSink is where a watch's events go: an HTTP stream (watcher) or an
// in-process channel (localWatch).
type EventSink interface {
	// Event sends what one storage event is for this watch, if anything.
	Event(storage.Event) bool
	// Bookmark sends a BOOKMARK at the last revision sent.
	Bookmark() bool
	// Flush pushes what was sent to the client.
	Flush()
}

// Pump feeds storage events to sink, with a bookmark every
// BookmarkInterval when asked, until ctx ends, the storage watch closes or
// the sink fails.
func (s *Store) Pump(ctx context.Context, ch <-chan []storage.Event, bookmarks bool, sink EventSink) {
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
			if !sink.Bookmark() {
				return
			}
			sink.Flush()
			timer.Reset(s.cfg.BookmarkInterval)
		case batch, ok := <-ch:
			if !ok {
				return
			}
			for _, ev := range batch {
				if !sink.Event(ev) {
					return
				}
			}
			sink.Flush()
		}
	}
}

// Classify turns one storage event into ADDED/MODIFIED/DELETED for a
// watcher with Filter f, with selector transitions: starts matching →
// ADDED, stops matching → DELETED; "" when the watcher gets nothing. obj
// is the shared decoded object: read-only.
func (s *Store) Classify(res *registry.Resource, f *Filter, ev storage.Event) (watch.EventType, runtime.Object, error) {
	obj, err := s.decodedEvent(res, ev)
	if err != nil {
		return "", nil, err
	}
	if f.empty() {
		return unfiltered(ev.Type), obj, nil
	}
	matches, prevMatches := s.versionMatches(f, ev.KV, obj), false
	if ev.PrevKV != nil {
		prev, err := s.DecodedShared(res, *ev.PrevKV)
		if err != nil {
			return "", nil, err
		}
		prevMatches = s.versionMatches(f, *ev.PrevKV, prev)
	}
	return transition(ev.Type, matches, prevMatches), obj, nil
}

// versionMatches is f.matches for obj, the decoded stored version kv, with
// the version's field set (a map of a pod's ten fields) made once and
// shared by every field-selected watcher (each node agent's is one), which
// would each make it twice per event, for the version and its previous
// one.
func (s *Store) versionMatches(f *Filter, kv storage.KeyValue, obj runtime.Object) bool {
	if f.empty() {
		return true
	}
	if !f.labels.Empty() && !f.labels.Matches(labels.Set(Accessor(obj).GetLabels())) {
		return false
	}
	if f.fields.Empty() {
		return true
	}
	set, _ := s.fieldCache.get(versionOf(f.res, "", kv), func() (fields.Set, error) { return fieldSet(f.res, obj), nil })
	return f.fields.Matches(set)
}

// unfiltered is the watch event of a storage event for a watcher without
// selectors.
func unfiltered(t storage.EventType) watch.EventType {
	switch t {
	case storage.EventCreated:
		return watch.Added
	case storage.EventUpdated:
		return watch.Modified
	case storage.EventDeleted:
		return watch.Deleted
	}
	return ""
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

// DecodedShared returns the (shared, read-only) object of a stored version.
func (s *Store) DecodedShared(res *registry.Resource, kv storage.KeyValue) (runtime.Object, error) {
	return s.decCache.getSized(versionOf(res, "", kv), len(kv.Value), func() (runtime.Object, error) { return decodeKV(res, kv) })
}

// MetadataOf is, for readers of a version's metadata alone (metadata-only
// watchers), an object whose metadata is the version's: the server's
// shared decoded object when it has one, else for a JSON-stored version
// (a custom resource's) a *metav1.PartialObjectMetadata decoded from the
// metadata field alone, which skips building the whole object's maps and
// defaulting it (neither changes its metadata). ok is false for versions
// stored otherwise: the caller decodes them whole. Either is read-only.
func (s *Store) MetadataOf(res *registry.Resource, kv storage.KeyValue) (obj runtime.Object, ok bool, err error) {
	if bytes.HasPrefix(kv.Value, protobufMagic) || res.FromStorage != nil {
		return nil, false, nil
	}
	if obj, ok := s.decCache.peek(versionOf(res, "", kv)); ok {
		return obj, true, nil
	}
	var v struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(kv.Value, &v); err != nil {
		return nil, false, fmt.Errorf("decode stored %s metadata: %w", res.Kind, err)
	}
	pm := &metav1.PartialObjectMetadata{ObjectMeta: v.Metadata}
	pm.ResourceVersion = strconv.FormatInt(kv.ModRevision, 10)
	return pm, true, nil
}

// Unfiltered is the watch event of a storage event for a watcher without
// selectors.
func Unfiltered(t storage.EventType) watch.EventType { return unfiltered(t) }

// Empty says whether f passes every object.
func (f *Filter) Empty() bool { return f.empty() }
