package bolt

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"

	bbolt "go.etcd.io/bbolt"

	"github.com/batchlet/batchlet/storage"
)

// Get returns the current value of key.
func (b *Backend) Get(ctx context.Context, key string) (storage.KeyValue, error) {
	kv, err := b.GetShared(ctx, key)
	if err != nil {
		return kv, err
	}
	kv.Value = cloneBytes(kv.Value)
	return kv, nil
}

// GetShared is Get for a caller that only reads the value: it may be the
// store's own (shared with watch events), so it must not be changed.
func (b *Backend) GetShared(ctx context.Context, key string) (storage.KeyValue, error) {
	if err := b.readable(ctx); err != nil {
		return storage.KeyValue{}, err
	}
	b.stats.reads.Add(1)
	b.mu.RLock()
	kv, found := b.ov.get(key)
	gen := b.ov.generation
	b.mu.RUnlock()
	if found {
		if kv == nil {
			return storage.KeyValue{}, storage.ErrNotFound
		}
		return *kv, nil
	}
	var out storage.KeyValue
	err := b.db.View(func(tx *bbolt.Tx) error {
		rec := tx.Bucket(bucketKV).Get([]byte(key))
		if rec == nil {
			return storage.ErrNotFound
		}
		var err error
		out, err = decodeKV(key, rec, b.legacyUpTo)
		out.Value = cloneBytes(out.Value)
		return err
	})
	if err != nil {
		return out, mapErr(err)
	}
	b.remember(out, gen)
	return out, nil
}

// remember keeps kv, read from bbolt while the overlay was at generation
// gen, among the recent keys, so that keys read often but rarely written
// (a namespace, checked on every create) are served from memory too. It
// does so only if no checkpoint has changed bbolt since and no newer write
// is pending: then kv is still what bbolt holds.
func (b *Backend) remember(kv storage.KeyValue, gen uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, pending := b.ov.keys[kv.Key]; pending || b.ov.generation != gen {
		return
	}
	b.ov.recent.put(kv.Key, ovEntry{kv: kv})
}

// List returns the keys under prefix in key order, as of opts.Revision when
// set (served from the log while it reaches back that far).
func (b *Backend) List(ctx context.Context, prefix string, opts storage.ListOptions) (storage.ListResult, error) {
	items := []storage.KeyValue{}
	res, err := b.Visit(ctx, prefix, opts, func(key []byte, kv storage.KeyValue) (bool, error) {
		kv.Key, kv.Value = string(key), cloneBytes(kv.Value)
		items = append(items, kv)
		return false, nil
	})
	res.Items = items
	return res, err
}

// Visit is List for a caller that looks at each value once: instead of
// copying every key and value out of the file, it calls visit with each key
// under prefix in key order, as of opts.Revision and after opts.After, up
// to opts.Limit keys. kv carries the value and revisions (its Key is left
// empty). key and kv.Value may alias the store's memory: they are valid
// only during the call and must not be modified, so visit copies what it
// keeps. visit returning true ends the walk there; More and Remaining then
// count the keys left after the last one visited. Items is left nil. visit
// runs inside a read transaction: it should be quick.
func (b *Backend) Visit(ctx context.Context, prefix string, opts storage.ListOptions, visit func(key []byte, kv storage.KeyValue) (stop bool, err error)) (storage.ListResult, error) {
	if err := b.readable(ctx); err != nil {
		return storage.ListResult{}, err
	}
	b.stats.reads.Add(1)
	b.mu.RLock()
	tx, err := b.db.Begin(false)
	if err != nil {
		b.mu.RUnlock()
		return storage.ListResult{}, fmt.Errorf("list %s: %w", prefix, mapErr(err))
	}
	defer func() { _ = tx.Rollback() }()
	l := lister{prefix: prefix, after: opts.After, limit: opts.Limit, legacyUpTo: b.legacyUpTo}
	rev, err := b.snapshot(tx, &l, opts.Revision)
	b.mu.RUnlock()
	if err != nil {
		return storage.ListResult{}, fmt.Errorf("list %s at %d: %w", prefix, opts.Revision, err)
	}
	res, err := l.run(tx.Bucket(bucketKV).Cursor(), visit)
	if err != nil {
		return storage.ListResult{}, fmt.Errorf("list %s: %w", prefix, err)
	}
	res.Revision = rev
	return res, nil
}

// snapshot fills the lister's overrides so that bbolt's state in tx plus the
// overrides is the state at rev (0: now). Callers hold b.mu shared.
func (b *Backend) snapshot(tx *bbolt.Tx, l *lister, rev int64) (int64, error) {
	cur := b.rev.Load()
	switch {
	case rev > cur:
		return 0, storage.ErrFuture
	case rev != 0 && rev < b.compactRev.Load():
		return 0, storage.ErrCompacted
	}
	l.over = b.ov.under(l.prefix, l.after)
	if rev == 0 || rev == cur {
		return cur, nil
	}
	boltRev := readInt(tx.Bucket(bucketMeta), metaRev)
	old := map[string]*storage.KeyValue{}
	if err := l.rollBack(old, tx.Bucket(bucketLog), rev, boltRev); err != nil {
		return 0, err
	}
	l.rollBackEvents(old, b.pendingSince(rev, boltRev))
	for k, kv := range old {
		l.over[k] = kv
	}
	return rev, nil
}

