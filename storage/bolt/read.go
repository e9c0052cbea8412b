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
	if err := b.readable(ctx); err != nil {
		return storage.KeyValue{}, err
	}
	b.stats.reads.Add(1)
	b.mu.RLock()
	kv, found := b.ov.get(key)
	b.mu.RUnlock()
	if found {
		if kv == nil {
			return storage.KeyValue{}, storage.ErrNotFound
		}
		out := *kv
		out.Value = cloneBytes(out.Value)
		return out, nil
	}
	var out storage.KeyValue
	err := b.db.View(func(tx *bbolt.Tx) error {
		rec := tx.Bucket(bucketKV).Get([]byte(key))
		if rec == nil {
			return storage.ErrNotFound
		}
		var err error
		out, err = decodeKV(key, rec)
		out.Value = cloneBytes(out.Value)
		return err
	})
	return out, mapErr(err)
}

// List returns the keys under prefix in key order, as of opts.Revision when
// set (served from the log while it reaches back that far).
func (b *Backend) List(ctx context.Context, prefix string, opts storage.ListOptions) (storage.ListResult, error) {
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
	l := lister{prefix: prefix, after: opts.After, limit: opts.Limit}
	rev, err := b.snapshot(tx, &l, opts.Revision)
	b.mu.RUnlock()
	if err != nil {
		return storage.ListResult{}, fmt.Errorf("list %s at %d: %w", prefix, opts.Revision, err)
	}
	res, err := l.run(tx.Bucket(bucketKV).Cursor())
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
}

// rollBack scans the bbolt log after rev up to boltRev and records, for
// every key under the prefix that changed since, its state as of rev (nil
// if it did not exist). The first change of a key after rev wins.
func (l *lister) rollBack(old map[string]*storage.KeyValue, logB *bbolt.Bucket, rev, boltRev int64) error {
	c := logB.Cursor()
	for k, v := c.Seek(revKey(rev + 1)); k != nil && keyRev(k) <= boltRev; k, v = c.Next() {
		ev, err := decodeEvent(keyRev(k), v)
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

// run walks the merged stream, fills one page and counts the rest.
func (l *lister) run(c *bbolt.Cursor) (storage.ListResult, error) {
	res := storage.ListResult{Items: []storage.KeyValue{}}
	extra := l.sortedOverrides()
	k, v := l.seek(c)
	for {
		key, kv, ok, err := l.next(c, &k, &v, &extra)
		if err != nil || !ok {
			return res, err
		}
		if kv == nil {
			continue // absent at the requested revision
		}
		if l.limit > 0 && int64(len(res.Items)) >= l.limit {
			res.More = true
			res.Remaining++
			continue
		}
		item := *kv
		item.Key = key
		item.Value = cloneBytes(item.Value)
		res.Items = append(res.Items, item)
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

// next yields the next key of the merge of the cursor and the sorted
// override keys that the cursor does not have. A nil KeyValue means absent.
func (l *lister) next(c *bbolt.Cursor, k, v *[]byte, extra *[]string) (string, *storage.KeyValue, bool, error) {
	curOK := *k != nil && bytes.HasPrefix(*k, []byte(l.prefix))
	switch {
	case !curOK && len(*extra) == 0:
		return "", nil, false, nil
	case len(*extra) > 0 && (!curOK || (*extra)[0] < string(*k)):
		key := (*extra)[0]
		*extra = (*extra)[1:]
		return key, l.over[key], true, nil
	}
	key := string(*k)
	rec := *v
	*k, *v = c.Next()
	if len(*extra) > 0 && (*extra)[0] == key {
		*extra = (*extra)[1:]
	}
	if ov, ok := l.over[key]; ok {
		return key, ov, true, nil
	}
	kv, err := decodeKV(key, rec)
	if err != nil {
		return "", nil, false, err
	}
	return key, &kv, true, nil
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
