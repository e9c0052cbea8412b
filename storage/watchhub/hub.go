// Package watchhub fans the revision log of a storage backend out to
// watchers. Backends append each committed batch of events once; every
// watcher gets its own queue of references to those events (values are never
// copied per watcher), so a slow watcher never blocks a writer and is dropped
// (its channel closed) when it falls too far behind.
package watchhub

import (
	"context"
	"sort"
	"sync"

	"github.com/batchlet/batchlet/storage"
)

// DefaultMaxPending is how many undelivered events a watcher may have queued
// before it is dropped.
const DefaultMaxPending = 100_000

// Hub keeps a bounded in-memory history of events and the live watchers.
type Hub struct {
	mu         sync.Mutex
	history    []storage.Event // ascending by ModRevision
	maxHistory int
	lastRev    int64 // revision of the latest published event
	watchers   map[*watcher]struct{}
	maxPending int
	closed     bool
}

// New returns a hub at revision 0 that keeps up to maxHistory events for
// watches that start in the past.
func New(maxHistory int) *Hub {
	return NewAt(maxHistory, 0)
}

// NewAt returns a hub whose latest published revision is rev, for a backend
// that reopens a store with existing data. Load history with Publish.
func NewAt(maxHistory int, rev int64) *Hub {
	return &Hub{
		maxHistory: maxHistory,
		lastRev:    rev,
		watchers:   map[*watcher]struct{}{},
		maxPending: DefaultMaxPending,
	}
}

// SetMaxPending changes how many undelivered events a watcher may queue
// before it is dropped (for watchers registered afterwards).
func (h *Hub) SetMaxPending(n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.maxPending = n
}

// Publish appends committed events (ascending revisions) and delivers them.
// The backend must call it in commit order. The hub keeps references to the
// events: callers must not modify them afterwards.
func (h *Hub) Publish(events []storage.Event) {
	if len(events) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.appendHistory(events)
	if last := events[len(events)-1].KV.ModRevision; last > h.lastRev {
		h.lastRev = last
	}
	// A full slice expression makes any append by a watcher reallocate, so
	// watchers may share the batch safely.
	shared := events[:len(events):len(events)]
	for w := range h.watchers {
		w.deliver(shared)
	}
}

func (h *Hub) appendHistory(events []storage.Event) {
	if h.maxHistory <= 0 {
		return
	}
	h.history = append(h.history, events...)
	over := len(h.history) - h.maxHistory
	if over <= 0 {
		return
	}
	// Drop in chunks so trimming is amortised.
	drop := max(over, h.maxHistory/4)
	drop = min(drop, len(h.history))
	h.history = append([]storage.Event(nil), h.history[drop:]...)
}

// Revision is the revision of the latest published event.
func (h *Hub) Revision() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lastRev
}

// OldestRevision is the revision of the oldest event still in history, or 0.
func (h *Hub) OldestRevision() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.history) == 0 {
		return 0
	}
	return h.history[0].KV.ModRevision
}

// Watch registers a watcher for prefix that receives every event with a
// revision greater than fromRev, replaying history first. compactRev is the
// backend's compaction point: history at or below it is gone. fromRev 0
// means "from the latest published revision". A fromRev beyond the latest
// published revision is allowed (the backend checks it against its
// committed revision); events up to it are skipped.
func (h *Hub) Watch(ctx context.Context, prefix string, fromRev, compactRev int64) (<-chan []storage.Event, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, storage.ErrClosed
	}
	if fromRev == 0 {
		fromRev = h.lastRev
	}
	w := &watcher{
		prefix:     prefix,
		minRev:     fromRev,
		out:        make(chan []storage.Event, 16),
		wake:       make(chan struct{}, 1),
		maxPending: h.maxPending,
		done:       make(chan struct{}),
	}
	if fromRev < h.lastRev {
		replay, err := h.since(fromRev, compactRev)
		if err != nil {
			return nil, err
		}
		w.deliver(replay)
	}
	h.watchers[w] = struct{}{}
	go w.pump(ctx, func() {
		h.mu.Lock()
		delete(h.watchers, w)
		h.mu.Unlock()
	})
	return w.out, nil
}

// since returns the history after fromRev, or ErrCompacted when it does not
// reach back that far. Callers hold h.mu.
func (h *Hub) since(fromRev, compactRev int64) ([]storage.Event, error) {
	if fromRev < compactRev {
		return nil, storage.ErrCompacted
	}
	if len(h.history) == 0 || h.history[0].KV.ModRevision > fromRev+1 {
		return nil, storage.ErrCompacted
	}
	i := sort.Search(len(h.history), func(i int) bool { return h.history[i].KV.ModRevision > fromRev })
	return h.history[i:len(h.history):len(h.history)], nil
}

// Close drops every watcher; later Watch calls fail with ErrClosed.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for w := range h.watchers {
		w.stop()
		delete(h.watchers, w)
	}
}
