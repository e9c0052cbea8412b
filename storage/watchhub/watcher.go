package watchhub

import (
	"context"
	"strings"
	"sync"

	"github.com/batchlet/batchlet/storage"
)

// watcher is one registered watch: a queue of pending events and a pump
// goroutine that moves them to the output channel.
type watcher struct {
	prefix     string
	minRev     int64 // only events with a greater revision are delivered
	out        chan []storage.Event
	wake       chan struct{}
	done       chan struct{}
	mu         sync.Mutex
	pending    []storage.Event
	maxPending int
	dropped    bool
	stopOnce   sync.Once
}

// deliver queues the events that match the watcher. It shares the caller's
// slice when every event matches and nothing is pending; events must then
// be a full slice (len == cap) so later appends reallocate.
func (w *watcher) deliver(events []storage.Event) {
	w.mu.Lock()
	if w.dropped {
		w.mu.Unlock()
		return
	}
	if len(w.pending) == 0 && w.matchesAll(events) {
		w.pending = events
	} else {
		for _, ev := range events {
			if w.matches(ev) {
				w.pending = append(w.pending, ev)
			}
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

func (w *watcher) matches(ev storage.Event) bool {
	return ev.KV.ModRevision > w.minRev && strings.HasPrefix(ev.KV.Key, w.prefix)
}

func (w *watcher) matchesAll(events []storage.Event) bool {
	for _, ev := range events {
		if !w.matches(ev) {
			return false
		}
	}
	return true
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
