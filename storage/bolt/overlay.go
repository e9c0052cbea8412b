package bolt

import (
	"strings"

	"github.com/batchlet/batchlet/storage"
)

// recentSize is how many checkpointed keys the overlay keeps answering
// for: an object is typically read for its next update within a second or
// two of its last write (a pod is bound, started and finished in quick
// succession), and serving that read from memory saves a bbolt read
// transaction per update.
const recentSize = 8192

// overlay holds the writes that are durable in the WAL but not yet
// checkpointed into bbolt: the latest state of each such key and the
// events in revision order. It also remembers the state of the keys
// checkpointed most recently, which is what bbolt holds for them as long
// as no newer write is in keys. Backend.mu guards it.
type overlay struct {
	keys    map[string]ovEntry
	pending []storage.Event // ascending revisions, all above the bbolt revision
	recent  recentKeys
	// generation counts checkpoints: a value read from bbolt at one
	// generation is current while the generation has not moved.
	generation uint64
}

// ovEntry is a key's latest state; kv.ModRevision is the revision of the
// change, also for a delete.
type ovEntry struct {
	kv      storage.KeyValue
	deleted bool
}

func newOverlay() *overlay {
	return &overlay{keys: map[string]ovEntry{}, recent: newRecentKeys(recentSize)}
}

// get returns the key's state: found reports whether the overlay knows the
// key (pending or recently checkpointed); kv is nil when it was deleted.
func (o *overlay) get(key string) (kv *storage.KeyValue, found bool) {
	e, ok := o.keys[key]
	if !ok {
		e, ok = o.recent.items[key]
	}
	if !ok {
		return nil, false
	}
	if e.deleted {
		return nil, true
	}
	out := e.kv
	return &out, true
}

// install records committed events.
func (o *overlay) install(events []storage.Event) {
	for _, ev := range events {
		o.keys[ev.KV.Key] = ovEntry{kv: ev.KV, deleted: ev.Type == storage.EventDeleted}
	}
	o.pending = append(o.pending, events...)
}

// checkpointed forgets the first n pending events, now in bbolt, and moves
// the keys whose latest change is among them to the recent ones.
func (o *overlay) checkpointed(n int) {
	done := o.pending[:n]
	last := done[n-1].KV.ModRevision
	for _, ev := range done {
		if e, ok := o.keys[ev.KV.Key]; ok && e.kv.ModRevision <= last {
			delete(o.keys, ev.KV.Key)
			o.recent.put(ev.KV.Key, e)
		}
	}
	o.pending = o.pending[n:]
	o.generation++
}

// recentKeys is a fixed number of keys with their checkpointed state; the
// oldest one inserted makes room for a new one.
type recentKeys struct {
	items map[string]ovEntry
	ring  []string // keys in insertion order, each once
	next  int
}

func newRecentKeys(size int) recentKeys {
	return recentKeys{items: make(map[string]ovEntry, size), ring: make([]string, size)}
}

// put records key's state as checkpointed. A deleted key keeps no value.
func (r *recentKeys) put(key string, e ovEntry) {
	if e.deleted {
		e.kv.Value = nil
	}
	if _, ok := r.items[key]; ok {
		r.items[key] = e
		return
	}
	if old := r.ring[r.next]; old != "" {
		delete(r.items, old)
	}
	r.ring[r.next] = key
	r.next = (r.next + 1) % len(r.ring)
	r.items[key] = e
}

// under returns the states of the keys under prefix and after after, as
// lister overrides (nil: deleted).
func (o *overlay) under(prefix, after string) map[string]*storage.KeyValue {
	out := map[string]*storage.KeyValue{}
	for key, e := range o.keys {
		if !strings.HasPrefix(key, prefix) || key <= after {
			continue
		}
		if e.deleted {
			out[key] = nil
			continue
		}
		kv := e.kv
		out[key] = &kv
	}
	return out
}

// since returns the pending events after rev.
func (o *overlay) since(rev int64) []storage.Event {
	for i, ev := range o.pending {
		if ev.KV.ModRevision > rev {
			return o.pending[i:len(o.pending):len(o.pending)]
		}
	}
	return nil
}