func (b *Backend) readable(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if b.isClosed() {
		return storage.ErrClosed
	}
	return nil
}

// lister pages through the keys under a prefix, merging the current state
// with overrides that roll keys back to an older revision.
type lister struct {
	prefix string
	after  string
	limit  int64
	over   map[string]*storage.KeyValue // key -> value at the revision; nil: absent
	// legacyUpTo is the last revision whose records may lack a checksum.
	legacyUpTo int64
}

// rollBack scans the bbolt log after rev up to boltRev and records, for
// every key under the prefix that changed since, its state as of rev (nil
// if it did not exist). The first change of a key after rev wins.
func (l *lister) rollBack(old map[string]*storage.KeyValue, logB *bbolt.Bucket, rev, boltRev int64) error {
	c := logB.Cursor()
	for k, v := c.Seek(revKey(rev + 1)); k != nil && keyRev(k) <= boltRev; k, v = c.Next() {
		ev, needsPrev, err := decodeLogRecord(keyRev(k), v, l.legacyUpTo)
		if err == nil && needsPrev && l.wants(ev.KV.Key) {
			err = fillLogPrev(logB, &ev, l.legacyUpTo)
		}
		if err != nil {
			return err
		}
		l.rollBackEvent(old, &ev, true)
	}
	return nil
}

// rollBackEvents does the same for events not yet in bbolt.
func (l *lister) rollBackEvents(old map[string]*storage.KeyValue, events []storage.Event) {
	for i := range events {
		l.rollBackEvent(old, &events[i], false)
	}
}

func (l *lister) rollBackEvent(old map[string]*storage.KeyValue, ev *storage.Event, copyValue bool) {
	if !l.wants(ev.KV.Key) {
		return
	}
	if _, seen := old[ev.KV.Key]; seen {
		return
	}
	if ev.PrevKV == nil {
		old[ev.KV.Key] = nil
		return
	}
	prev := *ev.PrevKV
	if copyValue {
		prev.Value = cloneBytes(prev.Value)
	}
	old[ev.KV.Key] = &prev
}

func (l *lister) wants(key string) bool {
	return strings.HasPrefix(key, l.prefix) && key > l.after
}

// run walks the merged stream, hands each present key to visit until it
// or the limit stops the walk, and counts the keys left after that.
func (l *lister) run(c *bbolt.Cursor, visit func([]byte, storage.KeyValue) (bool, error)) (storage.ListResult, error) {
	var res storage.ListResult
	w := walk{l: l, c: c, extra: l.sortedOverrides()}
	w.k, w.v = l.seek(c)
	visited := int64(0)
	stopped := false
	for {
		key, kv, ok, err := w.next(!stopped)
		if err != nil || !ok {
			return res, err
		}
		if stopped {
			res.More = true
			res.Remaining++
			continue
		}
		visited++
		if stopped, err = visit(key, kv); err != nil {
			return res, err
		}
		stopped = stopped || (l.limit > 0 && visited >= l.limit)
	}
}

// seek positions the cursor at the first key under the prefix after l.after.
func (l *lister) seek(c *bbolt.Cursor) ([]byte, []byte) {
	start := l.prefix
	if l.after >= start {
		start = l.after
	}
	k, v := c.Seek([]byte(start))
	if k != nil && string(k) == l.after {
		k, v = c.Next()
	}
	return k, v
}

// walk merges the cursor with the sorted override keys it does not have.
type walk struct {
	l     *lister
	c     *bbolt.Cursor
	k, v  []byte   // the cursor's current record (k nil past the end)
	extra []string // override keys not yet yielded, sorted
}

// next yields the next key present at the listed revision (aliasing the
// file for a key read from it) and its state, with an empty Key; ok is
// false at the end. With want false it only says that there is one (kv is
// zero).
func (w *walk) next(want bool) (key []byte, kv storage.KeyValue, ok bool, err error) {
	for {
		curOK := w.k != nil && bytes.HasPrefix(w.k, []byte(w.l.prefix))
		switch {
		case !curOK && len(w.extra) == 0:
			return nil, storage.KeyValue{}, false, nil
		case len(w.extra) > 0 && (!curOK || w.extra[0] < string(w.k)):
			k := w.extra[0]
			w.extra = w.extra[1:]
			return w.override(k, *w.l.over[k]) // extra holds only present keys
		}
		k, rec := w.k, w.v
		w.k, w.v = w.c.Next()
		if len(w.extra) > 0 && w.extra[0] == string(k) {
			w.extra = w.extra[1:]
		}
		if ov, found := w.l.over[string(k)]; found {
			if ov == nil {
				continue // absent at the listed revision
			}
			return w.override(string(k), *ov)
		}
		if !want {
			return k, storage.KeyValue{}, true, nil
		}
		if kv, err = decodeKV("", rec, w.l.legacyUpTo); err != nil {
			return nil, kv, false, fmt.Errorf("key %s: %w", k, err)
		}
		return k, kv, true, nil
	}
}

func (w *walk) override(key string, kv storage.KeyValue) ([]byte, storage.KeyValue, bool, error) {
	kv.Key = ""
	return []byte(key), kv, true, nil
}

func (l *lister) sortedOverrides() []string {
	keys := make([]string, 0, len(l.over))
	for key, kv := range l.over {
		if kv != nil {
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	return keys
}
