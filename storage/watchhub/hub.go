// Package watchhub fans the revision log of a storage backend out to
// watchers. Backends append each committed batch of events once; every
// watcher gets its own queue, so a slow watcher never blocks a writer and is
// dropped (its channel closed) when it falls too far behind.
package watchhub

import (
	"context"
	"strings"
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
	watchers   map[*watcher]struct{}
	maxPending int
	closed     bool
}

// New returns a hub that keeps up to maxHistory events for watches that
// start in the past.
func New(maxHistory int) *Hub {
	return &Hub{maxHistory: maxHistory, watchers: map[*watcher]struct{}{}, maxPending: DefaultMaxPending}
}

// Publish appends committed events (ascending revisions) and delivers them.
// The backend must call it in commit order.
func (h *Hub) Publish(events []storage.Event) {
	if len(events) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.history = append(h.history, events...)
	if over := len(h.history) - h.maxHistory; over > 0 && h.maxHistory > 0 {
		// Drop in chunks so trimming is amortised.
		drop := over
		if quarter := h.maxHistory / 4; drop < quarter {
			drop = quarter
		}
		if drop > len(h.history) {
			drop = len(h.history)
		}
		h.history = append([]storage.Event(nil), h.history[drop:]...)
	}
	for w := range h.watchers {
		w.deliver(events)
	}
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

// Watch registers a watcher for prefix and replays history after fromRev.
// compactRev is the backend's compaction point: history at or below it is
// gone. currentRev is the backend's current revision. fromRev 0 means now.
func (h *Hub) Watch(ctx context.Context, prefix string, fromRev, compactRev, currentRev int64) (<-chan []storage.Event, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, storage.ErrClosed
	}
	w := &watcher{prefix: prefix, out: make(chan []storage.Event, 16), wake: make(chan struct{}, 1), maxPending: h.maxPending, done: make(chan struct{})}
	if fromRev > 0 && fromRev < currentRev {
		if fromRev < compactRev {
			return nil, storage.ErrCompacted
		}
		// History must cover every revision after fromRev.
		if len(h.history) == 0 || h.history[0].KV.ModRevision > fromRev+1 {
			return nil, storage.ErrCompacted
		}
		var replay []storage.Event
		for _, ev := range h.history {
			if ev.KV.ModRevision > fromRev {
				replay = append(replay, ev)
			}
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

// Close drops every watcher.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for w := range h.watchers {
		w.stop()
		delete(h.watchers, w)
	}
}

type watcher struct {
	prefix     string
	out        chan []storage.Event
	wake       chan struct{}
	done       chan struct{}
	mu         sync.Mutex
	pending    []storage.Event
	maxPending int
	dropped    bool
	stopOnce   sync.Once
}

func (w *watcher) deliver(events []storage.Event) {
	w.mu.Lock()
	if w.dropped {
		w.mu.Unlock()
		return
	}
	for _, ev := range events {
		if strings.HasPrefix(ev.KV.Key, w.prefix) {
			w.pending = append(w.pending, ev)
		}
	}
	if len(w.pending) > w.maxPending {
		w.dropped = true
		w.pending = nil
	}
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *watcher) stop() { w.stopOnce.Do(func() { close(w.done) }) }

// pump moves queued events to the output channel until ctx ends, the hub
// closes, or the watcher is dropped for falling behind.
func (w *watcher) pump(ctx context.Context, unregister func()) {
	defer close(w.out)
	defer unregister()
	for {
		w.mu.Lock()
		batch, dropped := w.pending, w.dropped
		w.pending = nil
		w.mu.Unlock()
		if dropped {
			return
		}
		if len(batch) > 0 {
			select {
			case w.out <- batch:
				continue
			case <-ctx.Done():
				return
			case <-w.done:
				return
			}
		}
		select {
		case <-w.wake:
		case <-ctx.Done():
			return
		case <-w.done:
			return
		}
	}
}
