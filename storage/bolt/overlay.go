package bolt

import (
	"strings"

	"github.com/batchlet/batchlet/storage"
)

// overlay holds the writes that are durable in the WAL but not yet
// checkpointed into bbolt: the latest state of each such key and the
// events in revision order. Backend.mu guards it.
type overlay struct {
	keys    map[string]ovEntry
	pending []storage.Event // ascending revisions, all above the bbolt revision
}

// ovEntry is a key's latest state; kv.ModRevision is the revision of the
// change, also for a delete.
type ovEntry struct {
	kv      storage.KeyValue
	deleted bool
}

func newOverlay() *overlay { return &overlay{keys: map[string]ovEntry{}} }

// get returns the key's state: found reports whether the overlay knows the
// key; kv is nil when it was deleted.
func (o *overlay) get(key string) (kv *storage.KeyValue, found bool) {
	e, ok := o.keys[key]
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

// checkpointed forgets the first n pending events, now in bbolt, and the
// keys whose latest change is among them.
func (o *overlay) checkpointed(n int) {
	done := o.pending[:n]
	last := done[n-1].KV.ModRevision
	for _, ev := range done {
		if e, ok := o.keys[ev.KV.Key]; ok && e.kv.ModRevision <= last {
			delete(o.keys, ev.KV.Key)
		}
	}
	o.pending = o.pending[n:]
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
