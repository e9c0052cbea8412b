package apiserver

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"reflect"
	"strconv"
	"time"

	"github.com/batchlet/batchlet/apiserver/endpoints"

	"github.com/batchlet/batchlet/apiserver/genericstore"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/batchlet/batchlet/apiserver/registry"
	"github.com/batchlet/batchlet/storage"
)

// localWatchBuffer is how many events a local watch holds for a slow
// informer before the server side waits.
const localWatchBuffer = 256

// InitialEventsEndAnnotation marks the bookmark that ends a WatchList's
// initial events.
const InitialEventsEndAnnotation = metav1.InitialEventsAnnotationKey

// ListerWatcher lists and watches with or without a context, so it feeds
// both client-go's informers (which take a cache.ListerWatcher) and
// context-aware callers.
type ListerWatcher interface {
	cache.ListerWatcher
	cache.ListerWatcherWithContext
}

// LocalListerWatcher serves an informer of gvr in namespace ("" for all)
// straight from this server's store, in the same process: no HTTP, no JSON.
// Every version is decoded once and the object handed to all in-process
// informers is one shared object (read-only, as informer caches always
// are) sharing all but its top-level struct with the server's decoded
// one, instead of each informer decoding the watch stream itself. With
// metadataOnly the objects are *metav1.PartialObjectMetadata, as the
// metadata client returns them. tweak, when set, edits the options of every
// list and watch (like informers' TweakListOptions). The objects carry no
// metadata.managedFields: like kube-controller-manager's informers, which
// trim them, in-process informers have no use for them, and they are a
// large part of a pod.
func (s *Server) LocalListerWatcher(gvr schema.GroupVersionResource, namespace string, metadataOnly bool, tweak func(*metav1.ListOptions)) (ListerWatcher, error) {
	res := s.served.Get(gvr)
	if res == nil {
		return nil, fmt.Errorf("resource %s is not served", gvr)
	}
	return &localListerWatcher{s: s, res: res, namespace: namespace, metadataOnly: metadataOnly, tweak: tweak}, nil
}

type localListerWatcher struct {
	s            *Server
	res          *registry.Resource
	namespace    string
	metadataOnly bool
	tweak        func(*metav1.ListOptions)
}

// ListWithContext implements cache.ListerWatcherWithContext.
func (l *localListerWatcher) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	f, err := l.options(&opts)
	if err != nil {
		return nil, err
	}
	lr, err := l.s.objects.ListStored(ctx, l.res, l.namespace, f, opts.Limit, opts.Continue, opts.ResourceVersion, string(opts.ResourceVersionMatch))
	if err != nil {
		return nil, err
	}
	objs := make([]runtime.Object, len(lr.KVs))
	for i, kv := range lr.KVs {
		// A list is copied into the list's items anyway: make each
		// object's informer form once, without churning the watch
		// events' shared ones.
		if objs[i], err = l.copyOf(kv, lr.Items[i]); err != nil {
			return nil, err
		}
	}
	var list runtime.Object = &metav1.PartialObjectMetadataList{}
	if !l.metadataOnly {
		list = l.res.NewList()
	}
	if err := meta.SetList(list, objs); err != nil {
		return nil, fmt.Errorf("build %s list: %w", l.res.Kind, err)
	}
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return nil, err
	}
	lm.SetResourceVersion(strconv.FormatInt(lr.Rev, 10))
	lm.SetContinue(lr.Cont)
	lm.SetRemainingItemCount(lr.Remaining)
	return list, nil
}

// WatchWithContext implements cache.ListerWatcherWithContext.
func (l *localListerWatcher) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	f, err := l.options(&opts)
	if err != nil {
		return nil, err
	}
	var timeout int64
	if opts.TimeoutSeconds != nil {
		timeout = *opts.TimeoutSeconds
	}
	wctx, cancel := withTimeout(ctx, time.Duration(timeout)*time.Second)
	rv := opts.ResourceVersion
	sendInitial := (opts.SendInitialEvents != nil && *opts.SendInitialEvents) || (opts.SendInitialEvents == nil && (rv == "" || rv == "0"))
	st, err := l.s.objects.Watch(wctx, l.res, l.namespace, f, rv, sendInitial)
	if err != nil {
		cancel()
		return nil, err
	}
	w := &localWatch{l: l, f: f, ctx: wctx, cancel: cancel, result: make(chan watch.Event, localWatchBuffer), lastRev: st.LastRev}
	initialEnd := opts.SendInitialEvents != nil && *opts.SendInitialEvents && opts.AllowWatchBookmarks
	go w.run(st, opts.AllowWatchBookmarks, initialEnd)
	return w, nil
}

