package bolt

import (
	"context"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/batchlet/batchlet/storage"
)

type opKind uint8

const (
	opCreate opKind = iota
	opUpdate
	opDelete
)

// request is one queued write and the channel its result goes to.
type request struct {
	op          opKind
	key         string
	value       []byte
	expectedRev int64
	done        chan result
}

type result struct {
	rev  int64
	prev storage.KeyValue // the deleted value, for Delete
	err  error
}

// Create stores value under a new key; storage.ErrExists if present.
func (b *Backend) Create(ctx context.Context, key string, value []byte) (int64, error) {
	res := b.submit(ctx, &request{op: opCreate, key: key, value: value})
	return res.rev, res.err
}

// Update replaces the value when the key's ModRevision is expectedRev (0:
// unconditionally).
func (b *Backend) Update(ctx context.Context, key string, value []byte, expectedRev int64) (int64, error) {
	res := b.submit(ctx, &request{op: opUpdate, key: key, value: value, expectedRev: expectedRev})
	return res.rev, res.err
}

// Delete removes the key when its ModRevision is expectedRev (0:
// unconditionally) and returns the revision of the delete and the last value.
func (b *Backend) Delete(ctx context.Context, key string, expectedRev int64) (int64, storage.KeyValue, error) {
	res := b.submit(ctx, &request{op: opDelete, key: key, expectedRev: expectedRev})
	return res.rev, res.prev, res.err
}

// submit queues the write and waits for its commit. Once queued, a write is
// applied even if ctx ends, so the caller always learns its outcome.
func (b *Backend) submit(ctx context.Context, r *request) result {
	if err := ctx.Err(); err != nil {
		return result{err: err}
	}
	if r.value != nil {
		r.value = cloneBytes(r.value) // the caller may reuse its buffer
	}
	r.done = make(chan result, 1)
	b.closeMu.RLock()
	if b.closed {
		b.closeMu.RUnlock()
		return result{err: storage.ErrClosed}
	}
	b.reqs <- r
	b.closeMu.RUnlock()
	return <-r.done
}

// writer commits queued writes in batches until the queue is closed.
func (b *Backend) writer() {
	defer close(b.writerD)
	batch := make([]*request, 0, b.opts.MaxBatch)
	for r := range b.reqs {
		batch = append(batch[:0], r)
		batch = b.drain(batch)
		b.commit(batch)
	}
}

// drain adds whatever is already queued, up to MaxBatch.
func (b *Backend) drain(batch []*request) []*request {
	for len(batch) < b.opts.MaxBatch {
		select {
		case r, ok := <-b.reqs:
			if !ok {
				return batch
			}
			batch = append(batch, r)
		default:
			return batch
		}
	}
	return batch
}

// commit applies the batch in one transaction, then publishes the events
// and answers every caller.
func (b *Backend) commit(batch []*request) {
	results := make([]result, len(batch))
	events := make([]storage.Event, 0, len(batch))
	rev := b.rev.Load()
	err := b.db.Update(func(tx *bbolt.Tx) error {
		events = events[:0]
		a := applier{kv: tx.Bucket(bucketKV), log: tx.Bucket(bucketLog), rev: rev}
		a.log.FillPercent = 1.0 // the log only grows at its end
		for i, r := range batch {
			res, ev, err := a.apply(r)
			if err != nil {
				return err
			}
			results[i] = res
			if ev != nil {
				events = append(events, *ev)
			}
		}
		if a.rev == rev {
			return nil
		}
		rev = a.rev
		return tx.Bucket(bucketMeta).Put(metaRev, revKey(rev))
	})
	b.stats.commits.Add(1)
	if err != nil {
		err = fmt.Errorf("commit %d writes: %w", len(batch), err)
		for i := range results {
			results[i] = result{err: err}
		}
		b.stats.failedCommits.Add(1)
	} else {
		b.rev.Store(rev)
		b.stats.record(len(batch), len(events))
		b.hub.Publish(events)
	}
	for i, r := range batch {
		r.done <- results[i]
	}
}

// applier applies single writes inside a transaction; later writes see
// earlier ones.
type applier struct {
	kv, log *bbolt.Bucket
	rev     int64
}

func (a *applier) apply(r *request) (result, *storage.Event, error) {
	key := []byte(r.key)
	var prev *storage.KeyValue
	if rec := a.kv.Get(key); rec != nil {
		kv, err := decodeKV(r.key, rec)
		if err != nil {
			return result{}, nil, err
		}
		kv.Value = cloneBytes(kv.Value)
		prev = &kv
	}
	if err := precondition(r, prev); err != nil {
		return result{err: err}, nil, nil
	}
	a.rev++
	ev := &storage.Event{KV: storage.KeyValue{Key: r.key, Value: r.value, CreateRevision: a.rev, ModRevision: a.rev}}
	switch r.op {
	case opCreate:
		ev.Type = storage.EventCreated
	case opUpdate:
		ev.Type = storage.EventUpdated
		ev.KV.CreateRevision = prev.CreateRevision
		ev.PrevKV = prev
	case opDelete:
		ev.Type = storage.EventDeleted
		ev.KV = *prev
		ev.KV.ModRevision = a.rev
		ev.PrevKV = prev
	}
	if err := a.write(key, ev); err != nil {
		return result{}, nil, err
	}
	res := result{rev: a.rev}
	if r.op == opDelete {
		res.prev = *prev
	}
	return res, ev, nil
}

// write stores the key and its log entry. bbolt keeps references to the
// values until the commit, so every record gets its own buffer.
func (a *applier) write(key []byte, ev *storage.Event) error {
	if ev.Type == storage.EventDeleted {
		if err := a.kv.Delete(key); err != nil {
			return fmt.Errorf("delete %s: %w", ev.KV.Key, err)
		}
	} else {
		rec := encodeKV(make([]byte, 0, len(ev.KV.Value)+20), ev.KV.CreateRevision, ev.KV.ModRevision, ev.KV.Value)
		if err := a.kv.Put(key, rec); err != nil {
			return fmt.Errorf("put %s: %w", ev.KV.Key, err)
		}
	}
	rec := encodeEvent(make([]byte, 0, eventSize(ev)), ev)
	if err := a.log.Put(revKey(a.rev), rec); err != nil {
		return fmt.Errorf("append log %d: %w", a.rev, err)
	}
	return nil
}

// precondition checks a write against the key's current value (nil when
// absent).
func precondition(r *request, cur *storage.KeyValue) error {
	if r.op == opCreate {
		if cur != nil {
			return storage.ErrExists
		}
		return nil
	}
	if cur == nil {
		return storage.ErrNotFound
	}
	if r.expectedRev != 0 && cur.ModRevision != r.expectedRev {
		return storage.ErrConflict
	}
	return nil
}
