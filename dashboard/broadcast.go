package dashboard

import (
	"maps"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"
)

// broadcaster tells every live-update stream which kinds of objects changed
// since it last looked; streams pace themselves (see serveWatch).
type broadcaster struct {
	mu   sync.Mutex
	subs map[*subscription]struct{}
}

// subscription is one stream's pending changes.
type subscription struct {
	mu      sync.Mutex
	pending map[string]struct{}
}

func newBroadcaster() *broadcaster {
	return &broadcaster{subs: map[*subscription]struct{}{}}
}

func (b *broadcaster) subscribe() *subscription {
	s := &subscription{pending: map[string]struct{}{}}
	b.mu.Lock()
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	return s
}

func (b *broadcaster) unsubscribe(s *subscription) {
	b.mu.Lock()
	delete(b.subs, s)
	b.mu.Unlock()
}

func (b *broadcaster) notify(kind string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs {
		s.mu.Lock()
		s.pending[kind] = struct{}{}
		s.mu.Unlock()
	}
}

// take returns the kinds changed since the last take, sorted.
func (s *subscription) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	kinds := slices.Sorted(maps.Keys(s.pending))
	clear(s.pending)
	return kinds
}

// handler notifies kind on every informer event.
func (b *broadcaster) handler(kind string) cache.ResourceEventHandler {
	note := func(any) { b.notify(kind) }
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    note,
		UpdateFunc: func(_, obj any) { note(obj) },
		DeleteFunc: note,
	}
}

// metaOf is the object metadata of an informer object (or tombstone).
func metaOf(obj any) (interface {
	GetNamespace() string
	GetName() string
	GetLabels() map[string]string
}, error) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	return meta.Accessor(obj)
}