// List implements cache.Lister.
func (l *localListerWatcher) List(opts metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), opts)
}

// Watch implements cache.Watcher.
func (l *localListerWatcher) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), opts)
}

// options applies tweak and parses the selectors.
func (l *localListerWatcher) options(opts *metav1.ListOptions) (*genericstore.Filter, error) {
	if l.tweak != nil {
		l.tweak(opts)
	}
	return genericstore.ParseFilter(l.res, url.Values{"labelSelector": {opts.LabelSelector}, "fieldSelector": {opts.FieldSelector}})
}

// metaVariant is the InformerCopy variant of metadata-only objects.
const metaVariant = "meta|"

// object is what informers get for a stored version: one object shared by
// every local informer, made from the server's own decoded object (decoded,
// when the caller has it).
func (l *localListerWatcher) object(kv storage.KeyValue, decoded runtime.Object) (runtime.Object, error) {
	variant := ""
	if l.metadataOnly {
		variant = metaVariant
	}
	return l.s.objects.InformerCopy(l.res, kv, variant, func() (runtime.Object, error) { return l.copyOf(kv, decoded) })
}

// copyOf is what informers get for a stored version: decoded, when the
// caller has it, or the server's shared decoded object, less its
// managedFields. It shares everything else with the server's object
// instead of deep-copying it: informers must not modify the objects they
// are handed (client-go's contract for informer caches, which the
// controllers here keep — they copy before changing), and the server's
// decoded objects are read-only too, so sharing costs one shallow struct
// per version where a deep copy cost a pod's every map and slice.
func (l *localListerWatcher) copyOf(kv storage.KeyValue, decoded runtime.Object) (runtime.Object, error) {
	obj := decoded
	if obj == nil && l.metadataOnly {
		// A custom resource's metadata reads alone, without the whole
		// decode and defaulting (the retention sweep's and the garbage
		// collector's lists of ContainerResults).
		md, ok, err := l.s.objects.MetadataOf(l.res, kv)
		if err != nil {
			return nil, err
		}
		if ok {
			obj = md
		}
	}
	if obj == nil {
		var err error
		if obj, err = l.s.objects.DecodedShared(l.res, kv); err != nil {
			return nil, err
		}
	}
	if l.metadataOnly {
		pm := endpoints.PartialMetadata(obj) // its own ObjectMeta struct
		pm.ManagedFields = nil
		return pm, nil
	}
	return withoutManagedFields(obj), nil
}

// withoutManagedFields is obj less its managedFields, which are a large
// part of an object (a pod's are several KB) and no informer reads: a
// shallow copy without them, sharing the rest with obj, which stays whole.
func withoutManagedFields(obj runtime.Object) runtime.Object {
	switch o := obj.(type) {
	case *corev1.Pod: // the bulk of local watch events
		shallow := *o
		shallow.ManagedFields = nil
		return &shallow
	case *unstructured.Unstructured:
		// The metadata is a map of the shared content: a copy of both
		// levels leaves the original's map alone.
		content := maps.Clone(o.Object)
		if md, ok := content["metadata"].(map[string]any); ok {
			md = maps.Clone(md)
			delete(md, "managedFields")
			content["metadata"] = md
		}
		return &unstructured.Unstructured{Object: content}
	}
	if _, ok := obj.(metav1.ObjectMetaAccessor); !ok {
		// Neither a struct embedding its ObjectMeta nor unstructured: copy
		// all, then drop them.
		out := obj.DeepCopyObject()
		genericstore.Accessor(out).SetManagedFields(nil)
		return out
	}
	shallow := reflect.New(reflect.TypeOf(obj).Elem())
	shallow.Elem().Set(reflect.ValueOf(obj).Elem())
	sobj := shallow.Interface().(runtime.Object)
	genericstore.Accessor(sobj).SetManagedFields(nil)
	return sobj
}

