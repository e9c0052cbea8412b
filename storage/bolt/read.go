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
	var kv storage.KeyValue
	err := b.db.View(func(tx *bbolt.Tx) error {
		rec := tx.Bucket(bucketKV).Get([]byte(key))
		if rec == nil {
			return storage.ErrNotFound
		}
		var err error
		kv, err = decodeKV(key, rec)
		kv.Value = cloneBytes(kv.Value)
		return err
	})
	b.stats.reads.Add(1)
	return kv, mapErr(err)
}

// List returns the keys under prefix in key order, as of opts.Revision when
// set (served from the log while it reaches back that far).
func (b *Backend) List(ctx context.Context, prefix string, opts storage.ListOptions) (storage.ListResult, error) {
	if err := b.readable(ctx); err != nil {
		return storage.ListResult{}, err
	}
	var res storage.ListResult
	err := b.db.View(func(tx *bbolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		cur, compact := readInt(meta, metaRev), readInt(meta, metaCompct)
		l := lister{prefix: prefix, after: opts.After, limit: opts.Limit}
		switch {
		case opts.Revision > cur:
			return storage.ErrFuture
		case opts.Revision != 0 && opts.Revision < compact:
			return storage.ErrCompacted
		case opts.Revision != 0 && opts.Revision < cur:
			ov, err := l.overrides(tx.Bucket(bucketLog), opts.Revision)
			if err != nil {
				return err
			}
			l.over = ov
			cur = opts.Revision
		}
		var err error
		res, err = l.run(tx.Bucket(bucketKV).Cursor())
		res.Revision = cur
		return err
	})
	b.stats.reads.Add(1)
	if err != nil {
		return storage.ListResult{}, fmt.Errorf("list %s: %w", prefix, mapErr(err))
	}
	return res, nil
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

// overrides scans the log after rev and records, for every key under the
// prefix that changed since, its state as of rev (nil if it did not exist).
func (l *lister) overrides(logB *bbolt.Bucket, rev int64) (map[string]*storage.KeyValue, error) {
	over := map[string]*storage.KeyValue{}
	c := logB.Cursor()
	for k, v := c.Seek(revKey(rev + 1)); k != nil; k, v = c.Next() {
		ev, err := decodeEvent(keyRev(k), v)
		if err != nil {
			return nil, err
		}
		if !l.wants(ev.KV.Key) {
			continue
		}
		if _, seen := over[ev.KV.Key]; seen {
			continue
		}
		if ev.PrevKV == nil {
			over[ev.KV.Key] = nil
			continue
		}
		prev := *ev.PrevKV
		prev.Value = cloneBytes(prev.Value)
		over[ev.KV.Key] = &prev
	}
	return over, nil
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