// bookmark is a BOOKMARK event at rev, marking the end of the initial
// events when initialEnd.
func (l *localListerWatcher) bookmark(rev int64, initialEnd bool) watch.Event {
	obj := l.res.New()
	obj.GetObjectKind().SetGroupVersionKind(l.res.GVK())
	if l.metadataOnly {
		obj = endpoints.PartialMetadata(obj)
	}
	m := genericstore.Accessor(obj)
	m.SetResourceVersion(strconv.FormatInt(rev, 10))
	if initialEnd {
		m.SetAnnotations(map[string]string{InitialEventsEndAnnotation: "true"})
	}
	return watch.Event{Type: watch.Bookmark, Object: obj}
}

// localWatch is one local watch: a goroutine turns storage events into
// watch events until Stop, the context's end or the storage watch closing.
type localWatch struct {
	l       *localListerWatcher
	f       *genericstore.Filter
	ctx     context.Context
	cancel  context.CancelFunc
	result  chan watch.Event
	lastRev int64
}

// Stop implements watch.Interface.
func (w *localWatch) Stop() { w.cancel() }

// ResultChan implements watch.Interface.
func (w *localWatch) ResultChan() <-chan watch.Event { return w.result }

func (w *localWatch) run(st genericstore.WatchStart, bookmarks, initialEnd bool) {
	defer close(w.result)
	defer w.cancel()
	if st.Failed != nil {
		w.send(watch.Event{Type: watch.Error, Object: endpoints.StatusOf(st.Failed)})
		return
	}
	if st.Initial != nil {
		for i, kv := range st.Initial.KVs {
			obj, err := w.l.object(kv, st.Initial.Items[i])
			if err != nil || !w.send(watch.Event{Type: watch.Added, Object: obj}) {
				w.fail(err)
				return
			}
		}
	}
	if initialEnd && !w.send(w.l.bookmark(w.lastRev, true)) {
		return
	}
	w.l.s.objects.Pump(w.ctx, st.Events, bookmarks, w)
}

func (w *localWatch) Event(ev storage.Event) bool { return w.forward(ev) }
func (w *localWatch) Bookmark() bool              { return w.send(w.l.bookmark(w.lastRev, false)) }
func (w *localWatch) Flush()                      {}

// forward sends the watch event one storage event is for this watch.
func (w *localWatch) forward(ev storage.Event) bool {
	w.lastRev = ev.KV.ModRevision
	if w.l.metadataOnly && w.l.res.CustomResource && w.f.Empty() {
		if sent, ok := w.forwardMetadata(ev); ok {
			return sent
		}
	}
	typ, decoded, err := w.l.s.objects.Classify(w.l.res, w.f, ev)
	if err != nil {
		w.fail(err)
		return false
	}
	if typ == "" {
		return true
	}
	obj, err := w.l.object(ev.KV, decoded)
	if err != nil {
		w.fail(err)
		return false
	}
	return w.send(watch.Event{Type: typ, Object: obj})
}

// forwardMetadata is forward for a metadata-only watch without selectors
// (the garbage collector's) of a version whose metadata can be read
// without decoding the whole object (see genericstore.Store.MetadataOf):
// every ContainerResult's, which nothing else in the process decodes. ok
// is false when it cannot.
func (w *localWatch) forwardMetadata(ev storage.Event) (sent, ok bool) {
	obj, err := w.l.s.objects.InformerCopy(w.l.res, ev.KV, metaVariant, func() (runtime.Object, error) {
		obj, ok, err := w.l.s.objects.MetadataOf(w.l.res, ev.KV)
		if err != nil || !ok {
			return nil, errNoMetadata
		}
		return w.l.copyOf(ev.KV, obj)
	})
	if err != nil {
		return false, false // decoded whole, by the caller
	}
	return w.send(watch.Event{Type: genericstore.Unfiltered(ev.Type), Object: obj}), true
}

// errNoMetadata is forwardMetadata's answer when a version's metadata
// cannot be read alone.
var errNoMetadata = errors.New("metadata not readable alone")

// fail sends err (when there is one) as the watch's last event.
func (w *localWatch) fail(err error) {
	if err != nil {
		w.send(watch.Event{Type: watch.Error, Object: endpoints.StatusOf(apierrors.NewInternalError(err))})
	}
}

// send delivers ev unless the watch has been stopped.
func (w *localWatch) send(ev watch.Event) bool {
	select {
	case w.result <- ev:
		return true
	case <-w.ctx.Done():
		return false
	}
}
